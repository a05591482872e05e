// `tessera tune`: search schedules of one or more operators on a target,
// measuring on local workers (the default) or on a farm, and keep every
// measurement in the records database.
//
// This file reads the command line and prints; the job itself (tasks,
// spaces, runner, session) is tuner/job.h's.
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "driver/model_input.h"
#include "driver/tune.h"
#include "rpc/runner.h"
#include "tools/args.h"
#include "tools/commands.h"
#include "tuner/job.h"

namespace tessera::cli {
namespace {

// Set by SIGINT, read by the job: the first Ctrl-C stops after the current
// batch (stored), the second cancels the batch in flight (nothing of it
// stored), a third or 5 s after the second exits at once.
std::atomic<bool> g_stop{false};
std::atomic<bool> g_cancel{false};
std::atomic<int> g_interrupts{0};
constexpr int kInterrupted = 130;  // 128 + SIGINT, as a shell reports a Ctrl-C

void say(const char* text) {
  (void)!::write(STDERR_FILENO, text, std::strlen(text));
}

std::atomic<bool> g_terminated{false};

// Dies of SIGTERM, as a terminated process does, after removing the local
// workers and their private directory (they would die with us anyway:
// PR_SET_PDEATHSIG).
void die_of_sigterm() {
  rpc::stop_local_workers_from_signal();
  ::signal(SIGTERM, SIG_DFL);
  ::raise(SIGTERM);
}

void exit_now(int) {
  if (g_terminated) die_of_sigterm();
  say("\ntessera tune: stopped at once; the batch in flight is not stored\n");
  rpc::stop_local_workers_from_signal();
  ::_exit(kInterrupted);
}

// SIGTERM: as a second Ctrl-C, the batch in flight is dropped and the job
// winds up (its session closed, everything measured before stored); the
// command then dies of the signal. If the job has not wound up in 5 s, it
// dies at once.
void on_sigterm(int) {
  g_terminated = true;
  g_stop = true;
  g_cancel = true;
  say("\ntessera tune: terminated; closing the session\n");
  ::alarm(5);
}

void on_sigint(int) {
  const int n = g_interrupts.fetch_add(1) + 1;
  if (n == 1) {
    g_stop = true;
    say("\ntessera tune: stopping after this batch (Ctrl-C again: stop now, dropping the batch)\n");
  } else if (n == 2) {
    g_cancel = true;
    ::alarm(5);  // exit_now if the job has not wound up by then
  } else {
    exit_now(SIGINT);
  }
}

// Installed before the job starts its local workers, so that they leave
// SIGINT to us (rpc/runner.h): the workers live on until the job ends.
void install_interrupt_handlers() {
  struct sigaction action {};
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  action.sa_handler = on_sigint;
  ::sigaction(SIGINT, &action, nullptr);
  action.sa_handler = exit_now;
  ::sigaction(SIGALRM, &action, nullptr);
  action.sa_handler = on_sigterm;
  ::sigaction(SIGTERM, &action, nullptr);
}

const std::vector<OptionSpec> kOptions = {
    {"op", true, "operator to tune, e.g. matmul:M=1024,N=1024,K=1024 (repeatable)"},
    {"input-shape", true, "with a model: bind a dynamic input, name:d0,d1,... (repeatable)"},
    {"input-value", true, "with a model: bind a scalar input to a value, name=value (repeatable), as compile does"},
    {"precision", true, "with a model: fp32 (default), bf16 or fp16, the kernels compile --precision will look up"},
    {"target", true, "target string (default: this machine)"},
    {"trials", true, "measurements in this run over all tasks (default 64)"},
    {"space", true,
     "sketch (template-free; default for --op), knob (templates) or auto (knob where a template fits; default for a "
     "model)"},
    {"strategy", true, "sketch: evolutionary (default), random; knob: xgb (default), random, grid, ga"},
    {"db", true, "records database (default tessera.db)"},
    {"prior-db", true,
     "another records database whose records of these workloads, measured on other targets, warm the cost "
     "model before the first batch (a prior, never stored here as measurements)"},
    {"tracker", true, "measure on a farm: the tracker's endpoint, e.g. tcp://farm:9190"},
    {"key", true, "device key of the farm's workers (with --tracker)"},
    {"keyfile", true, "this client's CURVE keypair (with --tracker)"},
    {"tracker-key", true, "the tracker's CURVE public key (with --tracker)"},
    {"insecure", false, "plaintext to an ipc/loopback tracker"},
    {"workers", true, "local workers when no tracker is given (default 1)"},
    {"threads", true, "threads per measurement (default: the target's cores)"},
    {"batch", true, "candidates per round (default 16)"},
    {"seed", true, "seed of the search (default 0)"},
    {"time", true, "stop after this long, e.g. 90s, 2m, 1h (the batch in flight is finished and stored)"},
    {"time-budget", true, "stop after this many seconds (as --time)"},
    {"early-stopping", true, "stop a task after N trials without improvement"},
    {"scheduler", true, "gradient (default) or round-robin, for several tasks"},
    {"cache", true,
     "model (default): calls back to back, each reading the model's weights afresh from beyond "
     "a core's own caches when they outgrow them, as the model does; warm: everything stays "
     "cached; cold: each repeat times one call after the caches are swept"},
    {"repeat", true, "timing repeats per candidate (default 8 cold, else 3)"},
    {"min-repeat-ms", true, "shortest timed repeat in ms, model and warm (default 50)"},
    {"timeout", true, "longest one measurement may run, in seconds (default 10)"},
    {"worker-wait", true, "when every worker of the key is lost mid-run, wait this many seconds for one (default 300)"},
    {"no-check", false,
     "time candidates without first checking their output (checked by default: each is "
     "compared at sampled points with values evaluated from the computation's definition, "
     "and a wrong one is stored as wrong-answer, never used)"},
    {"check", false, "the default (kept for old scripts)"},
    {"byoc", true,
     "with a model, after tuning: time each region this external backend can run both ways on "
     "this machine and store the times, which compile --byoc auto reads: none, cblas, dnnl or "
     "auto (default: dnnl where its runtime module is installed; docs/byoc.md)"},
    {"verbose", false,
     "end with every task's row and time per trial, and every region timed both ways (default: "
     "the 12 largest tasks, and the regions that run on the backend)"},
    {"help", false, "this message"},
};

int usage_error(const std::string& message) {
  std::fprintf(stderr, "tessera tune: %s\n", message.c_str());
  return 2;
}

// The options as the tuner reads them: every value of each, in order.
tuner::OptionValues option_values(const Args& args) {
  tuner::OptionValues values;
  for (const OptionSpec& spec : kOptions)
    if (args.has(spec.name)) values[spec.name] = args.get_all(spec.name);
  return values;
}

// The command line recorded with the session (the tuner adds the timing
// mode when it is not named).
std::string session_command_line(int argc, char** argv) {
  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
  return command_line;
}

// The terminal's rows and columns, for a progress display that fits it.
tuner::TerminalSize terminal_size(int fd) {
  tuner::TerminalSize size;
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
    size.rows = ws.ws_row;
    size.columns = ws.ws_col;
  }
  return size;
}

}  // namespace

int run_tune(int argc, char** argv, int first) {
  auto args = Args::parse(argc, argv, first, kOptions);
  if (!args.is_ok()) return usage_error(args.status().message());
  const bool has_model = args->positional().size() == 1 && driver::is_onnx_path(args->positional()[0]);
  if (args->has("help") || (args->get_all("op").empty() && !has_model) || args->positional().size() > 1 ||
      (args->positional().size() == 1 && !has_model)) {
    std::fprintf(
        args->has("help") ? stdout : stderr,
        "usage: tessera tune --op SPEC [--op SPEC ...] [--target TARGET] [--trials N] [--space SPACE]\n"
        "                    [--strategy STRATEGY] [--db DB] [--tracker ENDPOINT --key KEY]\n"
        "       tessera tune MODEL.onnx [--input-shape NAME:D,...] [--input-value NAME=VALUE] [same options]\n\n%s",
        format_options(kOptions).c_str());
    return args->has("help") ? 0 : 2;
  }

  // Everything a user can get wrong is checked before any work starts.
  driver::TuneRequest request;
  request.model = has_model ? args->positional()[0] : "";
  request.options = option_values(*args);
  request.command_line = session_command_line(argc, argv);
  auto tuning = driver::Tuning::check(std::move(request));
  if (!tuning.is_ok()) return usage_error(tuning.status().message());
  auto warnings = (*tuning)->import();
  if (!warnings.is_ok()) {
    std::fprintf(stderr, "tessera tune: %s\n", warnings.status().message().c_str());
    return 1;
  }
  for (const std::string& w : *warnings) std::fprintf(stderr, "tessera tune: warning: %s\n", w.c_str());
  install_interrupt_handlers();
  // A terminal that cannot move its cursor (TERM=dumb) gets the plain log.
  const char* term = std::getenv("TERM");
  const bool redraw = isatty(STDOUT_FILENO) && !(term && std::strcmp(term, "dumb") == 0);
  tuner::Progress progress(stdout, redraw, [] { return terminal_size(STDOUT_FILENO); });
  auto summary = (*tuning)->run(stdout, &progress, &g_stop, &g_cancel);
  if (g_terminated) die_of_sigterm();
  if (!summary.is_ok()) {
    std::fprintf(stderr, "tessera tune: %s\n", summary.status().message().c_str());
    return g_stop ? kInterrupted : 1;
  }
  if (summary->stopped || summary->cancelled)
    std::printf("\n%s\n", driver::format_stopped(*summary, (*tuning)->db()).c_str());
  if (summary->cancelled) return kInterrupted;
  const bool verbose = args->has("verbose");
  std::printf("\n%s", verbose ? tuner::format_summary(summary->tasks).c_str()
                              : tuner::format_summary(summary->tasks, tuner::kSummaryRows, false).c_str());
  if (summary->all_failed) {
    std::fprintf(stderr, "tessera tune: %s\n", driver::format_all_failed(*summary).c_str());
    return 1;
  }
  if (summary->stopped) return kInterrupted;
  // A Ctrl-C now stops the check and the region timing at once.
  (*tuning)->after_tuning(stdout, verbose, &g_stop);
  if (g_terminated) die_of_sigterm();
  return g_stop ? kInterrupted : 0;
}

}  // namespace tessera::cli
