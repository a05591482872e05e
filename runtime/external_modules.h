// The runtime modules of graph-payload backends (bring your own codegen): a
// package whose regions run on such a backend (dnnl) needs the backend's
// module, a shared library (libtessera_dnnl.so) that the runtime core opens
// with dlopen only when such a package loads. external_abi.h is the contract.
//
//   ExternalModules modules;
//   TESSERA_RETURN_IF_ERROR(modules.open(contents));           // finds and opens each module
//   ExternalRegionCall call = modules.create(payload, args).value();  // primitives built now
//   call.run(call.region, args);                                // per run
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/external_abi.h"
#include "runtime/package.h"

namespace tessera::runtime {

/// One region a module built, ready to run.
struct ExternalRegionCall {
  TesseraExternalRunFn run = nullptr;
  TesseraExternalRegion* region = nullptr;
};

/// Where a module is looked for: the directory of the runtime library
/// (libtessera_runtime.so) only. A package names its modules, and a name
/// found on dlopen's search path (LD_LIBRARY_PATH, the system's libraries)
/// would let a package make its loader run any library's code; empty when
/// the runtime's folder is unknown or `library` is not a plain file name.
std::vector<std::string> external_module_candidates(const std::string& library);

/// The open modules of one package and the regions they built. Move-less:
/// regions are destroyed, then modules closed, on destruction.
class ExternalModules {
 public:
  ExternalModules() = default;
  ExternalModules(const ExternalModules&) = delete;
  ExternalModules& operator=(const ExternalModules&) = delete;
  ~ExternalModules();

  /// Opens the module of every graph-payload backend `contents` lists.
  /// Errors: kNotFound naming the backend and the library to install (no
  /// such library, or it does not load: dlerror() quoted), kInvalidArgument
  /// (a module of another ABI version, or lacking an entry point).
  Status open(const PackageContents& contents);

  /// The payload a call with `symbol` runs, or null (a kernel of the library).
  const ExternalPayload* payload_for(const std::string& symbol) const;

  /// Builds `payload`'s region over `args` (the call's buffers, constants
  /// filled; args[i] is arg_bytes[i] bytes long). Errors: kParseError with
  /// the module's reason (a corrupt or unsupported payload, or one that
  /// does not fit the buffers).
  Result<ExternalRegionCall> create(const ExternalPayload& payload, void** args, const std::vector<int64_t>& arg_bytes);

 private:
  struct Opened {
    std::string backend;
    void* handle = nullptr;
    TesseraExternalCreateFn create = nullptr;
    TesseraExternalRunFn run = nullptr;
    TesseraExternalDestroyFn destroy = nullptr;
  };
  std::vector<Opened> modules_;
  std::vector<ExternalPayload> payloads_;
  std::vector<std::pair<TesseraExternalDestroyFn, TesseraExternalRegion*>> regions_;
};

}  // namespace tessera::runtime
