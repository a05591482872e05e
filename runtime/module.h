// A loaded kernel library: the shared object the builder produced, opened with
// dlopen, from which kernels are looked up by symbol.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "runtime/c_abi.h"

namespace tessera::runtime {

/// Asks Linux, once a process, for the AMX tile registers (arch_prctl
/// ARCH_REQ_XCOMP_PERM of XFEATURE_XTILEDATA) and remembers the answer:
/// kUnavailable, with the reason, where the CPU or the kernel has none. A
/// process that will filter its system calls asks before it does.
Status request_tile_registers();

/// An open kernel library. Move-only; closing (dlclose) happens on destruction,
/// after which kernel pointers taken from it must not be called.
class Module {
 public:
  /// Opens the shared library at `path` with RTLD_NOW | RTLD_LOCAL: every
  /// undefined symbol (e.g. tessera_parallel_launch) resolves now, from the
  /// process. A path without '/' is taken relative to the working directory,
  /// never searched for. Errors: kNotFound (no such file), kIOError (dlopen
  /// refused; the message names the file and quotes dlerror()), and
  /// kUnavailable for a module that runs products on AMX tiles
  /// (TESSERA_TILE_MODULE_SYMBOL) where the process may not use them.
  static Result<Module> load(const std::string& path);

  /// Opens a library received as bytes: checks them (check_shared_object:
  /// an ELF shared object for this machine, nothing cut short), writes them
  /// to a private temporary file (mkstemp) in `temp_dir`, opens it, and
  /// unlinks it whether or not the open succeeded. Errors: kIOError (not
  /// such a library, cannot write the file, or dlopen refused).
  static Result<Module> load_from_bytes(std::string_view bytes, const std::string& temp_dir);

  /// The kernel named `symbol`; kNotFound (naming the symbol and the file) when absent.
  Result<TesseraKernelFn> get_kernel(const std::string& symbol) const;

  /// The argument table the library exports for kernel `symbol` (its count,
  /// then each argument's bytes: TESSERA_KERNEL_ARGS_SUFFIX, c_abi.h), or
  /// null when it exports none.
  const int64_t* kernel_arguments(const std::string& symbol) const;

  /// The file the library was opened from (for load_from_bytes, the unlinked temp file).
  const std::string& path() const { return path_; }

  Module(Module&& other) noexcept;
  Module& operator=(Module&& other) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  ~Module();

 private:
  Module(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  /// The opened library, once the tile registers it needs are granted.
  static Result<Module> opened(void* handle, const std::string& path);
  void close();

  void* handle_ = nullptr;
  std::string path_;
};

}  // namespace tessera::runtime
