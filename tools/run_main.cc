// tessera-run: the device's runner of compiled packages — `tessera run`
// without the compiler (runtime only, no LLVM, no ONNX), so it cross-builds
// for boards with the worker (make worker-aarch64).
#include "tools/commands.h"

int main(int argc, char** argv) { return tessera::cli::run_run(argc, argv, 1); }
