// How busy the machine is, as the warning before local measurements reads it.
#include "tuner/machine_load.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace tessera::tuner {
namespace {

// A thread that spins is always running or waiting for a CPU: it counts,
// whatever else the machine runs (other tests may add to the count).
TEST(MachineLoad, ASpinningThreadIsAnotherRunnableThread) {
  std::atomic<bool> stop{false};
  std::thread spinner([&] {
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  const int others = other_runnable_threads();
  stop = true;
  spinner.join();
  EXPECT_GE(others, 1);
}

TEST(MachineLoad, TheCallerItselfIsNotCounted) {
  // Sampling sleeps between reads; the caller's own thread is subtracted, so
  // the count is never negative and /proc/stat is readable on Linux.
  EXPECT_GE(other_runnable_threads(), 0);
}

}  // namespace
}  // namespace tessera::tuner
