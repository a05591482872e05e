// The `tessera` subcommands. Each lives in its own cmd_<name>.cc and is listed
// once in main.cc's table (kCommands).
#pragma once

namespace tessera::cli {

// Each returns the process exit code: 0 success, 1 failure, 2 usage error.
// argv[first] is the first word after the subcommand's name.
int run_records(int argc, char** argv, int first);
int run_tracker(int argc, char** argv, int first);
int run_worker(int argc, char** argv, int first);
int run_farm(int argc, char** argv, int first);
int run_keys(int argc, char** argv, int first);
int run_tune(int argc, char** argv, int first);
int run_space(int argc, char** argv, int first);
int run_compile(int argc, char** argv, int first);
int run_run(int argc, char** argv, int first);
int run_report(int argc, char** argv, int first);

}  // namespace tessera::cli
