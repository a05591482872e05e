// `tessera worker` and `tessera-worker`: one command line for both, so the
// board binary (runtime + rpc only) and the full tool cannot drift apart.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "rpc/keys.h"
#include "rpc/worker.h"

namespace tessera::rpc {
namespace {

// Set by SIGINT/SIGTERM; the worker loop polls it. A signal handler can only
// reach a global, and a lock-free atomic is async-signal-safe.
std::atomic<bool> g_worker_stop{false};
void on_stop_signal(int) {
  g_worker_stop = true;
}

constexpr const char* kUsage =
    "usage: tessera worker --tracker ENDPOINT --key KEY [options]\n"
    "\n"
    "Registers with a tracker and measures the kernels it is sent, each in an\n"
    "isolated child process (a crash, hang or wrong answer is reported, never fatal).\n"
    "\n"
    "  --tracker ENDPOINT      tcp://HOST:9190 or ipc://PATH\n"
    "  --key KEY               device key this worker serves (e.g. x86-avx512, aarch64-rpi4)\n"
    "  --target TARGET         target string kernels for this key are built for\n"
    "  --id ID                 worker id (default hostname-pid)\n"
    "  --max-jobs N            concurrent jobs (default 1: quiet measurements)\n"
    "  --threads N             threads of each measurement's pool (default: all CPUs)\n"
    "  --pin-cpus LIST         pin measurements to CPUs, e.g. 2,3\n"
    "  --capability WORD       reported to the farm (repeatable)\n"
    "  --temp-dir DIR          where received libraries are written for dlopen (default /tmp)\n"
    "  --job-uids FIRST-LAST   a root worker's jobs run in turn as these uids (and gids), ids of no\n"
    "                          user, one a job (default: 256 ids from 1900000000 up, chosen by --id)\n"
    "  --heartbeat-ms MS       heartbeat interval (default 1000)\n"
    "  --max-library-mb MB     largest library accepted (default 256)\n"
    "  --keyfile NAME.key      this worker's CURVE keypair\n"
    "  --tracker-key NAME.pub  the tracker's public key (NAME.pub or the Z85 text)\n"
    "  --insecure              plaintext; only for ipc:// and loopback trackers\n"
    "  --log                   a line on stderr when the worker starts and stops (--log-level info)\n"
    "  --log-level LEVEL       debug, info, warn, error or off (the default without --log);\n"
    "                          lines carry a timestamp and the level\n";

bool parse_int_list(const std::string& text, std::vector<int>* out) {
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end || v < 0 || v > 4095) return false;
    out->push_back(static_cast<int>(v));
  }
  return !out->empty();
}

// The command line as given: option name -> values, in order (flags have an
// empty value; for a repeated option the last one counts, except --capability).
using OptionMap = std::multimap<std::string, std::string>;

// Exit code of a usage error.
constexpr int kUsageError = 2;

// Reads argv[first..] as --name, --name=value or --name value; false (with
// a message on stderr) for anything else.
bool parse_args(int argc, char** argv, int first, OptionMap* opts) {
  const std::set<std::string> flags = {"insecure", "log", "help"};
  const std::set<std::string> valued = {"tracker",        "key",      "target",      "id",        "max-jobs",
                                        "threads",        "pin-cpus", "capability",  "temp-dir",  "heartbeat-ms",
                                        "max-library-mb", "keyfile",  "tracker-key", "log-level", "job-uids"};
  for (int i = first; i < argc; ++i) {
    std::string word = argv[i];
    if (word == "-h") word = "--help";  // as every tessera command
    if (word.rfind("--", 0) != 0) {
      std::fprintf(stderr, "tessera worker: unexpected argument '%s'\n\n%s", word.c_str(), kUsage);
      return false;
    }
    std::string name = word.substr(2), value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (valued.count(name)) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tessera worker: --%s needs a value\n", name.c_str());
        return false;
      }
      value = argv[++i];
    }
    if (!flags.count(name) && !valued.count(name)) {
      std::fprintf(stderr, "tessera worker: unknown option --%s\n\n%s", name.c_str(), kUsage);
      return false;
    }
    opts->emplace(name, value);
  }
  return true;
}

std::string get(const OptionMap& opts, const std::string& name, const std::string& fallback = "") {
  auto range = opts.equal_range(name);
  return range.first == range.second ? fallback : std::prev(range.second)->second;
}

// An integer option in [lo, hi], `fallback` when absent; false (with a
// message) when out of range or not a number.
bool get_int(const OptionMap& opts, const std::string& name, long fallback, long lo, long hi, long* out) {
  std::string text = get(opts, name);
  if (text.empty()) {
    *out = fallback;
    return true;
  }
  char* end = nullptr;
  *out = std::strtol(text.c_str(), &end, 10);
  if (*end || *out < lo || *out > hi) {
    std::fprintf(stderr, "tessera worker: --%s must be an integer in [%ld, %ld]\n", name.c_str(), lo, hi);
    return false;
  }
  return true;
}

// The numeric options, the temp dir, CPU pinning and capabilities.
bool fill_run_options(const OptionMap& opts, WorkerOptions& o) {
  long max_jobs, threads, heartbeat, library_mb;
  if (!get_int(opts, "max-jobs", 1, 1, 256, &max_jobs) || !get_int(opts, "threads", 0, 0, 4096, &threads) ||
      !get_int(opts, "heartbeat-ms", 1000, 50, 60000, &heartbeat) ||
      !get_int(opts, "max-library-mb", 256, 1, 4096, &library_mb))
    return false;
  o.max_jobs = static_cast<int>(max_jobs);
  o.sandbox.threads = static_cast<int>(threads);
  o.heartbeat_ms = static_cast<int>(heartbeat);
  o.limits.max_library_bytes = library_mb << 20;
  o.sandbox.temp_dir = get(opts, "temp-dir", "/tmp");
  if (opts.count("pin-cpus") && !parse_int_list(get(opts, "pin-cpus"), &o.sandbox.pin_cpus)) {
    std::fprintf(stderr, "tessera worker: --pin-cpus takes a list like 0,1,2\n");
    return false;
  }
  if (!o.sandbox.pin_cpus.empty()) o.capabilities.push_back("pinned");
  if (opts.count("job-uids")) {
    unsigned long first = 0, last = 0;
    char tail = 0;
    const std::string text = get(opts, "job-uids");
    if (std::sscanf(text.c_str(), "%lu-%lu%c", &first, &last, &tail) != 2 || first < 1000 || last < first ||
        last >= 0xffffffffUL || last - first >= (1UL << 20)) {
      std::fprintf(stderr,
                   "tessera worker: --job-uids takes FIRST-LAST, ids of no user from 1000 up (at most 2^20 of "
                   "them), e.g. 1900000000-1900000063; got '%s'\n",
                   text.c_str());
      return false;
    }
    o.sandbox.job_uid_first = static_cast<uint32_t>(first);
    o.sandbox.job_uid_count = static_cast<uint32_t>(last - first + 1);
  }
  for (auto [it, end] = opts.equal_range("capability"); it != end; ++it) o.capabilities.push_back(it->second);
  return true;
}

// CURVE keys, or plaintext with --insecure. Returns 0, or the exit code: a
// usage error, or 1 for keys that cannot be loaded.
int fill_security(const OptionMap& opts, WorkerOptions& o) {
  o.security.insecure = opts.count("insecure") > 0;
  if (o.security.insecure) {
    warn_insecure("tessera worker", o.tracker);
    return 0;
  }
  if (get(opts, "keyfile").empty() || get(opts, "tracker-key").empty()) {
    std::fprintf(stderr, "tessera worker: give --keyfile and --tracker-key (CURVE), or --insecure on ipc/loopback\n");
    return kUsageError;
  }
  auto keys = load_keypair(get(opts, "keyfile"));
  auto server = load_public_key(get(opts, "tracker-key"));
  if (!keys.is_ok() || !server.is_ok()) {
    std::fprintf(stderr, "tessera worker: %s\n", (!keys.is_ok() ? keys.status() : server.status()).message().c_str());
    return 1;
  }
  o.security.own = *keys;
  o.security.server_public_z85 = *server;
  return 0;
}

void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

// Runs the worker until signalled, logging at `level`: at kInfo a line at
// start and stop.
int serve(WorkerOptions o, LogLevel level) {
  install_stop_handlers();
  Log log("worker", level);
  o.log = &log;
  Worker worker(o);
  log.info("%s: key %s, tracker %s", worker.options().worker_id.c_str(), o.device_key.c_str(), o.tracker.c_str());
  Status status = worker.run(g_worker_stop);
  if (!status.is_ok()) {
    std::fprintf(stderr, "tessera worker: %s\n", status.message().c_str());
    return 1;
  }
  WorkerStats s = worker.stats();
  log.info("stopped after %llu job(s), %llu malformed frame(s)", static_cast<unsigned long long>(s.jobs_done),
           static_cast<unsigned long long>(s.malformed_frames));
  return 0;
}

}  // namespace

int worker_main(int argc, char** argv, int first) {
  OptionMap opts;
  if (!parse_args(argc, argv, first, &opts)) return kUsageError;
  if (opts.count("help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  WorkerOptions o;
  o.tracker = get(opts, "tracker");
  o.device_key = get(opts, "key");
  if (o.tracker.empty() || o.device_key.empty()) {
    std::fprintf(stderr, "tessera worker: --tracker and --key are required\n\n%s", kUsage);
    return kUsageError;
  }
  o.target = get(opts, "target", "host");
  o.worker_id = get(opts, "id");
  if (!fill_run_options(opts, o)) return kUsageError;
  if (int code = fill_security(opts, o); code != 0) return code;
  LogLevel level = opts.count("log") ? LogLevel::kInfo : LogLevel::kOff;
  if (opts.count("log-level")) {
    auto parsed = parse_log_level(get(opts, "log-level"));
    if (!parsed.is_ok()) {
      std::fprintf(stderr, "tessera worker: %s\n", parsed.status().message().c_str());
      return kUsageError;
    }
    level = opts.count("log") ? std::min(*parsed, LogLevel::kInfo) : *parsed;
  }
  return serve(std::move(o), level);
}

}  // namespace tessera::rpc
