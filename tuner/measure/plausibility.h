// What a measurement may claim: a kernel cannot do more arithmetic per second
// than the cores that ran it can, nor write its outputs faster than they can
// store. A result beyond that, or an "ok" with no costs, is the measuring
// worker's fault (broken or lying), not a fact about the schedule: the
// Measurer stores it as a "measurement-error", an infrastructure error naming
// the worker, never trained on and measured again.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/target.h"
#include "compiler/te/compute_dag.h"

namespace tessera::tuner {

/// The error kind of an implausible measurement (records::is_infrastructure_error).
inline constexpr const char* kMeasurementError = "measurement-error";

/// What a kernel does at the least, whatever its schedule: its arithmetic,
/// the bytes of its outputs (each written once), and the narrowest element
/// type among its tensors and the elements its packed dot products multiply
/// (8 bits for u8 x s8 words, 16 for bfloat16 pairs: the narrower, the more
/// operations a vector holds).
struct KernelWork {
  double flops = 0;
  double output_bytes = 0;
  int narrowest_bits = 32;

  static KernelWork of(const ComputeDAG& dag);
};

/// An upper bound on the operations per second `threads` cores of `target`
/// can reach on elements of `element_bits`:
///   threads x (vector_bits / element_bits lanes) x 2 (a fused multiply-add
///   is two operations) x 2 FMA pipes per core (4 on AArch64) x 6 GHz,
/// times a margin of 1.25; where x86's matrix unit does more a cycle (AMX:
/// 2,048 int8 or 1,024 bfloat16 operations a core), the unit's rate. On this
/// bound's own terms no CPU exceeds it (a
/// 2-core AVX-512 guest that measures 490 GFLOP/s of float32 FMA is bounded
/// at 960); the margin only absorbs timer rounding.
double peak_ops_bound(const Target& target, int element_bits, int threads);

/// An upper bound on the bytes per second `threads` cores of `target` can
/// store: threads x 2 vector stores per cycle x vector_bits / 8 x 6 GHz,
/// with the same margin. Bounds kernels that do little arithmetic (copies,
/// layout changes), which the operation bound cannot.
double store_bytes_bound(const Target& target, int threads);

/// Why an "ok" result of a kernel doing `work` on `target` cannot be true, or
/// nothing: no costs at all, a cost that is not positive, or a fastest call
/// beyond peak_ops_bound or store_bytes_bound for the cores that ran it
/// (`threads`, as the worker says; 0 when it does not: the target's cores).
/// `worker` names who measured it.
std::optional<std::string> implausible_result(const Target& target, const KernelWork& work,
                                              const std::vector<double>& costs_s, int threads,
                                              const std::string& worker);

}  // namespace tessera::tuner
