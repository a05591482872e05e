// `tessera worker`: the measuring worker (rpc/worker.h). The same command line
// as the standalone `tessera-worker` binary that boards run.
#include "rpc/worker.h"
#include "tools/commands.h"

namespace tessera::cli {

int run_worker(int argc, char** argv, int first) {
  return rpc::worker_main(argc, argv, first);
}

}  // namespace tessera::cli
