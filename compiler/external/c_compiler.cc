#include "compiler/external/c_compiler.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

extern char** environ;

namespace tessera::external {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A private directory for the source, the object and the compiler's log,
// removed with them.
class ScratchDir {
 public:
  ScratchDir() {
    char templ[] = "/tmp/tessera-cc-XXXXXX";
    if (mkdtemp(templ)) path_ = templ;
  }
  ~ScratchDir() {
    for (const char* f : {"region.c", "region.o", "cc.log"}) unlink((path_ + "/" + f).c_str());
    if (!path_.empty()) rmdir(path_.c_str());
  }
  bool ok() const { return !path_.empty(); }
  std::string file(const char* name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace

std::string c_compiler_for(const Target& target) {
#if defined(__aarch64__)
  const bool native = target.is_aarch64();
#else
  const bool native = !target.is_aarch64();
#endif
  return native ? "cc" : "aarch64-linux-gnu-gcc";
}

Result<std::string> compile_c_object(const std::string& source, const Target& target, const std::string& compiler) {
  const std::string cc = compiler.empty() ? c_compiler_for(target) : compiler;
  ScratchDir dir;
  if (!dir.ok()) return Status(ErrorCode::kIOError, std::string("cannot create a temporary directory: ") + std::strerror(errno));
  const std::string src = dir.file("region.c"), obj = dir.file("region.o"), log = dir.file("cc.log");
  {
    std::ofstream out(src, std::ios::binary);
    out << source;
    if (!out) return Status(ErrorCode::kIOError, "cannot write " + src);
  }
  std::vector<std::string> args = {cc, "-c", "-O2", "-fPIC", "-std=c11", "-fno-math-errno", "-o", obj, src};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid;
  const int rc = posix_spawnp(&pid, cc.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc == ENOENT)
    return Status(ErrorCode::kNotFound, "no C compiler: '" + cc + "' is not on PATH (install " +
                                            (cc == "cc" ? std::string("gcc or clang") : "gcc-aarch64-linux-gnu") +
                                            "; C-source backends compile their regions with it)");
  if (rc != 0) return Status(ErrorCode::kIOError, "cannot start " + cc + ": " + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return Status(ErrorCode::kIOError, std::string("waiting for the C compiler: ") + std::strerror(errno));
  // posix_spawnp may report a missing program as exit status 127 instead.
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && access(obj.c_str(), F_OK) != 0 && read_all(log).empty())
    return Status(ErrorCode::kNotFound, "no C compiler: '" + cc + "' is not on PATH");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Status(ErrorCode::kCodegenError, cc + " failed on the generated C source: " + read_all(log));
  return read_all(obj);
}

}  // namespace tessera::external
