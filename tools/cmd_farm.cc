// `tessera farm status --tracker ENDPOINT`: workers per key, busy/idle, queue
// lengths, jobs done and failed, and the counters of dropped frames.
#include <cstdio>

#include "rpc/client.h"
#include "rpc/keys.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace tessera::cli {

int run_farm(int argc, char** argv, int first) {
  const std::vector<OptionSpec> specs = {
      {"tracker", true, "the tracker's endpoint (default tcp://127.0.0.1:9190)"},
      {"keyfile", true, "this client's CURVE keypair (NAME.key)"},
      {"tracker-key", true, "the tracker's public key (NAME.pub or the Z85 text)"},
      {"insecure", false, "plaintext; only for ipc:// and loopback trackers"},
      {"timeout-ms", true, "how long to wait for an answer (default 3000)"},
      {"help", false, "this text"},
  };
  auto args = Args::parse(argc, argv, first, specs);
  const bool help = args.is_ok() && args->has("help");
  if (!args.is_ok() || help || args->positional().size() != 1 || args->positional()[0] != "status") {
    if (!args.is_ok()) std::fprintf(stderr, "tessera farm: %s\n\n", args.status().message().c_str());
    std::fprintf(
        help ? stdout : stderr,
        "usage: tessera farm status --tracker ENDPOINT (--keyfile NAME.key --tracker-key NAME.pub | --insecure)\n\n%s",
        format_options(specs).c_str());
    return help ? 0 : 2;
  }
  rpc::SecurityOptions security;
  security.insecure = args->has("insecure");
  if (security.insecure) rpc::warn_insecure("tessera farm", args->get("tracker"));
  if (!security.insecure) {
    if (!args->has("keyfile") || !args->has("tracker-key")) {
      std::fprintf(stderr, "tessera farm: give --keyfile and --tracker-key (CURVE), or --insecure on ipc/loopback\n");
      return 2;
    }
    auto keys = rpc::load_keypair(args->get("keyfile"));
    auto server = rpc::load_public_key(args->get("tracker-key"));
    if (!keys.is_ok() || !server.is_ok()) {
      std::fprintf(stderr, "tessera farm: %s\n", (!keys.is_ok() ? keys.status() : server.status()).message().c_str());
      return 1;
    }
    security.own = *keys;
    security.server_public_z85 = *server;
  }
  auto timeout = args->get_int("timeout-ms", 3000);
  if (!timeout.is_ok()) {
    std::fprintf(stderr, "tessera farm: %s\n", timeout.status().message().c_str());
    return 2;
  }
  auto status =
      rpc::query_farm_status(args->get("tracker", "tcp://127.0.0.1:9190"), security, static_cast<int>(*timeout));
  if (!status.is_ok()) {
    std::fprintf(stderr, "tessera farm: %s\n", status.status().message().c_str());
    return 1;
  }
  std::fputs(rpc::format_farm_status(*status).c_str(), stdout);
  return 0;
}

}  // namespace tessera::cli
