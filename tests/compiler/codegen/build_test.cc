#include "compiler/codegen/build.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "compiler/codegen/llvm_codegen.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/ir/op.h"
#include "compiler/lower/lower.h"
#include "runtime/module.h"
#include "runtime/ndarray.h"
#include "runtime/thread_pool.h"
#include "tests/compiler/codegen/run_native.h"

namespace tessera {
namespace {

std::shared_ptr<const ComputeDAG> matmul_dag(int64_t m, int64_t n, int64_t k) {
  Tensor a = placeholder({m, k}, DType::f32(), "A");
  Tensor b = placeholder({k, n}, DType::f32(), "B");
  IterVar r = reduce_axis(k, "k");
  Tensor c = compute(
      {m, n},
      [&](const Vars& i) {
        return sum(read(a, {i[0], r->var}) * read(b, {r->var, i[1]}), {r});
      },
      "C");
  return std::make_shared<const ComputeDAG>(ComputeDAG::make({a, b, c}).value());
}

// Runs a built matmul and compares it with plain loops.
void check_matmul(const State& s, int64_t m, int64_t n, int64_t k) {
  auto lib = build(s, host_target(), "mm");
  ASSERT_TRUE(lib.is_ok()) << lib.status().to_string();
  auto mod = runtime::Module::load_from_bytes(lib->bytes, "/tmp");
  ASSERT_TRUE(mod.is_ok()) << mod.status().to_string();
  auto fn = mod->get_kernel("mm");
  ASSERT_TRUE(fn.is_ok());
  auto a = runtime::NDArray::create({m, k}, DType::f32()).value();
  auto b = runtime::NDArray::create({k, n}, DType::f32()).value();
  auto c = runtime::NDArray::create({m, n}, DType::f32()).value();
  a.fill_random(1);
  b.fill_random(2);
  void* args[] = {a.raw_data(), b.raw_data(), c.raw_data()};
  runtime::ThreadPool pool(2);
  runtime::ParallelScope scope(&pool);
  ASSERT_EQ((*fn)(args), 0);
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  const float* pc = c.data<float>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0;
      for (int64_t x = 0; x < k; ++x) ref += double(pa[i * k + x]) * pb[x * n + j];
      ASSERT_NEAR(pc[i * n + j], ref, 1e-4 * (1 + std::fabs(ref))) << i << "," << j;
    }
}

TEST(BuildKernel, DefaultScheduleMatchesReference) {
  check_matmul(State(matmul_dag(7, 13, 5)), 7, 13, 5);
}

// The library exports each kernel's argument table (runtime/c_abi.h), which
// the loader checks a package's calls against.
TEST(BuildKernel, ExportsItsArgumentsCountAndBytes) {
  auto lib = build(State(matmul_dag(7, 13, 5)), host_target(), "mm");
  ASSERT_TRUE(lib.is_ok()) << lib.status().to_string();
  auto mod = runtime::Module::load_from_bytes(lib->bytes, "/tmp");
  ASSERT_TRUE(mod.is_ok()) << mod.status().to_string();
  const int64_t* table = mod->kernel_arguments("mm");
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(std::vector<int64_t>(table, table + 4), (std::vector<int64_t>{3, 7 * 5 * 4, 5 * 13 * 4, 7 * 13 * 4}));
  EXPECT_EQ(mod->kernel_arguments("no_such_kernel"), nullptr);
}

TEST(BuildKernel, TiledParallelVectorizedMatchesReference) {
  const int64_t m = 97, n = 70, k = 33;
  State s(matmul_dag(m, n, k));
  int C = s.stage_index("C");
  ASSERT_TRUE(s.cache_write(C).is_ok());
  int CL = s.stage_index("C.local");
  C = s.stage_index("C");
  ASSERT_TRUE(s.tile(C, {0, 1}, {{4}, {16}}).is_ok());
  ASSERT_TRUE(s.compute_at(CL, C, 1).is_ok());
  ASSERT_TRUE(s.split(CL, 0, {4}).is_ok());
  ASSERT_TRUE(s.split(CL, 2, {16}).is_ok());
  ASSERT_TRUE(s.reorder(CL, {0, 2, 4, 1, 3}).is_ok());
  ASSERT_TRUE(s.vectorize(CL, 4).is_ok());
  ASSERT_TRUE(s.unroll(CL, 3).is_ok());
  ASSERT_TRUE(s.vectorize(C, 3).is_ok());
  ASSERT_TRUE(s.parallel(C, 0).is_ok());
  check_matmul(s, m, n, k);
}

// Y[i] = X[i / 2 + i % 2 * 32] interleaves X's two halves, Y[i] = X[i / 2]
// repeats each element: vectorized, each lane's index is a constant offset
// from the vector's first, in one or two contiguous runs. Each run is one
// dense load and the lanes one shuffle (they were 16 scalar loads a vector),
// and the kernel computes what the loops say.
TEST(BuildKernel, InterleavedAndRepeatedLanesAreDenseLoadsAndAShuffle) {
  runtime::ThreadPool pool(1);
  auto check = [&](const std::function<Expr(const Expr&)>& index, int (*lane)(int), const char* what) {
    Tensor x = placeholder({64}, DType::f32(), "X");
    Tensor y = compute(
        {64}, [&](const Vars& i) { return read(x, {index(i[0])}); }, "Y");
    State s(std::make_shared<const ComputeDAG>(ComputeDAG::make({x, y}).value()));
    const int stage = s.stage_index("Y");
    ASSERT_TRUE(s.split(stage, 0, {16}).is_ok());
    ASSERT_TRUE(s.vectorize(stage, 1).is_ok());
    auto f = lower(s, "kernel");
    ASSERT_TRUE(f.is_ok()) << f.status().to_string();
    auto ir = emit_llvm_ir({*f}, host_target());
    ASSERT_TRUE(ir.is_ok()) << ir.status().to_string();
    EXPECT_EQ(ir->find("load float"), std::string::npos) << what << ":\n" << *ir;  // no lane loaded alone
    std::vector<float> in(64);
    for (int i = 0; i < 64; ++i) in[i] = static_cast<float>(i * 3 + 1);
    auto got = test::run_native(s, {in}, pool);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    for (int i = 0; i < 64; ++i) EXPECT_EQ((*got)[i], in[lane(i)]) << what << ", lane " << i;
  };
  check([](const Expr& v) { return v / make_int(2) + v % make_int(2) * make_int(32); },
        [](int i) { return i / 2 + i % 2 * 32; }, "interleaved halves");
  check([](const Expr& v) { return v / make_int(2); }, [](int i) { return i / 2; }, "repeated elements");
}

TEST(BuildKernel, Aarch64ObjectEmits) {
  auto target = Target::parse("llvm -mtriple=aarch64-linux-gnu -mattr=+neon");
  ASSERT_TRUE(target.is_ok()) << target.status().to_string();
  auto func = lower(State(matmul_dag(16, 16, 16)), "mm");
  ASSERT_TRUE(func.is_ok());
  auto obj = emit_object({*func}, *target);
  ASSERT_TRUE(obj.is_ok()) << obj.status().to_string();
  EXPECT_EQ(obj->substr(1, 3), "ELF");
}

TEST(Target, UnknownCpuIsAClearError) {
  auto t = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=notacpu");
  ASSERT_FALSE(t.is_ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kTargetError);
  EXPECT_NE(t.status().message().find("notacpu"), std::string::npos);
}

TEST(Target, GarbageIsAClearError) {
  EXPECT_EQ(Target::parse("cuda").status().code(), ErrorCode::kTargetError);
  EXPECT_EQ(Target::parse("llvm -mtriple=sparc-sun-solaris").status().code(), ErrorCode::kTargetError);
  EXPECT_EQ(Target::parse("llvm -frobnicate=1").status().code(), ErrorCode::kTargetError);
}

TEST(Target, RoundTripsThroughItsString) {
  auto t = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512 -num-cores=8");
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ(t->vector_bits, 512);
  auto again = Target::parse(t->to_string());
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again->to_string(), t->to_string());
}

}  // namespace
}  // namespace tessera
