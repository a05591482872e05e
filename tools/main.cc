// `tessera`: one binary, one subcommand per job.
#include <cstdio>
#include <cstring>

#include "tools/commands.h"

namespace {

struct Command {
  const char* name;
  int (*run)(int argc, char** argv, int first);
  const char* summary;
};

// One line per subcommand, in the order `tessera help` lists them.
constexpr Command kCommands[] = {
    {"help", nullptr, "this list"},
    {"space", tessera::cli::run_space, "show the search space of an operator: knobs, sketches, random samples"},
    {"tune", tessera::cli::run_tune, "search fast schedules for operators or a whole ONNX model, on local workers or a farm"},
    {"compile", tessera::cli::run_compile, "compile an ONNX model with the best records into one package file"},
    {"run", tessera::cli::run_run, "run a compiled package on this machine: inputs from files, outputs to files, latency"},
    {"records", tessera::cli::run_records, "list, compare, export, import and prune measurement records"},
    {"tracker", tessera::cli::run_tracker, "the measurement farm's tracker: queues per device key, workers, results"},
    {"worker", tessera::cli::run_worker, "a measuring worker: runs each job in an isolated child process"},
    {"farm", tessera::cli::run_farm, "farm status: workers per key, busy/idle, queues, done and failed"},
    {"keys", tessera::cli::run_keys, "generate CURVE keypairs for the tracker, workers and clients"},
};

int print_usage(FILE* out) {
  std::fprintf(out, "usage: tessera <command> [options]\n\ncommands:\n");
  for (const auto& c : kCommands) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
  std::fprintf(out, "\n`tessera <command> --help` describes one command.\n");
  return out == stdout ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return print_usage(stderr);
  const char* name = argv[1];
  if (!std::strcmp(name, "help") || !std::strcmp(name, "--help") || !std::strcmp(name, "-h"))
    return print_usage(stdout);
  for (const auto& c : kCommands)
    if (c.run && !std::strcmp(c.name, name)) return c.run(argc, argv, 2);
  std::fprintf(stderr, "tessera: unknown command '%s'\n\n", name);
  return print_usage(stderr);
}
