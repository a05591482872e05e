// The aarch64 worker (make worker-aarch64) under qemu-aarch64, registered as
// aarch64-qemu, measures a matmul that tessera_codegen builds for
// `llvm -mtriple=aarch64-linux-gnu -mattr=+neon`, with a reference check.
// Timings under emulation mean nothing; correctness and the protocol do.
#include <cmath>

#include "compiler/codegen/build.h"
#include "compiler/ir/op.h"
#include "compiler/schedule/state.h"
#include "tests/rpc/test_util.h"

namespace tessera::rpc {
namespace {

using namespace testing;  // NOLINT

constexpr int64_t kM = 24, kN = 20, kK = 16;

std::shared_ptr<const ComputeDAG> matmul_dag() {
  Tensor a = placeholder({kM, kK}, DType::f32(), "A");
  Tensor b = placeholder({kK, kN}, DType::f32(), "B");
  IterVar r = reduce_axis(kK, "k");
  Tensor c = compute(
      {kM, kN},
      [&](const Vars& i) {
        return sum(read(a, {i[0], r->var}) * read(b, {r->var, i[1]}), {r});
      },
      "C");
  return std::make_shared<const ComputeDAG>(ComputeDAG::make({a, b, c}).value());
}

// C = A B with the inputs the worker makes: fill_random(seed + i).
std::string matmul_reference(uint64_t seed) {
  auto a = runtime::NDArray::create({kM, kK}, DType::f32()).value();
  auto b = runtime::NDArray::create({kK, kN}, DType::f32()).value();
  a.fill_random(seed);
  b.fill_random(seed + 1);
  std::string out(kM * kN * sizeof(float), '\0');
  float* c = reinterpret_cast<float*>(out.data());
  for (int64_t i = 0; i < kM; ++i)
    for (int64_t j = 0; j < kN; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < kK; ++k) acc += double(a.data<float>()[i * kK + k]) * b.data<float>()[k * kN + j];
      c[i * kN + j] = static_cast<float>(acc);
    }
  return out;
}

bool executable(const std::string& path) {
  return ::access(path.c_str(), X_OK) == 0;
}

TEST(Aarch64Qemu, CrossBuiltKernelMeasuresCorrectlyOnTheEmulatedWorker) {
  const std::string worker = TESSERA_AARCH64_WORKER;
  const std::string qemu = "/usr/bin/qemu-aarch64";
  if (!executable(worker)) GTEST_SKIP() << worker << " is missing: run `make worker-aarch64` first";
  if (!executable(qemu)) GTEST_SKIP() << "qemu-aarch64 is missing (Debian package qemu-user)";

  auto target = Target::parse("llvm -mtriple=aarch64-linux-gnu -mattr=+neon");
  ASSERT_TRUE(target.is_ok()) << target.status().to_string();
  State state(matmul_dag());
  auto lib = build(state, *target, "mm_neon");
  ASSERT_TRUE(lib.is_ok()) << lib.status().to_string();
  // Tiles that do not divide: rows by 7 (a remainder of 3), columns by 8
  // vectorized (20 = 2 x 8 + a masked tail of 4 lanes on NEON).
  State tiled(matmul_dag());
  const int c = tiled.stage_index("C");
  ASSERT_TRUE(tiled.split(c, 0, {7}).is_ok());
  ASSERT_TRUE(tiled.split(c, 2, {8}).is_ok());
  ASSERT_TRUE(tiled.reorder(c, {0, 2, 4, 1, 3}).is_ok());
  ASSERT_TRUE(tiled.vectorize(c, 4).is_ok());
  auto tiled_lib = build(tiled, *target, "mm_neon_tail");
  ASSERT_TRUE(tiled_lib.is_ok()) << tiled_lib.status().to_string();
  ASSERT_EQ(lib->bytes.substr(1, 3), "ELF");
  EXPECT_EQ(static_cast<unsigned char>(lib->bytes[18]), 183);  // e_machine EM_AARCH64

  TrackerOptions options;
  options.bind = "tcp://127.0.0.1:*";
  options.security.insecure = true;
  options.no_worker_grace_ms = 20000;
  TrackerThread tracker(options);
  ASSERT_TRUE(tracker.status().is_ok());
  // -L is QEMU_LD_PREFIX: the cross toolchain's loader and libc; ZeroMQ,
  // protobuf and libsodium come from the arm64 multiarch directory.
  Process board({qemu, "-L", "/usr/aarch64-linux-gnu", "-E",
                 "LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib:" TESSERA_AARCH64_SYSROOT_LIBS, worker, "--tracker",
                 tracker.endpoint(), "--key", "aarch64-qemu", "--id", "qemu-board", "--insecure", "--threads", "1",
                 "--target", target->to_string(), "--capability", "neon"});
  ASSERT_TRUE(wait_for_workers(tracker.endpoint(), plaintext(), 1, 30000)) << "the aarch64 worker did not register";

  RpcRunnerOptions o;
  o.tracker = tracker.endpoint();
  o.security = plaintext();
  o.device_key = "aarch64-qemu";
  auto runner = RpcRunner::connect(o);
  ASSERT_TRUE(runner.is_ok());
  MeasureInput good;
  good.library = lib->bytes;
  good.symbol = lib->symbol;
  good.args = {{{kM, kK}, DType::f32()}, {{kK, kN}, DType::f32()}, {{kM, kN}, DType::f32()}};
  good.timeout_ms = 30000;
  good.input_seed = 5;
  good.reference = ReferenceCheck{matmul_reference(5), 1e-4};
  MeasureInput wrong = good;
  wrong.reference = ReferenceCheck{matmul_reference(6), 1e-4};
  MeasureInput tail = good;
  tail.library = tiled_lib->bytes;
  tail.symbol = tiled_lib->symbol;
  auto results = (*runner)->run({good, wrong, tail});
  ASSERT_TRUE(results.is_ok()) << results.status().to_string();
  EXPECT_TRUE((*results)[0].ok()) << measure_error_kind_name((*results)[0].error) << ": " << (*results)[0].message;
  EXPECT_EQ((*results)[0].worker_id, "qemu-board");
  EXPECT_FALSE((*results)[0].costs_s.empty());
  EXPECT_EQ((*results)[1].error, MeasureErrorKind::kWrongAnswer) << (*results)[1].message;
  EXPECT_TRUE((*results)[2].ok()) << measure_error_kind_name((*results)[2].error) << ": " << (*results)[2].message;
  auto st = query_farm_status(tracker.endpoint(), plaintext());
  ASSERT_TRUE(st.is_ok());
  ASSERT_EQ(st->keys_size(), 1);
  EXPECT_EQ(st->keys(0).targets(0), target->to_string());
}

}  // namespace
}  // namespace tessera::rpc
