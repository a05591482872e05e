// The integer depthwise convolution (ops::depthwise_conv2d_nhwc_u8s8)
// through the whole kernel path: under the NHWC depthwise template's
// fallback and under random schedules, interpreted and built by LLVM for
// this machine, equal to the definition bit for bit (the float32 products
// are exact), padding reading the pad value; past the exact float window,
// in int32; with VNNI turned off the same result.
#include <gtest/gtest.h>

#include <random>

#include "compiler/ops/conv.h"
#include "compiler/ops/op_spec.h"
#include "compiler/space/knob/templates.h"
#include "tests/compiler/codegen/int8_test_util.h"
#include "tests/compiler/codegen/run_native.h"
#include "tests/compiler/ops/op_test_util.h"
#include "tests/compiler/schedule/random_steps.h"

namespace tessera {
namespace {

using test::as_words;
using test::bytes_storage;

struct Shape {
  int64_t c, h, w, multiplier, r, s, stride, pad, pad_value;
  int64_t k() const { return c * multiplier; }
};

// An NHWC uint8 input, R x S x 1 x K int8 weights and their depthwise
// convolution in int32 (padding reads the pad value).
struct Problem {
  Shape shape;
  std::vector<uint8_t> x, w;  // w holds the int8 bytes
  std::vector<int32_t> out;
};

Problem random_problem(const Shape& sh, uint32_t seed, bool extremes_only = false) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  // The extremes appear often: 255 x -128 is the largest product.
  auto draw = [&](int lo, int hi) {
    const int r = byte(rng);
    if (extremes_only) return r < 128 ? lo : hi;
    return r < 40 ? lo : r < 80 ? hi : lo + byte(rng) % (hi - lo + 1);
  };
  Problem p{sh,
            std::vector<uint8_t>(static_cast<size_t>(sh.h * sh.w * sh.c)),
            std::vector<uint8_t>(static_cast<size_t>(sh.r * sh.s * sh.k())),
            {}};
  for (auto& v : p.x) v = static_cast<uint8_t>(extremes_only ? 255 : draw(0, 255));
  for (auto& v : p.w) v = static_cast<uint8_t>(static_cast<int8_t>(extremes_only ? -128 : draw(-128, 127)));
  const int64_t oh = (sh.h + 2 * sh.pad - sh.r) / sh.stride + 1, ow = (sh.w + 2 * sh.pad - sh.s) / sh.stride + 1;
  for (int64_t y = 0; y < oh; ++y)
    for (int64_t x = 0; x < ow; ++x)
      for (int64_t k = 0; k < sh.k(); ++k) {
        int64_t sum = 0;
        for (int64_t r = 0; r < sh.r; ++r)
          for (int64_t s = 0; s < sh.s; ++s) {
            const int64_t iy = y * sh.stride + r - sh.pad, ix = x * sh.stride + s - sh.pad;
            const bool inside = iy >= 0 && iy < sh.h && ix >= 0 && ix < sh.w;
            const int64_t c = k / sh.multiplier;
            const int64_t v = inside ? p.x[static_cast<size_t>((iy * sh.w + ix) * sh.c + c)] : sh.pad_value;
            sum += v * static_cast<int8_t>(p.w[static_cast<size_t>((r * sh.s + s) * sh.k() + k)]);
          }
        p.out.push_back(static_cast<int32_t>(sum));
      }
  return p;
}

std::shared_ptr<const ComputeDAG> dag_of(const Shape& s) {
  const std::string spec = "depthwise_conv2d_nhwc_u8s8:N=1,C=" + std::to_string(s.c) + ",H=" + std::to_string(s.h) +
                           ",W=" + std::to_string(s.w) + ",R=" + std::to_string(s.r) + ",S=" + std::to_string(s.s) +
                           ",multiplier=" + std::to_string(s.multiplier) + ",stride=" + std::to_string(s.stride) +
                           ",pad=" + std::to_string(s.pad) + ",pad_value=" + std::to_string(s.pad_value);
  auto inst = ops::parse_op_spec(spec);
  EXPECT_TRUE(inst.is_ok()) << inst.status().to_string();
  return inst->dag;
}

State template_fallback(const Shape& s, const Target& target) {
  const KnobTemplate* t = find_template("depthwise_conv2d_nhwc_u8s8");
  EXPECT_NE(t, nullptr);
  auto state = apply_fallback(*t, dag_of(s), target);
  EXPECT_TRUE(state.is_ok()) << state.status().to_string();
  return std::move(state).value();
}

// Interprets and builds `state` for `target` on `p`'s operands; both must
// equal the definition.
void expect_exact(const State& state, const Target& target, const Problem& p) {
  auto interpreted = test::run(state, {bytes_storage(p.x), bytes_storage(p.w)});
  ASSERT_TRUE(interpreted.is_ok()) << interpreted.status().to_string();
  EXPECT_EQ(as_words(*interpreted), p.out) << target.to_string();
  std::vector<uint8_t> x = p.x, w = p.w;
  std::vector<int32_t> out(p.out.size(), -1);
  ASSERT_TRUE(test::run_built(state, target, {x.data(), w.data(), out.data()}).is_ok());
  EXPECT_EQ(out, p.out) << target.to_string();
}

class DepthwiseU8S8 : public ::testing::TestWithParam<Shape> {};

TEST_P(DepthwiseU8S8, TheTemplatesConvolutionEqualsTheDefinitionInterpretedAndBuilt) {
  const Problem p = random_problem(GetParam(), 29);
  std::vector<Target> targets = {host_target()};
  if (targets[0].is_x86()) targets.push_back(test::host_without_vnni());
  for (const Target& target : targets) expect_exact(template_fallback(p.shape, target), target, p);
}

// MobileNet's 3x3 at stride 1 and 2 padded by a mid-range zero point, a
// channel tail (24 = 16 + 8), a multiplier of 2, the largest pad value, and
// a 5x5 window (EfficientNet's).
INSTANTIATE_TEST_SUITE_P(Shapes, DepthwiseU8S8,
                         ::testing::Values(Shape{32, 7, 9, 1, 3, 3, 1, 1, 37}, Shape{24, 8, 8, 1, 3, 3, 2, 1, 128},
                                           Shape{8, 5, 6, 2, 3, 3, 1, 1, 255}, Shape{16, 9, 9, 1, 5, 5, 2, 2, 0}));

// Every product the largest (255 x -128) over a 7x7 window: 49 x 32640, far
// from float32's last exact integer but past any rounding a careless float
// sum would make.
TEST(DepthwiseU8S8, TheLargestSumsOfAWideWindowAreExact) {
  const Problem p = random_problem(Shape{16, 9, 9, 1, 7, 7, 1, 3, 255}, 3, /*extremes_only=*/true);
  EXPECT_EQ(p.out[p.out.size() / 2], 49 * 255 * -128);
  expect_exact(template_fallback(p.shape, host_target()), host_target(), p);
}

// Past 514 taps a float32 sum could round: the window sums in int32.
TEST(DepthwiseU8S8, AWindowPastTheExactFloatSumsInInt32) {
  Tensor x = placeholder({1, 24, 24, 16}, DType::u8(), "X"), w = placeholder({23, 23, 1, 16}, DType::i8(), "W");
  auto small = ops::depthwise_conv2d_nhwc_u8s8(x, placeholder({3, 3, 1, 16}, DType::i8(), "W"));
  auto wide = ops::depthwise_conv2d_nhwc_u8s8(x, w);
  ASSERT_TRUE(small.is_ok() && wide.is_ok());
  ASSERT_EQ(input_tensors(*small).size(), 1u);
  EXPECT_EQ(input_tensors(*small)[0]->dtype, DType::f32());    // the sums, then their cast
  EXPECT_EQ(compute_op(*wide)->pattern, OpPattern::kComplex);  // the sums themselves, in int32
  const Problem p = random_problem(Shape{16, 24, 24, 1, 23, 23, 1, 0, 0}, 5, /*extremes_only=*/true);
  EXPECT_EQ(p.out[0], 529 * 255 * -128);
  expect_exact(State(dag_of(p.shape)), host_target(), p);
}

// Random valid schedules: native code equals the interpreter and the
// definition bit for bit.
TEST(DepthwiseU8S8, RandomSchedulesBuildWhatTheInterpreterComputes) {
  const Problem p = random_problem(Shape{8, 5, 6, 2, 3, 3, 1, 1, 9}, 31);
  runtime::ThreadPool pool(2);
  for (int trial = 0; trial < 12; ++trial) {
    test::RandomScheduler gen(static_cast<uint32_t>(700 + trial * 7919));
    State state = gen.generate(dag_of(p.shape), 4 + trial % 10);
    const std::string steps = steps_to_json(state.steps());
    auto want = test::run(state, {bytes_storage(p.x), bytes_storage(p.w)});
    ASSERT_TRUE(want.is_ok()) << want.status().to_string() << "\nsteps: " << steps;
    ASSERT_EQ(as_words(*want), p.out) << "trial " << trial << "\nsteps: " << steps;
    auto got = test::run_native(state, {bytes_storage(p.x), bytes_storage(p.w)}, pool);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string() << "\nsteps: " << steps;
    ASSERT_EQ(as_words(*got), p.out) << "trial " << trial << "\nsteps: " << steps;
  }
}

TEST(DepthwiseU8S8, OperandsItCannotTakeAreRefused) {
  EXPECT_FALSE(ops::parse_op_spec("depthwise_conv2d_nhwc_u8s8:N=1,C=8,H=4,W=4,R=3,S=3,pad_value=256").is_ok());
  Tensor x = placeholder({1, 4, 4, 8}, DType::u8(), "X");
  auto float_weights = ops::depthwise_conv2d_nhwc_u8s8(x, placeholder({3, 3, 1, 8}, DType::f32(), "W"));
  ASSERT_FALSE(float_weights.is_ok());
  EXPECT_NE(float_weights.status().message().find("int8"), std::string::npos) << float_weights.status().to_string();
  auto not_depthwise = ops::depthwise_conv2d_nhwc_u8s8(x, placeholder({3, 3, 2, 8}, DType::i8(), "W"));
  EXPECT_FALSE(not_depthwise.is_ok());
}

}  // namespace
}  // namespace tessera
