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

}  // namespace
}  // namespace tessera::tuner
