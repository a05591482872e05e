// Transposes in registers (llvm_transpose.cc): the generic schedule's
// transpose tiles, built natively, give the exact transpose for axes whole
// tiles divide and axes they do not, alone and with elementwise work; the
// assembly shuffles whole rows instead of loading a lane at a time.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/codegen/llvm_codegen.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/ir/op.h"
#include "compiler/lower/lower.h"
#include "compiler/space/choose/generic_schedule.h"
#include "tests/compiler/codegen/int8_test_util.h"
#include "tests/compiler/codegen/run_native.h"

namespace tessera {
namespace {

using test::count;

// y[c, r] = x[r, c] * scale + z[c, r] (scale 1 and no z: the plain
// transpose).
std::shared_ptr<const ComputeDAG> transpose_dag(int64_t rows, int64_t cols, bool with_elementwise) {
  Tensor x = placeholder({rows, cols}, DType::f32(), "X");
  Tensor z = placeholder({cols, rows}, DType::f32(), "Z");
  Tensor y = compute(
      {cols, rows},
      [&](const Vars& i) {
        const Expr v = read(x, {i[1], i[0]});
        return with_elementwise ? v * make_const(DType::f32(), 3.0) + read(z, {i[0], i[1]}) : v;
      },
      "Y", OpPattern::kInjective);
  std::vector<Tensor> args = {x};
  if (with_elementwise) args.push_back(z);
  args.push_back(y);
  return std::make_shared<const ComputeDAG>(ComputeDAG::make(args).value());
}

struct Shape {
  int64_t rows, cols;
  bool with_elementwise;
};

void PrintTo(const Shape& s, std::ostream* os) {
  *os << s.rows << "x" << s.cols << (s.with_elementwise ? "_elementwise" : "");
}

class TransposeTile : public ::testing::TestWithParam<Shape> {};

TEST_P(TransposeTile, BuiltNativelyIsTheExactTranspose) {
  const Shape p = GetParam();
  auto dag = transpose_dag(p.rows, p.cols, p.with_elementwise);
  auto state = generic_schedule(dag, host_target());
  ASSERT_TRUE(state.is_ok()) << state.status().to_string();
  const auto inputs = test::random_inputs(*dag, 7);
  runtime::ThreadPool pool(2);
  auto got = test::run_native(*state, inputs, pool);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  ASSERT_EQ(got->size(), static_cast<size_t>(p.rows * p.cols));
  for (int64_t c = 0; c < p.cols; ++c)
    for (int64_t r = 0; r < p.rows; ++r) {
      const size_t out = static_cast<size_t>(c * p.rows + r);
      const float moved = inputs[0][static_cast<size_t>(r * p.cols + c)];
      if (!p.with_elementwise) {
        ASSERT_EQ((*got)[out], moved) << "y[" << c << ", " << r << "] of " << state->to_string();
        continue;
      }
      // x * 3 + z may be one fused multiply-add: a rounding apart.
      const float want = moved * 3.0f + inputs[1][out];
      ASSERT_NEAR((*got)[out], want, 1e-6f * (1.0f + std::abs(want))) << "y[" << c << ", " << r << "]";
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, TransposeTile,
                         ::testing::Values(Shape{16, 16, false}, Shape{64, 48, false}, Shape{97, 257, false},
                                           Shape{1024, 1000, false}, Shape{33, 130, false}, Shape{256, 200, true},
                                           Shape{97, 257, true}));

// Zen 4 whatever this machine is: the 1024 x 1000 transpose's whole tiles
// are 16 rows of 16 floats shuffled in zmm registers (vshuff64x2,
// vunpcklpd, vpermt2ps and kin);
// without the tile, each strided vector is 64 scalar loads (vinsertps).
TEST(TransposeTileAssembly, WholeTilesAreShuffledInRegisters) {
  auto zen4 = parse_target("llvm -mtriple=x86_64-linux-gnu -mcpu=znver4");
  ASSERT_TRUE(zen4.is_ok());
  auto state = generic_schedule(transpose_dag(1024, 1000, false), *zen4);
  ASSERT_TRUE(state.is_ok()) << state.status().to_string();
  auto f = lower(*state, "kernel");
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  auto text = emit_assembly({*f}, *zen4);
  ASSERT_TRUE(text.is_ok()) << text.status().to_string();
  const int shuffles =
      count(*text, "vperm") + count(*text, "vunpck") + count(*text, "vshuf") + count(*text, "vmovsldup");
  EXPECT_GE(shuffles, 64) << *text;
  // The last tile (1000 = 62 x 16 + 8) keeps its lane-by-lane loads: only
  // its code has inserts.
  EXPECT_LT(count(*text, "vinsertps"), shuffles) << *text;
}

}  // namespace
}  // namespace tessera
