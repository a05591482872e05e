// The builder pool: turns candidate schedules into shared libraries, several
// at once, and classifies what went wrong when one cannot be built.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/target.h"
#include "tuner/candidate.h"

namespace tessera::tuner {

/// One candidate for `dag`: its state and loop nest are made from its steps
/// unless it carries them already.
struct BuildInput {
  std::shared_ptr<const ComputeDAG> dag;
  Candidate candidate;
};

/// Why a build produced no library.
enum class BuildError : uint8_t {
  kOk,
  kInvalidSchedule,  ///< a step does not replay on the DAG
  kLoweringError,    ///< replayed, but cannot be lowered
  kCodegenError,     ///< LLVM or the linker refused
  kTimeout,          ///< took longer than the pool's timeout
};
const char* build_error_name(BuildError e);

struct BuildResult {
  BuildError error = BuildError::kOk;
  std::string message;  ///< what failed, for the record
  std::string library;  ///< the shared library's bytes when error == kOk
  std::string symbol;   ///< its kernel entry point
  double seconds = 0;   ///< wall time of what the build did: (replay, lower,) unroll, codegen, link
};

struct BuilderOptions {
  int n_parallel = 0;     ///< builds at once; <= 0: the machine's cores
  double timeout_s = 15;  ///< a longer build is reported as kTimeout
  std::string symbol = "kernel";
  /// For tests only: rewrites each lowered kernel before code generation, to
  /// plant a bug that the measurer's correctness check must catch. Empty in
  /// every real build; an error from it is a kLoweringError.
  std::function<Result<PrimFunc>(PrimFunc)> rewrite_kernel = {};
};

/// Builds candidates for one target on a set of threads. Builds are
/// deterministic compiler code, so they run in-process; a build past the
/// timeout cannot be interrupted, but its result is discarded and reported as
/// kTimeout.
class BuilderPool {
 public:
  BuilderPool(Target target, BuilderOptions options = {});

  /// One result per input, in input order.
  std::vector<BuildResult> build(const std::vector<BuildInput>& inputs) const;
  const Target& target() const { return target_; }
  int n_parallel() const { return n_parallel_; }

 private:
  BuildResult build_one(const BuildInput& input) const;

  Target target_;
  BuilderOptions options_;
  int n_parallel_;
};

}  // namespace tessera::tuner
