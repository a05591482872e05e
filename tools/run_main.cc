// tessera-run: the device's runner of compiled packages — `tessera run`
// without the compiler (runtime only, no LLVM, no ONNX), so it cross-builds
// for boards with the worker (make worker-aarch64). `first == 1` tells
// run_run it is called as tessera-run, the name its help and errors give.
#include <cstdio>
#include <cstring>

#include "tools/commands.h"

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("tessera-run %s\n", TESSERA_VERSION_STRING);
    return 0;
  }
  return tessera::cli::run_run(argc, argv, 1);
}
