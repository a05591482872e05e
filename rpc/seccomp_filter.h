// The system-call filters of a measuring child (sandbox.cc), built with
// libseccomp and compiled to BPF once per process (prepare_filters), so that
// each child only installs them. Two stages, stacked: the kernel keeps both
// and applies the stricter answer.
//
//  1. The loader filter, installed before the kernel library is loaded: the
//     library's constructors run under it. It allows what dlopen and the
//     setup of inputs need (files, memory) and kills the process on anything
//     that reaches outside the job: new processes, exec, sockets, signals to
//     other processes (queued ones too), a signal on itself that only comes
//     from outside (SIGKILL, SIGTERM, SIGINT, SIGHUP, SIGQUIT: such a death
//     is stored as the machine's failure), another process's limits, clearing
//     the death signal, tracing, namespaces, mounts, typing into a terminal
//     (TIOCSTI, TIOCLINUX). Every other ioctl fails with ENOTTY: loading
//     needs none.
//  2. The kernel filter, installed once the library is loaded, the inputs are
//     filled and the thread pool runs: an allow-list of what a running kernel
//     and the timing loop need (memory, futex, clocks, sleeping, threads,
//     abort and a fault's signal on itself, writing the report to its pipe,
//     exiting). Anything else kills the process with SIGSYS.
#pragma once

#include <signal.h>

#include "base/status.h"

namespace tessera::rpc {

/// The signals a process receives from outside, never by running (a fault,
/// abort): the worker stores a job that died by one as KILLED, the
/// machine's failure, measured again (sandbox.cc), so both filters kill a
/// job that raises one on itself.
inline constexpr int kOutsideSignals[] = {SIGKILL, SIGTERM, SIGINT, SIGHUP, SIGQUIT};

/// The report pipe's descriptor in a measuring child: the one descriptor the
/// kernel filter lets it write to.
inline constexpr int kReportFd = 3;

/// Compiles the filters to BPF, once per process (later calls return at
/// once): call it before forking children, so that each only installs them.
/// The install functions compile on first use otherwise.
void prepare_filters();

/// Installs the loader filter on the calling thread (and, with TSYNC, every
/// thread of the process). kIOError when the kernel refuses the filter.
Status install_loader_filter();

/// Installs, stacked on the loader filter, one that kills the process on any
/// new thread or process: a kernel job's pool is started before its
/// library loads, so a constructor can start nothing (500 threads before).
/// kIOError when the kernel refuses the filter.
Status install_no_new_threads_filter();

/// Installs the kernel filter on every thread of the process. kReportFd is
/// the only descriptor the process may write to afterwards. kIOError when the
/// kernel refuses the filter.
Status install_kernel_filter();

}  // namespace tessera::rpc
