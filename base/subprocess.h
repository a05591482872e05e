// Running a helper program (a C compiler, the linker) to completion with its
// output captured in a file: the one posix_spawn + waitpid of the project.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/status.h"

extern char** environ;

namespace tessera {

/// How a program run by run_logged ended.
struct ProgramExit {
  int spawn_error = 0;  ///< errno of posix_spawn (ENOENT: not found); then nothing ran
  int status = 0;       ///< waitpid's status
  bool ok() const { return spawn_error == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};

/// Runs `args` (args[0] the program, looked up on PATH when `search_path`)
/// with stdout and stderr written to `log`, and waits for it. kIOError only
/// when waiting fails; a program that cannot start or fails is in the exit.
inline Result<ProgramExit> run_logged(std::vector<std::string> args, const std::string& log, bool search_path) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  ProgramExit exit;
  exit.spawn_error = search_path ? posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ)
                                 : posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (exit.spawn_error != 0) return exit;
  while (waitpid(pid, &exit.status, 0) < 0)
    if (errno != EINTR) return Status(ErrorCode::kIOError, "waiting for " + args[0] + ": " + std::strerror(errno));
  return exit;
}

/// The whole contents of file `path` ("" when it cannot be read).
inline std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace tessera
