// Elementwise kernels on the storage types beyond float32 (float16, bfloat16,
// int8, int32): built by LLVM (scalar and vectorized) and checked bit for bit
// against the reference interpreter.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "compiler/codegen/build.h"
#include "compiler/codegen/interpreter.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/ir/op.h"
#include "compiler/lower/lower.h"
#include "runtime/module.h"

namespace tessera {
namespace {

// Random valid bit patterns of `t`: small finite floats, small integers.
std::vector<uint8_t> random_bytes(DType t, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> real(-4.0f, 4.0f);
  std::vector<uint8_t> out(n * t.storage_bytes());
  for (int64_t i = 0; i < n; ++i) {
    float f = real(rng);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if (t == DType::f16()) {
      _Float16 h = static_cast<_Float16>(f);
      std::memcpy(&out[i * 2], &h, 2);
    } else if (t == DType::bf16()) {
      uint16_t b = static_cast<uint16_t>(bits >> 16);
      std::memcpy(&out[i * 2], &b, 2);
    } else if (t == DType::i8()) {
      out[i] = static_cast<uint8_t>(static_cast<int8_t>(f * 10));
    } else {
      int32_t v = static_cast<int32_t>(f * 1000);
      std::memcpy(&out[i * 4], &v, 4);
    }
  }
  return out;
}

class StorageTypes : public ::testing::TestWithParam<DType> {};

TEST_P(StorageTypes, ElementwiseKernelsMatchTheInterpreterBitForBit) {
  const DType t = GetParam();
  const int64_t m = 5, n = 37;
  Tensor a = placeholder({m, n}, t, "A");
  Tensor b = placeholder({m, n}, t, "B");
  // max(a, b) * 2 - a: exercises compare, select, multiply and subtract.
  Tensor c = compute(
      {m, n},
      [&](const Vars& i) {
        Expr x = read(a, {i[0], i[1]}), y = read(b, {i[0], i[1]});
        return max(x, y) * make_const(t, 2) - x;
      },
      "C");
  auto dag = std::make_shared<const ComputeDAG>(ComputeDAG::make({a, b, c}).value());
  for (bool vectorized : {false, true}) {
    State s(dag);
    if (vectorized) {
      ASSERT_TRUE(s.split(2, 1, {8}).is_ok());
      ASSERT_TRUE(s.vectorize(2, 2).is_ok());
    }
    auto in_a = random_bytes(t, m * n, 1), in_b = random_bytes(t, m * n, 2);
    std::vector<uint8_t> want(m * n * t.storage_bytes()), got(want.size());
    auto func = lower(s, "kernel");
    ASSERT_TRUE(func.is_ok()) << func.status().to_string();
    ASSERT_TRUE(interpret(*func, {in_a.data(), in_b.data(), want.data()}).is_ok());
    auto lib = build(s, host_target(), "kernel");
    ASSERT_TRUE(lib.is_ok()) << lib.status().to_string();
    auto mod = runtime::Module::load_from_bytes(lib->bytes, "/tmp");
    ASSERT_TRUE(mod.is_ok());
    auto fn = mod->get_kernel("kernel");
    ASSERT_TRUE(fn.is_ok());
    void* args[] = {in_a.data(), in_b.data(), got.data()};
    ASSERT_EQ((*fn)(args), 0);
    EXPECT_EQ(got, want) << t.to_string() << (vectorized ? " vectorized" : " scalar");
  }
}

INSTANTIATE_TEST_SUITE_P(Types, StorageTypes, ::testing::Values(DType::f16(), DType::bf16(), DType::i8(), DType::i32()),
                         [](const auto& info) { return info.param.to_string(); });

}  // namespace
}  // namespace tessera
