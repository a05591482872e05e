// tessera-run: the device's runner of compiled packages — `tessera run`
// without the compiler (runtime only, no LLVM, no ONNX), so it cross-builds
// for boards with the worker (make worker-aarch64). `first == 1` tells
// run_run it is called as tessera-run, the name its help and errors give.
#include "tools/commands.h"

int main(int argc, char** argv) { return tessera::cli::run_run(argc, argv, 1); }
