#include "compiler/external/c_compiler.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "base/subprocess.h"

namespace tessera::external {
namespace {

std::string read_all(const std::string& path) {
  return read_file_bytes(path);
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
  if (!dir.ok())
    return Status(ErrorCode::kIOError, std::string("cannot create a temporary directory: ") + std::strerror(errno));
  const std::string src = dir.file("region.c"), obj = dir.file("region.o"), log = dir.file("cc.log");
  {
    std::ofstream out(src, std::ios::binary);
    out << source;
    if (!out) return Status(ErrorCode::kIOError, "cannot write " + src);
  }
  TESSERA_ASSIGN_OR_RETURN(ProgramExit exit,
                           run_logged({cc, "-c", "-O2", "-fPIC", "-std=c11", "-fno-math-errno", "-o", obj, src}, log,
                                      /*search_path=*/true));
  // posix_spawnp may also report a missing program as exit status 127.
  const bool missing = exit.spawn_error == ENOENT ||
                       (exit.spawn_error == 0 && WIFEXITED(exit.status) && WEXITSTATUS(exit.status) == 127 &&
                        access(obj.c_str(), F_OK) != 0 && read_all(log).empty());
  if (missing)
    return Status(ErrorCode::kNotFound, "no C compiler: '" + cc + "' is not on PATH (install " +
                                            (cc == "cc" ? std::string("gcc or clang") : "gcc-aarch64-linux-gnu") +
                                            "; C-source backends compile their regions with it)");
  if (exit.spawn_error != 0)
    return Status(ErrorCode::kIOError, "cannot start " + cc + ": " + std::strerror(exit.spawn_error));
  if (!exit.ok()) return Status(ErrorCode::kCodegenError, cc + " failed on the generated C source: " + read_all(log));
  return read_all(obj);
}

}  // namespace tessera::external
