// tessera-worker: the measuring worker alone, linked with runtime + rpc only
// (no LLVM), for boards (make worker-aarch64) and for LocalRunner's processes.
#include <cstdio>
#include <cstring>

#include "rpc/worker.h"

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("tessera-worker %s\n", TESSERA_VERSION_STRING);
    return 0;
  }
  return tessera::rpc::worker_main(argc, argv, 1);
}
