#include "runtime/module.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "runtime/c_abi.h"
#include "runtime/elf_check.h"

namespace tessera::runtime {
namespace {

std::string last_dl_error() {
  const char* message = dlerror();
  return message != nullptr ? message : "unknown dlopen error";
}

Status write_all(int fd, std::string_view bytes, const std::string& path) {
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return Status(ErrorCode::kIOError,
                    "cannot write module bytes to " + path + ": " + std::strerror(n < 0 ? errno : EIO));
    }
    written += static_cast<size_t>(n);
  }
  return Status::ok();
}

}  // namespace

Status request_tile_registers() {
  static std::once_flag once;
  static int error = 0;
  std::call_once(once, [] {
#if defined(__x86_64__)
    constexpr int kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) error = errno;
#else
    error = ENOTSUP;
#endif
  });
  if (error == 0) return Status::ok();
  return Status(ErrorCode::kUnavailable, std::string("this process may not use the AMX tile registers (") +
                                             std::strerror(error) + "): the CPU or the kernel lacks them");
}

// A module that runs products on AMX tiles gets the registers before any of
// its kernels runs, or is closed with the reason.
Result<Module> Module::opened(void* handle, const std::string& path) {
  if (dlsym(handle, TESSERA_TILE_MODULE_SYMBOL) != nullptr) {
    if (Status tiles = request_tile_registers(); !tiles.is_ok()) {
      dlclose(handle);
      return tiles.with_context("module " + path + " runs products on AMX tiles");
    }
  }
  return Module(handle, path);
}

Result<Module> Module::load(const std::string& path) {
  // dlopen searches the library path for a bare name; a module is a file.
  const std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  struct stat info;
  if (::stat(file.c_str(), &info) != 0 && errno == ENOENT) {
    return Status(ErrorCode::kNotFound, "module " + path + ": no such file");
  }
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return Status(ErrorCode::kIOError, "cannot load module " + path + ": " + last_dl_error());
  }
  return opened(handle, path);
}

Result<Module> Module::load_from_bytes(std::string_view bytes, const std::string& temp_dir) {
  // dlopen would map a cut-short file past its end and die of SIGBUS.
  if (Status elf = check_shared_object(bytes); !elf.is_ok())
    return Status(ErrorCode::kIOError,
                  "cannot load module from " + std::to_string(bytes.size()) + " bytes: " + elf.message());
  std::string name = (temp_dir.empty() ? std::string(".") : temp_dir) + "/tessera-module-XXXXXX";
  std::vector<char> buffer(name.begin(), name.end());
  buffer.push_back('\0');
  const int fd = ::mkstemp(buffer.data());
  if (fd < 0) {
    return Status(ErrorCode::kIOError,
                  "cannot create a temporary module file in " + temp_dir + ": " + std::strerror(errno));
  }
  name.assign(buffer.data());
  Status written = write_all(fd, bytes, name);
  if (::close(fd) != 0 && written.is_ok()) {
    written = Status(ErrorCode::kIOError, "cannot write module bytes to " + name + ": " + std::strerror(errno));
  }
  if (!written.is_ok()) {
    ::unlink(name.c_str());
    return written;
  }
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  // The mapping keeps the library alive; the name is not needed any more.
  ::unlink(name.c_str());
  if (handle == nullptr) {
    return Status(ErrorCode::kIOError, "cannot load module from " + std::to_string(bytes.size()) + " bytes (" + name +
                                           "): " + last_dl_error());
  }
  return opened(handle, name);
}

Result<TesseraKernelFn> Module::get_kernel(const std::string& symbol) const {
  if (handle_ == nullptr) {
    return Status(ErrorCode::kNotFound, "kernel " + symbol + ": the module is not open");
  }
  dlerror();  // clear a stale error so the one below is ours
  void* address = dlsym(handle_, symbol.c_str());
  if (address == nullptr) {
    return Status(ErrorCode::kNotFound, "no kernel " + symbol + " in module " + path_ + ": " + last_dl_error());
  }
  return reinterpret_cast<TesseraKernelFn>(address);
}

const int64_t* Module::kernel_arguments(const std::string& symbol) const {
  if (handle_ == nullptr) return nullptr;
  return static_cast<const int64_t*>(dlsym(handle_, (symbol + TESSERA_KERNEL_ARGS_SUFFIX).c_str()));
}

Module::Module(Module&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), path_(std::move(other.path_)) {}

Module& Module::operator=(Module&& other) noexcept {
  if (this != &other) {
    close();
    handle_ = std::exchange(other.handle_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

Module::~Module() {
  close();
}

void Module::close() {
  if (handle_ != nullptr) dlclose(handle_);
  handle_ = nullptr;
}

}  // namespace tessera::runtime
