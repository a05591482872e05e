// A package-timing job measured in the worker's child (sandbox.h): the
// packages loaded (their executors' pools started) and their inputs filled,
// then the sandbox locked down, then the packages timed against each other
// (runtime/package_timing.h). A package with an external backend's code
// runs once before the lock-down, under the loader's filter (files, as the
// unprivileged user; no network, no new process): the backend starts its
// threads and generates its code at its first run, which the kernel filter
// forbids. Such packages are as trusted as the clients the farm admits.
#pragma once

#include <functional>

#include "base/status.h"
#include "rpc/sandbox.h"
#include "rpc/tessera.pb.h"

namespace tessera::rpc {

/// The result of `job` (which has package_timing): OK with package_times;
/// LOAD_ERROR with the runtime's message verbatim (a package that does not
/// parse, a library or backend region that does not load); RUNTIME_ERROR
/// when a run fails; SANDBOX_ERROR when `lock_down` does.
pb::Result measure_packages(const pb::Job& job, const SandboxOptions& options,
                            const std::function<Status()>& lock_down);

}  // namespace tessera::rpc
