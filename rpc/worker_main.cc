// tessera-worker: the measuring worker alone, linked with runtime + rpc only
// (no LLVM), for boards (make worker-aarch64) and for LocalRunner's processes.
#include "rpc/worker.h"

int main(int argc, char** argv) { return tessera::rpc::worker_main(argc, argv, 1); }
