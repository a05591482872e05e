// Running a command line from a test: its exit code and everything it
// printed (stdout and stderr, in order).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace tessera::test {

/// What a finished command left: its exit code (-1 if it did not exit) and
/// its output, stderr merged into stdout.
struct Output {
  int code = -1;
  std::string text;
};

/// Runs `command` through the shell and waits for it.
inline Output shell(const std::string& command) {
  Output out;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.text.append(buf, n);
  const int status = pclose(p);
  out.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

#ifdef TESSERA_BINARY
/// Runs the `tessera` binary of this build with `args`.
inline Output tessera(const std::string& args) {
  return shell(std::string(TESSERA_BINARY) + " " + args);
}
#endif

}  // namespace tessera::test
