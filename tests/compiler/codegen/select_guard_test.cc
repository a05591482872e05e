// Loads in a Select's branches: both branches are computed, so a load of the
// branch not taken (padding's read above the first row) must not leave its
// buffer, and what it reads must not trap. A condition the same for every
// lane of a vector guards by address (no lane mask); one per lane, by mask.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "compiler/codegen/build.h"
#include "compiler/codegen/interpreter.h"
#include "compiler/codegen/llvm_codegen.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/ir/op.h"
#include "compiler/lower/lower.h"
#include "runtime/module.h"

namespace tessera {
namespace {

// out[i, j] = x[i - 1, j - shift] inside x, else 0 (a zero pad of one row on
// top and `shift` columns on the left); the columns vectorized by 16.
State padded_copy(int64_t rows, int64_t cols, int64_t shift) {
  Tensor x = placeholder({rows, cols}, DType::f32(), "X");
  Tensor out = compute(
      {rows + 1, cols + shift},
      [&](const Vars& i) {
        Expr inside = i[0] >= make_int(1);
        if (shift > 0) inside = inside && i[1] >= make_int(shift);
        return select(inside, read(x, {i[0] - make_int(1), i[1] - make_int(shift)}), make_float(0.0, DType::f32()));
      },
      "Out");
  State s(std::make_shared<const ComputeDAG>(ComputeDAG::make({x, out}).value()));
  EXPECT_TRUE(s.split(1, 1, {16}).is_ok());
  EXPECT_TRUE(s.vectorize(1, 2).is_ok());
  return s;
}

// Runs the built kernel and the interpreter on the same arguments.
template <typename T>
void expect_native_matches_interpreter(const State& s, std::vector<std::vector<T>> args) {
  auto func = lower(s, "kernel");
  ASSERT_TRUE(func.is_ok()) << func.status().to_string();
  std::vector<std::vector<T>> want = args;
  std::vector<void*> want_ptrs, got_ptrs;
  for (auto& a : want) want_ptrs.push_back(a.data());
  for (auto& a : args) got_ptrs.push_back(a.data());
  ASSERT_TRUE(interpret(*func, want_ptrs).is_ok());
  auto lib = build(s, host_target(), "kernel");
  ASSERT_TRUE(lib.is_ok()) << lib.status().to_string();
  auto mod = runtime::Module::load_from_bytes(lib->bytes, "/tmp");
  ASSERT_TRUE(mod.is_ok()) << mod.status().to_string();
  auto fn = mod->get_kernel("kernel");
  ASSERT_TRUE(fn.is_ok());
  ASSERT_EQ((*fn)(got_ptrs.data()), 0);
  EXPECT_EQ(args.back(), want.back());
}

std::vector<float> iota_floats(int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(i + 1);
  return v;
}

TEST(SelectGuard, AConditionTheSameForEveryLaneGuardsTheAddressNotTheLanes) {
  const State s = padded_copy(5, 32, 0);
  auto func = lower(s, "kernel");
  ASSERT_TRUE(func.is_ok()) << func.status().to_string();
  auto ir = emit_llvm_ir({*func}, host_target());
  ASSERT_TRUE(ir.is_ok()) << ir.status().to_string();
  EXPECT_EQ(ir->find("llvm.masked.load"), std::string::npos) << *ir;
  expect_native_matches_interpreter<float>(s, {iota_floats(5 * 32), std::vector<float>(6 * 32, -1.0f)});
}

TEST(SelectGuard, AConditionPerLaneMasksTheLanesOutside) {
  // The left pad of 3 columns splits a vector: lanes 0-2 of the first one
  // would read before X's row.
  const State s = padded_copy(4, 29, 3);
  expect_native_matches_interpreter<float>(s, {iota_floats(4 * 29), std::vector<float>(5 * 32, -1.0f)});
}

TEST(SelectGuard, IntegerDivisionInABranchDoesNotTrapOnTheLanesItDrops) {
  // q[i] = b[i] != 0 ? a[i] / b[i] : 0, vectorized: the division of a lane
  // whose b is 0 is computed and dropped, and must not raise SIGFPE.
  const int64_t n = 32;
  Tensor a = placeholder({n}, DType::i32(), "A");
  Tensor b = placeholder({n}, DType::i32(), "B");
  Tensor q = compute(
      {n},
      [&](const Vars& i) {
        Expr bi = read(b, {i[0]});
        return select(bi != make_const(DType::i32(), 0), read(a, {i[0]}) / bi, make_const(DType::i32(), 0));
      },
      "Q");
  State s(std::make_shared<const ComputeDAG>(ComputeDAG::make({a, b, q}).value()));
  ASSERT_TRUE(s.split(2, 0, {16}).is_ok());
  ASSERT_TRUE(s.vectorize(2, 1).is_ok());
  std::vector<int32_t> va(n), vb(n);
  for (int64_t i = 0; i < n; ++i) {
    va[i] = static_cast<int32_t>(7 * i - 50);
    vb[i] = i % 3 == 0 ? 0 : static_cast<int32_t>(i % 5 - 2);
  }
  expect_native_matches_interpreter<int32_t>(s, {va, vb, std::vector<int32_t>(n, -1)});
}

}  // namespace
}  // namespace tessera
