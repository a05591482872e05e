// tessera-worker: the measuring worker alone, linked with runtime + rpc only
// (no LLVM), for boards (make worker-aarch64) and for LocalRunner's processes.
// `first == 1` tells run_worker it is called as tessera-worker, the name its
// help and errors give.
#include <cstdio>
#include <cstring>

#include "tools/commands.h"

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("tessera-worker %s\n", TESSERA_VERSION_STRING);
    return 0;
  }
  return tessera::cli::run_worker(argc, argv, 1);
}
