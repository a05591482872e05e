#include "compiler/codegen/link.h"

#include <lld/Common/Driver.h>
#include <llvm/Support/raw_ostream.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "base/subprocess.h"

LLD_HAS_DRIVER(elf)

namespace tessera {
namespace {

Status io_error(const std::string& what) {
  return Status(ErrorCode::kIOError, what + ": " + std::strerror(errno));
}

// A private temporary directory removed with everything in it.
class TempDir {
 public:
  TempDir() {
    const char* base = "/tmp";
    std::string templ = std::string(base) + "/tessera-link-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data())) path_ = buf.data();
  }
  ~TempDir() {
    for (const auto& f : files_) unlink(f.c_str());
    if (!path_.empty()) rmdir(path_.c_str());
  }
  bool ok() const { return !path_.empty(); }
  std::string file(const std::string& name) {
    files_.push_back(path_ + "/" + name);
    return files_.back();
  }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

bool write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

}  // namespace

Result<std::string> find_lld() {
  for (const char* p : {"/usr/bin/ld.lld-19", "/usr/lib/llvm-19/bin/ld.lld", "/usr/bin/ld.lld"})
    if (access(p, X_OK) == 0) return std::string(p);
  return Status(ErrorCode::kCodegenError, "the lld linker is not installed (Debian package lld-19)");
}

Result<std::string> link_shared_library(const std::vector<std::string>& objects, const Target& target,
                                        const std::vector<std::string>& libraries) {
  TESSERA_ASSIGN_OR_RETURN(std::string lld, find_lld());
  TempDir dir;
  if (!dir.ok()) return io_error("cannot create a temporary directory");
  std::vector<std::string> argv_storage = {lld, "-shared", "--hash-style=gnu", "-O1", "--as-needed"};
  argv_storage.push_back("-m");
  argv_storage.push_back(target.is_aarch64() ? "aarch64linux" : "elf_x86_64");
  for (size_t i = 0; i < objects.size(); ++i) {
    std::string path = dir.file("k" + std::to_string(i) + ".o");
    if (!write_file(path, objects[i])) return io_error("cannot write " + path);
    argv_storage.push_back(path);
  }
  if (!libraries.empty()) {
    // lld has no default search path: the target's multiarch directory.
    const std::string multiarch = target.is_aarch64() ? "aarch64-linux-gnu" : "x86_64-linux-gnu";
    for (const std::string& d : {"/usr/lib/" + multiarch, "/lib/" + multiarch, std::string("/usr/lib")})
      argv_storage.push_back("-L" + d);
    for (const std::string& lib : libraries) argv_storage.push_back("-l" + lib);
  }
  std::string out = dir.file("kernel.so");
  argv_storage.push_back("-o");
  argv_storage.push_back(out);
  // lld as a library: re-entrant but not concurrent, hence the lock. It saves
  // the 15+ ms of starting the linker process.
  static std::mutex lld_mutex;
  std::string diagnostics;
  bool can_run_again = true;
  {
    std::lock_guard<std::mutex> lock(lld_mutex);
    std::vector<const char*> args;
    for (const auto& a : argv_storage) args.push_back(a.c_str());
    llvm::raw_string_ostream os(diagnostics);
    lld::Result r = lld::lldMain(args, os, os, {{lld::Gnu, &lld::elf::link}});
    os.flush();
    can_run_again = r.canRunAgain;
    if (r.retCode == 0) return read_file_bytes(out);
  }
  if (can_run_again) return Status(ErrorCode::kCodegenError, "lld failed: " + diagnostics);
  // lld's state is unusable after a crash; fall back to the linker process.
  const std::string log = dir.file("lld.log");
  TESSERA_ASSIGN_OR_RETURN(ProgramExit exit, run_logged(argv_storage, log, /*search_path=*/false));
  if (exit.spawn_error != 0) {
    errno = exit.spawn_error;
    return io_error("cannot start " + lld);
  }
  if (!exit.ok()) return Status(ErrorCode::kCodegenError, "lld failed: " + read_file_bytes(log));
  return read_file_bytes(out);
}

}  // namespace tessera
