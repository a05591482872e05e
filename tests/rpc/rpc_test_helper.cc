// A process for tests that need one to interrupt: `rpc_test_helper
// local-runner WORKER_BINARY` starts a LocalRunner with two workers, prints
// "DIR PID PID ready" and waits for a signal.
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "rpc/runner.h"

int main(int argc, char** argv) {
  if (argc != 3 || std::strcmp(argv[1], "local-runner") != 0) return 2;
  tessera::rpc::LocalRunnerOptions o;
  o.num_workers = 2;
  o.worker_binary = argv[2];
  auto runner = tessera::rpc::LocalRunner::start(o);
  if (!runner.is_ok()) {
    std::fprintf(stderr, "%s\n", runner.status().to_string().c_str());
    return 1;
  }
  std::printf("%s", (*runner)->directory().c_str());
  for (pid_t pid : (*runner)->worker_pids()) std::printf(" %d", static_cast<int>(pid));
  std::printf(" ready\n");
  std::fflush(stdout);
  for (int i = 0; i < 600; ++i) ::sleep(1);  // SIGINT ends it; the runner's handler cleans up
  return 0;
}
