// `tessera`: one binary, one subcommand per job.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/version.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace {

struct Command {
  const char* name;
  int (*run)(int argc, char** argv, int first);
  const char* summary;
};

// One line per subcommand, in the order `tessera help` lists them.
constexpr Command kCommands[] = {
    {"help", nullptr, "this list; `tessera help CMD` describes one command"},
    {"space", tessera::cli::run_space, "show the search space of an operator: knobs, sketches, random samples"},
    {"tune", tessera::cli::run_tune,
     "search fast schedules for operators or a whole ONNX model, on local workers or a farm"},
    {"compile", tessera::cli::run_compile, "compile an ONNX model with the best records into one package file"},
    {"run", tessera::cli::run_run,
     "run a compiled package on this machine: inputs from files, outputs to files, latency"},
    {"records", tessera::cli::run_records, "list, compare, export, import and prune measurement records"},
    {"report", tessera::cli::run_report,
     "write a self-contained HTML report of how tuning went: plots per task and model, time, best kernels"},
    {"tracker", tessera::cli::run_tracker, "the measurement farm's tracker: queues per device key, workers, results"},
    {"worker", tessera::cli::run_worker, "a measuring worker: runs each job in an isolated child process"},
    {"farm", tessera::cli::run_farm, "farm status: workers per key, busy/idle, queues, done and failed"},
    {"keys", tessera::cli::run_keys, "generate CURVE keypairs for the tracker, workers and clients"},
};

int print_usage(FILE* out) {
  std::fprintf(
      out,
      "usage: tessera <command> [options]\n       tessera help <command>\n       tessera --version\n\ncommands:\n");
  for (const auto& c : kCommands) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
  std::fprintf(out, "\n`tessera <command> --help` (or -h) describes one command.\n");
  return out == stdout ? 0 : 2;
}

// What built this binary: the versions a tuning session records.
int print_version() {
  std::printf("tessera %s\nLLVM %s\n", tessera::kToolVersion, tessera::kLlvmVersion);
  return 0;
}

const Command* find_command(const char* name) {
  for (const auto& c : kCommands)
    if (c.run && !std::strcmp(c.name, name)) return &c;
  return nullptr;
}

int unknown_command(const char* name) {
  std::vector<std::string> names;
  for (const auto& c : kCommands)
    if (c.run) names.push_back(c.name);
  if (const std::string near = tessera::cli::nearest_word(name, names); !near.empty()) {
    std::fprintf(stderr, "tessera: unknown command '%s': did you mean '%s'? (tessera --help lists them)\n", name,
                 near.c_str());
    return 2;
  }
  std::fprintf(stderr, "tessera: unknown command '%s'\n\n", name);
  return print_usage(stderr);
}

// `tessera help CMD [SUB]`: the command's own --help.
int help_of(int argc, char** argv) {
  const Command* c = find_command(argv[2]);
  if (!c) return unknown_command(argv[2]);
  std::vector<char*> words(argv, argv + argc);
  std::string help = "--help";
  words.erase(words.begin() + 1);  // "help"
  words.push_back(help.data());
  return c->run(static_cast<int>(words.size()), words.data(), 2);
}

}  // namespace

// oneDNN's module (an external backend) runs on OpenMP's threads, and
// OpenMP reads its wait policy once, when it loads — for this program before
// main, since XGBoost links it. A package runs with OMP_WAIT_POLICY=passive
// unless the environment says otherwise (runtime/external_modules.cc); so
// that the regions `tune` and `compile --byoc auto` time run as they will
// in a package, the commands that run them start again with it set.
void run_openmp_as_packages_do(int argc, char** argv) {
  if (argc < 2 || std::getenv("OMP_WAIT_POLICY")) return;
  const std::string command = argv[1];
  if (command != "tune" && command != "compile" && command != "run") return;
  ::setenv("OMP_WAIT_POLICY", "passive", /*overwrite=*/0);
  ::execv("/proc/self/exe", argv);  // returns only when it failed: carry on with OpenMP's default
}

int main(int argc, char** argv) {
  run_openmp_as_packages_do(argc, argv);
  if (argc < 2) return print_usage(stderr);
  const char* name = argv[1];
  if (!std::strcmp(name, "--version")) return print_version();
  if (!std::strcmp(name, "help") && argc > 2 && argv[2][0] != '-') return help_of(argc, argv);
  if (!std::strcmp(name, "help") || !std::strcmp(name, "--help") || !std::strcmp(name, "-h"))
    return print_usage(stdout);
  if (const Command* c = find_command(name)) return c->run(argc, argv, 2);
  return unknown_command(name);
}
