// What a measurement may claim: a kernel cannot do more arithmetic per second
// than its target's hardware. A result faster than that, or an "ok" with no
// costs, is the measuring worker's fault (broken or lying), not a fact about
// the schedule: the Measurer stores it as a "measurement-error", an
// infrastructure error naming the worker, never trained on and measured again.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/target.h"

namespace tessera::tuner {

/// The error kind of an implausible measurement (records::is_infrastructure_error).
inline constexpr const char* kMeasurementError = "measurement-error";

/// An upper bound on the operations per second any kernel built for `target`
/// can reach, from what the target says and bounds no CPU exceeds:
///   num_cores x (vector_bits / 8 lanes: 8-bit dot products are the densest
///   arithmetic) x 2 (a fused multiply-add is two operations) x 4 vector
///   units per core x 6 GHz,
/// times a safety margin of 2. It is loose on purpose (a float32 kernel on
/// one AVX-512 core is bounded at 6.1 TFLOP/s, ten times its real peak):
/// only the impossible is refused, never a fast kernel.
double peak_ops_bound(const Target& target);

/// Why an "ok" result of a kernel of `flops` operations per call on `target`
/// cannot be true, or nothing: no costs at all, a cost that is not positive,
/// or a fastest call beyond peak_ops_bound. `worker` names who measured it.
std::optional<std::string> implausible_result(const Target& target, double flops, const std::vector<double>& costs_s,
                                              const std::string& worker);

}  // namespace tessera::tuner
