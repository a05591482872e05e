// `tessera worker` and the board's `tessera-worker` (worker_main.cc): the
// measuring worker (rpc/worker.h), one command line for both, so the board
// binary (runtime + rpc only) and the full tool cannot drift apart.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <sstream>

#include "rpc/keys.h"
#include "rpc/worker.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace tessera::cli {
namespace {

// Set by SIGINT/SIGTERM; the worker loop polls it. A signal handler can only
// reach a global, and a lock-free atomic is async-signal-safe.
std::atomic<bool> g_worker_stop{false};
void on_stop_signal(int) {
  g_worker_stop = true;
}

constexpr int kUsageError = 2;

const std::vector<OptionSpec>& worker_specs() {
  static const std::vector<OptionSpec> specs = {
      {"tracker", true, "tcp://HOST:9190 or ipc://PATH"},
      {"key", true, "device key this worker serves (e.g. x86-avx512, aarch64-rpi4)"},
      {"target", true, "target string kernels for this key are built for (default host)"},
      {"id", true, "worker id (default hostname-pid)", 0, "ID"},
      {"max-jobs", true, "concurrent jobs (default 1: quiet measurements)"},
      {"threads", true, "threads of each measurement's pool (default: all CPUs)"},
      {"pin-cpus", true, "pin measurements to CPUs, e.g. 2,3", 0, "LIST"},
      {"capability", true, "reported to the farm (repeatable)", 0, "WORD"},
      {"temp-dir", true, "where received libraries are written for dlopen (default /tmp)", 0, "DIR"},
      {"job-uids", true,
       "a root worker's jobs run in turn as these uids (and gids), ids of no user, one a job "
       "(default: 256 ids from 1900000000 up, chosen by --id)",
       0, "FIRST-LAST"},
      {"heartbeat-ms", true, "heartbeat interval (default 1000)"},
      {"max-library-mb", true, "largest library accepted (default 256)"},
      {"keyfile", true, "this worker's CURVE keypair"},
      {"tracker-key", true, "the tracker's public key (NAME.pub or the Z85 text)"},
      {"insecure", false, "plaintext; only for ipc:// and loopback trackers"},
      {"log", false, "a line on stderr when the worker starts and stops (--log-level info)"},
      {"log-level", true,
       "debug, info, warn, error or off (the default without --log); lines carry a timestamp and the level"},
      {"help", false, "this text"},
  };
  return specs;
}

std::string usage(const std::string& program) {
  return "usage: " + program +
         " --tracker ENDPOINT --key KEY [options]\n\n"
         "Registers with a tracker and measures the kernels it is sent, each in an\n"
         "isolated child process (a crash, hang or wrong answer is reported, never fatal).\n\n" +
         format_options(worker_specs());
}

// "2,3" -> {2, 3}; false for anything but a list of CPU numbers.
bool parse_cpu_list(const std::string& text, std::vector<int>* out) {
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end || v < 0 || v > 4095) return false;
    out->push_back(static_cast<int>(v));
  }
  return !out->empty();
}

// "FIRST-LAST" into the sandbox's job ids; a usage error otherwise.
Status parse_job_uids(const std::string& text, rpc::SandboxOptions& sandbox) {
  unsigned long first = 0, last = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%lu-%lu%c", &first, &last, &tail) != 2 || first < 1000 || last < first ||
      last >= 0xffffffffUL || last - first >= (1UL << 20))
    return Status(ErrorCode::kInvalidArgument,
                  "--job-uids takes FIRST-LAST, ids of no user from 1000 up (at most 2^20 of them), e.g. "
                  "1900000000-1900000063; got '" +
                      text + "'");
  sandbox.job_uid_first = static_cast<uint32_t>(first);
  sandbox.job_uid_count = static_cast<uint32_t>(last - first + 1);
  return Status::ok();
}

// The numeric options (their ranges are checked as they are parsed), the
// temp dir, CPU pinning, job ids and capabilities.
Status fill_run_options(const Args& args, rpc::WorkerOptions& o) {
  auto max_jobs = args.get_int("max-jobs", 1);
  auto threads = args.get_int("threads", 0);
  auto heartbeat = args.get_int("heartbeat-ms", 1000);
  auto library_mb = args.get_int("max-library-mb", 256);
  for (const auto* r : {&max_jobs, &threads, &heartbeat, &library_mb})
    if (!r->is_ok()) return r->status();
  o.max_jobs = static_cast<int>(*max_jobs);
  o.sandbox.threads = static_cast<int>(*threads);
  o.heartbeat_ms = static_cast<int>(*heartbeat);
  o.limits.max_library_bytes = *library_mb << 20;
  o.sandbox.temp_dir = args.get("temp-dir", "/tmp");
  if (args.has("pin-cpus") && !parse_cpu_list(args.get("pin-cpus"), &o.sandbox.pin_cpus))
    return Status(ErrorCode::kInvalidArgument, "--pin-cpus takes a list like 0,1,2");
  if (!o.sandbox.pin_cpus.empty()) o.capabilities.push_back("pinned");
  if (args.has("job-uids")) TESSERA_RETURN_IF_ERROR(parse_job_uids(args.get("job-uids"), o.sandbox));
  for (const std::string& c : args.get_all("capability")) o.capabilities.push_back(c);
  return Status::ok();
}

// CURVE keys, or plaintext with --insecure. Returns 0, or the exit code: a
// usage error, or 1 for keys that cannot be loaded.
int fill_security(const Args& args, const std::string& program, rpc::WorkerOptions& o) {
  o.security.insecure = args.has("insecure");
  if (o.security.insecure) {
    rpc::warn_insecure(program.c_str(), o.tracker);
    return 0;
  }
  if (!args.has("keyfile") || !args.has("tracker-key")) {
    std::fprintf(stderr, "%s: give --keyfile and --tracker-key (CURVE), or --insecure on ipc/loopback\n",
                 program.c_str());
    return kUsageError;
  }
  auto keys = rpc::load_keypair(args.get("keyfile"));
  auto server = rpc::load_public_key(args.get("tracker-key"));
  if (!keys.is_ok() || !server.is_ok()) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(),
                 (!keys.is_ok() ? keys.status() : server.status()).message().c_str());
    return 1;
  }
  o.security.own = *keys;
  o.security.server_public_z85 = *server;
  return 0;
}

// --log and --log-level: at kInfo a line at start and stop.
Result<rpc::LogLevel> log_level(const Args& args) {
  rpc::LogLevel level = args.has("log") ? rpc::LogLevel::kInfo : rpc::LogLevel::kOff;
  if (!args.has("log-level")) return level;
  auto parsed = rpc::parse_log_level(args.get("log-level"));
  if (!parsed.is_ok()) return parsed.status();
  return args.has("log") ? std::min(*parsed, rpc::LogLevel::kInfo) : *parsed;
}

void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

// Runs the worker until signalled.
int serve(rpc::WorkerOptions o, rpc::LogLevel level, const std::string& program) {
  install_stop_handlers();
  rpc::Log log("worker", level);
  o.log = &log;
  rpc::Worker worker(o);
  log.info("%s: key %s, tracker %s", worker.options().worker_id.c_str(), o.device_key.c_str(), o.tracker.c_str());
  Status status = worker.run(g_worker_stop);
  if (!status.is_ok()) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), status.message().c_str());
    return 1;
  }
  rpc::WorkerStats s = worker.stats();
  log.info("stopped after %llu job(s), %llu malformed frame(s)", static_cast<unsigned long long>(s.jobs_done),
           static_cast<unsigned long long>(s.malformed_frames));
  return 0;
}

}  // namespace

int run_worker(int argc, char** argv, int first) {
  // "tessera worker", or "tessera-worker" when the board's binary is called
  // directly (worker_main.cc passes first == 1).
  const std::string program = first == 1 ? "tessera-worker" : "tessera worker";
  auto args = Args::parse(argc, argv, first, worker_specs());
  if (!args.is_ok()) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), args.status().message().c_str());
    return kUsageError;
  }
  if (args->has("help")) {
    std::fputs(usage(program).c_str(), stdout);
    return 0;
  }
  if (!args->positional().empty()) {
    std::fprintf(stderr, "%s: unexpected argument '%s'\n\n%s", program.c_str(), args->positional()[0].c_str(),
                 usage(program).c_str());
    return kUsageError;
  }
  rpc::WorkerOptions o;
  o.tracker = args->get("tracker");
  o.device_key = args->get("key");
  if (o.tracker.empty() || o.device_key.empty()) {
    std::fprintf(stderr, "%s: --tracker and --key are required\n\n%s", program.c_str(), usage(program).c_str());
    return kUsageError;
  }
  o.target = args->get("target", "host");
  o.worker_id = args->get("id");
  auto level = log_level(*args);
  Status options = level.is_ok() ? fill_run_options(*args, o) : level.status();
  if (!options.is_ok()) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), options.message().c_str());
    return kUsageError;
  }
  if (int code = fill_security(*args, program, o); code != 0) return code;
  return serve(std::move(o), *level, program);
}

}  // namespace tessera::cli
