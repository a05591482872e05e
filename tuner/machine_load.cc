#include "tuner/machine_load.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace tessera::tuner {
namespace {

// procs_running of /proc/stat (the caller included), or -1.
int procs_running() {
  std::ifstream in("/proc/stat");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    int value = -1;
    if (fields >> key >> value && key == "procs_running") return value;
  }
  return -1;
}

}  // namespace

int other_runnable_threads() {
  int fewest = INT_MAX;
  for (int sample = 0; sample < 4; ++sample) {
    if (sample > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const int running = procs_running();
    if (running < 0) return -1;
    fewest = std::min(fewest, running);
  }
  return std::max(0, fewest - 1);
}

}  // namespace tessera::tuner
