// `tessera tracker --bind ENDPOINT`: the farm's tracker (rpc/tracker.h).
#include <signal.h>

#include <atomic>
#include <cstdio>

#include "rpc/keys.h"
#include "rpc/tracker.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace tessera::cli {
namespace {

// Set by SIGINT/SIGTERM: a handler can only reach a global (lock-free atomic).
std::atomic<bool> g_tracker_stop{false};
void on_stop(int) {
  g_tracker_stop = true;
}

}  // namespace

int run_tracker(int argc, char** argv, int first) {
  const std::vector<OptionSpec> specs = {
      {"bind", true, "endpoint to listen on (default tcp://127.0.0.1:9190)"},
      {"keyfile", true, "the tracker's CURVE keypair (NAME.key from `tessera keys generate`)"},
      {"authorized", true, "public keys admitted: a directory of *.pub files or a file of keys"},
      {"insecure", false, "plaintext, no keys; only for ipc:// and loopback binds"},
      {"heartbeat-ms", true, "heartbeat interval workers use (default 1000)"},
      {"dead-after-ms", true, "a worker silent this long is dead (default 3000)"},
      {"no-worker-grace-ms", true, "how long a job waits for a worker of its key (default 2000)"},
      {"max-library-mb", true, "largest library accepted (default 256)"},
      {"log", false, "one line per event on stderr (--log-level info)"},
      {"log-level", true,
       "debug, info (registrations, requeues), warn (refused keys, dead workers), error or off "
       "(the default without --log); lines carry a timestamp and the level"},
      {"help", false, "this text"},
  };
  auto args = Args::parse(argc, argv, first, specs);
  if (!args.is_ok() || args->has("help") || !args->positional().empty()) {
    const bool help = args.is_ok() && args->has("help");
    if (!args.is_ok()) std::fprintf(stderr, "tessera tracker: %s\n\n", args.status().message().c_str());
    std::fprintf(help ? stdout : stderr,
                 "usage: tessera tracker [--bind ENDPOINT] (--keyfile NAME.key --authorized DIR | --insecure)\n\n%s",
                 format_options(specs).c_str());
    return help ? 0 : 2;
  }
  rpc::TrackerOptions o;
  o.bind = args->get("bind", "tcp://127.0.0.1:9190");
  o.log = args->has("log");
  if (args->has("log-level")) {
    auto level = rpc::parse_log_level(args->get("log-level"));
    if (!level.is_ok()) {
      std::fprintf(stderr, "tessera tracker: %s\n", level.status().message().c_str());
      return 2;
    }
    o.log_level = *level;
  }
  auto hb = args->get_int("heartbeat-ms", 1000);
  auto dead = args->get_int("dead-after-ms", 3000);
  auto grace = args->get_int("no-worker-grace-ms", 2000);
  auto mb = args->get_int("max-library-mb", 256);
  for (const auto* r : {&hb, &dead, &grace, &mb})
    if (!r->is_ok() || **r <= 0) {
      std::fprintf(stderr, "tessera tracker: %s\n",
                   r->is_ok() ? "values must be positive" : r->status().message().c_str());
      return 2;
    }
  o.heartbeat_ms = static_cast<int>(*hb);
  o.dead_after_ms = static_cast<int>(*dead);
  o.no_worker_grace_ms = static_cast<int>(*grace);
  o.limits.max_library_bytes = *mb << 20;
  o.security.insecure = args->has("insecure");
  if (!o.security.insecure) {
    if (!args->has("keyfile") || !args->has("authorized")) {
      std::fprintf(stderr, "tessera tracker: give --keyfile and --authorized (CURVE), or --insecure on ipc/loopback\n");
      return 2;
    }
    auto keys = rpc::load_keypair(args->get("keyfile"));
    auto authorized = rpc::load_authorized_keys(args->get("authorized"));
    if (!keys.is_ok() || !authorized.is_ok()) {
      std::fprintf(stderr, "tessera tracker: %s\n",
                   (!keys.is_ok() ? keys.status() : authorized.status()).message().c_str());
      return 1;
    }
    o.security.own = *keys;
    o.authorized = *authorized;
    size_t any = 0, workers = 0, clients = 0;
    for (const auto& [key, role] : o.authorized)
      (role == rpc::KeyRole::kWorker ? workers : role == rpc::KeyRole::kClient ? clients : any)++;
    std::fprintf(stderr, "tessera tracker: %zu worker key(s), %zu client key(s) authorized\n", workers, clients);
    if (any > 0)
      std::fprintf(stderr,
                   "tessera tracker: warning: %zu key(s) without a role may both register as workers and submit "
                   "jobs; move them to %s/workers or %s/clients\n",
                   any, args->get("authorized").c_str(), args->get("authorized").c_str());
  } else {
    rpc::warn_insecure("tessera tracker", o.bind);
  }
  rpc::Tracker tracker(o);
  Status bound = tracker.bind();
  if (!bound.is_ok()) {
    std::fprintf(stderr, "tessera tracker: %s\n", bound.message().c_str());
    return 1;
  }
  std::fprintf(stderr, "tessera tracker: listening on %s\n", tracker.endpoint().c_str());
  struct sigaction action {};
  action.sa_handler = on_stop;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  Status ran = tracker.run(g_tracker_stop);
  if (!ran.is_ok()) {
    std::fprintf(stderr, "tessera tracker: %s\n", ran.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace tessera::cli
