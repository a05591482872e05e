// A kernel job measured in the worker's child (sandbox.h): its pool
// started, then sealed (no thread or process may start after it), its
// library loaded, its inputs filled, then the sandbox locked down, then the
// kernel checked against the job's reference and timed.
#pragma once

#include <functional>

#include "base/status.h"
#include "rpc/sandbox.h"
#include "rpc/tessera.pb.h"

namespace tessera::rpc {

/// The result of `job` (a kernel job, not package timing): OK with its
/// costs; LOAD_ERROR when the library or its symbol does not load;
/// RUNTIME_ERROR when the kernel returns an error status or the inputs
/// cannot be made; WRONG_ANSWER when the output differs from the reference;
/// SANDBOX_ERROR when `seal_threads` or `lock_down` does. In process, both
/// are no-ops.
pb::Result measure_kernel(const pb::Job& job, const SandboxOptions& options,
                          const std::function<Status()>& seal_threads, const std::function<Status()>& lock_down);

}  // namespace tessera::rpc
