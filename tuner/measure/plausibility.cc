#include "tuner/measure/plausibility.h"

#include <algorithm>
#include <cstdio>

#include "compiler/ir/functor.h"
#include "compiler/te/tensor.h"

namespace tessera::tuner {
namespace {

constexpr double kMaxClockHz = 6e9;  // no CPU core runs faster
constexpr double kMaxStoresPerCycle = 2;
constexpr double kMargin = 1.25;

std::string who(const std::string& worker) {
  return worker.empty() ? "the worker" : "worker '" + worker + "'";
}

// FMA pipes of one core: two on x86 (AVX-512 servers), up to four on AArch64
// (Neoverse V1/V2's 4 x 128-bit).
double fma_pipes(const Target& target) {
  return target.is_aarch64() ? 4 : 2;
}

// x86's matrix unit, operations a core and cycle: AMX-INT8's TDPBUSD is
// 16 x 16 x 64 multiply-adds in 16 cycles, AMX-BF16's TDPBF16PS half of that.
double matrix_ops_per_cycle(const Target& target) {
  return target.amx_int8 ? 2 * 1024 : target.amx_bf16 ? 2 * 512 : 0;
}

int cores(const Target& target, int threads) {
  return std::max(1, threads > 0 ? threads : target.num_cores);
}

// The narrowest element a packed dot product multiplies: a u8 x s8 word
// holds four 8-bit elements (vpdpbusd's lane does four multiply-adds), a
// bfloat16 word two 16-bit ones; 32 when there is none.
class PackedElementBits final : public IRVisitor {
 public:
  int bits = 32;

 protected:
  using IRVisitor::visit;
  void visit(const CallNode* op) override {
    if (op->op == CallOp::kDotU8S8) bits = std::min(bits, 8);
    if (op->op == CallOp::kDotBf16) bits = std::min(bits, 16);
    IRVisitor::visit(op);
  }
};

}  // namespace

KernelWork KernelWork::of(const ComputeDAG& dag) {
  KernelWork w;
  w.flops = dag.flop_count();
  PackedElementBits packed;
  for (const Tensor& t : dag.tensors()) {
    w.narrowest_bits = std::min(w.narrowest_bits, std::max<int>(8, t->dtype.bits));
    if (const ComputeOpNode* op = compute_op(t)) packed(op->body);
  }
  w.narrowest_bits = std::min(w.narrowest_bits, packed.bits);
  for (const Tensor& t : dag.args()) {
    if (is_placeholder(t)) continue;
    double elements = 1;
    for (int64_t d : t->shape) elements *= static_cast<double>(d);
    w.output_bytes += elements * t->dtype.storage_bytes();
  }
  return w;
}

double peak_ops_bound(const Target& target, int element_bits, int threads) {
  const double lanes = std::max(1.0, static_cast<double>(std::max(1, target.vector_bits)) / std::max(8, element_bits));
  const double per_cycle = std::max(lanes * 2 * fma_pipes(target), matrix_ops_per_cycle(target));
  return cores(target, threads) * per_cycle * kMaxClockHz * kMargin;
}

double store_bytes_bound(const Target& target, int threads) {
  return cores(target, threads) * kMaxStoresPerCycle * std::max(8, target.vector_bits) / 8.0 * kMaxClockHz * kMargin;
}

std::optional<std::string> implausible_result(const Target& target, const KernelWork& work,
                                              const std::vector<double>& costs_s, int threads,
                                              const std::string& worker) {
  if (costs_s.empty()) return who(worker) + " reported the kernel ok with no costs";
  const double fastest = *std::min_element(costs_s.begin(), costs_s.end());
  if (!(fastest > 0))
    return who(worker) + " reported a cost of " + std::to_string(fastest) + " s: a kernel call takes time";
  const int n = cores(target, threads);
  char text[320];
  const double ops = peak_ops_bound(target, work.narrowest_bits, threads);
  if (work.flops > 0 && work.flops / fastest > ops) {
    std::snprintf(text, sizeof text,
                  " reported %.3g s per call: %.0f GFLOP/s, beyond the %.0f GFLOP/s that %d core(s) of %d-bit "
                  "vectors can reach on %d-bit elements (peak_ops_bound)",
                  fastest, work.flops / fastest / 1e9, ops / 1e9, n, target.vector_bits, work.narrowest_bits);
    return who(worker) + text;
  }
  const double stores = store_bytes_bound(target, threads);
  if (work.output_bytes > 0 && work.output_bytes / fastest > stores) {
    std::snprintf(text, sizeof text,
                  " reported %.3g s per call: %.0f GB/s of output, beyond the %.0f GB/s that %d core(s) can "
                  "store (store_bytes_bound)",
                  fastest, work.output_bytes / fastest / 1e9, stores / 1e9, n);
    return who(worker) + text;
  }
  return std::nullopt;
}

}  // namespace tessera::tuner
