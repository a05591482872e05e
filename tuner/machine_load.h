// How busy this machine is, for a warning before measuring on it: a kernel
// timed while another process runs on a core the measurement needs comes out
// slower by the other's share, and the search picks among noise.
#pragma once

namespace tessera::tuner {

/// Threads of other processes, or of this one besides the caller, that are
/// running or waiting for a CPU now: the fewest in a few samples of
/// /proc/stat's procs_running over ~60 ms (a build's compilers, another
/// tuning run), less the calling thread. -1 when /proc/stat cannot be read.
int other_runnable_threads();

}  // namespace tessera::tuner
