#include "tuner/measure/plausibility.h"

#include <algorithm>
#include <cstdio>

namespace tessera::tuner {
namespace {

constexpr double kMaxVectorUnitsPerCore = 4;  // FMA pipes: 2 on x86 (AVX-512), up to 4 on AArch64 (Neoverse V1/V2)
constexpr double kMaxClockHz = 6e9;           // no CPU core runs faster
constexpr double kSafetyMargin = 2;

std::string who(const std::string& worker) { return worker.empty() ? "the worker" : "worker '" + worker + "'"; }

}  // namespace

double peak_ops_bound(const Target& target) {
  const double lanes = std::max(1, target.vector_bits) / 8.0;
  return std::max(1, target.num_cores) * lanes * 2 * kMaxVectorUnitsPerCore * kMaxClockHz * kSafetyMargin;
}

std::optional<std::string> implausible_result(const Target& target, double flops, const std::vector<double>& costs_s,
                                              const std::string& worker) {
  if (costs_s.empty()) return who(worker) + " reported the kernel ok with no costs";
  const double fastest = *std::min_element(costs_s.begin(), costs_s.end());
  if (!(fastest > 0))
    return who(worker) + " reported a cost of " + std::to_string(fastest) + " s: a kernel call takes time";
  if (flops <= 0) return std::nullopt;
  const double rate = flops / fastest, bound = peak_ops_bound(target);
  if (rate <= bound) return std::nullopt;
  char text[256];
  std::snprintf(text, sizeof text,
                " reported %.3g s per call: %.0f GFLOP/s, beyond the %.0f GFLOP/s that %d core(s) of %d-bit "
                "vectors can reach (peak_ops_bound)",
                fastest, rate / 1e9, bound / 1e9, std::max(1, target.num_cores), target.vector_bits);
  return who(worker) + text;
}

}  // namespace tessera::tuner
