// The plain measurement vocabulary shared by the tuner and every runner:
// what to measure (MeasureInput) and what happened (MeasureResult).
//
// No protobuf or ZeroMQ here, so that code that only consumes results does not
// see the wire format.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "runtime/package_timing.h"
#include "runtime/time_evaluator.h"

namespace tessera::rpc {

/// How a measurement ended; the same values as pb::ErrorKind on the wire.
enum class MeasureErrorKind : int {
  kOk = 0,
  kRuntimeError = 1,   ///< the kernel returned a non-zero status
  kCrash = 2,          ///< the measuring process died by a signal (the message names it)
  kTimeout = 3,        ///< ran past its timeout and was killed by the worker
  kWrongAnswer = 4,    ///< the output differs from the reference
  kLoadError = 5,      ///< the library did not load, or the symbol is missing
  kNoWorker = 6,       ///< no worker serves the device key
  kProtocolError = 7,  ///< the job was refused as malformed, or the farm's queue is full
  kNoResult = 8,       ///< no result by the runner's deadline (tracker unreachable, job lost); never on the wire
  kSandboxError = 9,   ///< the worker could not set up the sandbox (rlimits, namespaces, filter, child process)
  kKilled = 10,        ///< killed from outside the job (a signal no kernel raises by running; see sandbox.h)
};

/// True for the kinds that are the infrastructure's failure, not the
/// schedule's: kNoWorker, kProtocolError, kNoResult, kSandboxError (an
/// rlimit the worker may not raise, a namespace the kernel refuses), kKilled
/// (a job killed from outside): stored as such and measured again, never a
/// fact about the schedule. A kernel that crashed,
/// hung (kTimeout) or computed a wrong answer is a fact about its schedule.
bool is_infrastructure_error(MeasureErrorKind kind);

/// "ok", "runtime-error", "crash", "timeout", "wrong-answer", "load-error",
/// "no-worker", "protocol-error", "no-result", "sandbox-error", "killed".
const char* measure_error_kind_name(MeasureErrorKind kind);

/// One kernel argument: a dense C-order buffer of `dtype` (scalar).
struct ArgSpec {
  std::vector<int64_t> shape;
  DType dtype = DType::f32();
  /// An input that every timed call reads from beyond the private caches (a
  /// model's weights): the worker cycles through copies of it
  /// (runtime::ColdArguments). Not for the output.
  bool cold = false;
};

/// Optional correctness check of a candidate: after one call with arguments
/// filled by NDArray::fill_random(input_seed + i), the last argument must equal
/// `expected_output` (floats within tolerance * (1 + |want|), integers exactly),
/// either as a whole or at the sampled `points` only.
struct ReferenceCheck {
  /// The raw bytes of the last argument; with `points`, one element per point, in order.
  std::string expected_output;
  double tolerance = 1e-4;
  /// Row-major flat element indices of the last argument to compare; empty: every element.
  std::vector<int64_t> points = {};
};

/// Whole packages to time against each other on a worker, in its sandbox
/// (runtime/package_timing.h): per call, or whole runs in alternating rounds.
struct PackageTimingSpec {
  std::vector<std::string> packages;  ///< each runtime::write_package_bytes' bytes; 1-8
  bool whole_runs = false;            ///< time_alternately; else profile_alternately
  int runs = 10;                      ///< per call: runs to take each call's median over
  runtime::AlternatingRounds rounds;  ///< whole runs
};

/// What to measure: a built library and how to call and time its kernel, or
/// (with `packages`) whole packages, and then none of the kernel's fields.
struct MeasureInput {
  std::string library;        ///< shared library bytes (the builder's output)
  std::string symbol;         ///< entry point, int32_t symbol(void** args)
  std::vector<ArgSpec> args;  ///< in the kernel's parameter order; the last is the output
  runtime::TimingOptions timing;
  int timeout_ms = 10000;  ///< wall time on the worker for load + check + timing
  uint64_t input_seed = 1;
  std::optional<ReferenceCheck> reference;
  int priority = 0;  ///< higher first, within one device key
  /// Workers to measure this elsewhere than (their result was implausible);
  /// one of them still gets it when no other worker serves the key.
  std::vector<std::string> avoid_workers = {};
  std::optional<PackageTimingSpec> packages = {};
};

/// What happened. Every input gets exactly one result, good or bad.
struct MeasureResult {
  std::vector<double> costs_s;  ///< seconds per call, one per repeat; empty unless kOk
  MeasureErrorKind error = MeasureErrorKind::kOk;
  std::string message;            ///< empty when kOk
  std::string worker_id;          ///< who measured it (empty when nobody did), as the tracker knows it
  std::string worker_public_key;  ///< that worker's CURVE public key (Z85); empty on plaintext farms
  double run_seconds = 0;         ///< wall time of the isolated run on the worker
  double check_seconds = 0;       ///< of which the reference check's comparison took (its call is the warm-up)
  int threads = 0;                ///< threads that timed the kernel, as the worker says (0: not said)
  /// A package job's results (kOk): per package, each call's median
  /// seconds (per call), or the whole runs' times (whole_runs).
  std::vector<std::vector<double>> call_medians_s;
  runtime::AlternatingTimes whole;

  bool ok() const { return error == MeasureErrorKind::kOk; }
  /// Mean of costs_s, or +inf when there are none.
  double mean_cost() const;
};

}  // namespace tessera::rpc
