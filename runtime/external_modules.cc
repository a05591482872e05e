#include "runtime/external_modules.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

namespace tessera::runtime {
namespace {

// The directory this runtime library was loaded from, "" when unknown.
std::string runtime_directory() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&external_module_candidates), &info) == 0 || !info.dli_fname) return "";
  const std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

template <typename Fn>
Fn symbol(void* handle, const char* name) {
  return reinterpret_cast<Fn>(dlsym(handle, name));
}

}  // namespace

std::vector<std::string> external_module_candidates(const std::string& library) {
  const std::string dir = runtime_directory();
  if (dir.empty() || library.empty() || library.find('/') != std::string::npos) return {};
  return {dir + "/" + library};
}

ExternalModules::~ExternalModules() {
  for (auto& [destroy, region] : regions_) destroy(region);
  for (Opened& m : modules_) dlclose(m.handle);
}

Status ExternalModules::open(const PackageContents& contents) {
  for (const ExternalModule& m : contents.externals) {
    if (m.kind != "graph-payload") continue;
    // A module's OpenMP threads (oneDNN's) wait passively between parallel
    // regions unless the user says otherwise: spinning, they fought the
    // executor's pool and the machine's other processes (ResNet-18's trunk
    // through dnnl: 218 ms spinning, 58 ms passive, 2 cores at load 9).
    // Read when the OpenMP runtime loads, i.e. with the module below.
    ::setenv("OMP_WAIT_POLICY", "passive", /*overwrite=*/0);
    void* handle = nullptr;
    std::string why;
    for (const std::string& path : external_module_candidates(m.library)) {
      if (::access(path.c_str(), F_OK) != 0) continue;
      // Never unloaded: a backend library keeps threads and global state
      // (oneDNN's OpenMP pool) that outlive one package.
      handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
      if (handle) break;
      const char* e = dlerror();
      why = e ? e : "cannot load";
    }
    if (!handle)
      return Status(ErrorCode::kNotFound,
                    "the package runs regions on the " + m.backend + " backend (" + m.kind +
                        "), whose runtime module " + m.library +
                        " is not on this device: install it next to libtessera_runtime.so (" +
                        (runtime_directory().empty() ? "its folder is unknown" : runtime_directory()) +
                        "; modules load from there only) (" + (why.empty() ? "not found" : why) + ")");
    Opened o{m.backend, handle, symbol<TesseraExternalCreateFn>(handle, "tessera_external_create"),
             symbol<TesseraExternalRunFn>(handle, "tessera_external_run"),
             symbol<TesseraExternalDestroyFn>(handle, "tessera_external_destroy")};
    auto version = symbol<TesseraExternalAbiVersionFn>(handle, "tessera_external_abi_version");
    modules_.push_back(o);
    if (!version || !o.create || !o.run || !o.destroy)
      return Status(ErrorCode::kInvalidArgument,
                    m.library + " is not a Tessera external module (an entry point is missing)");
    if (version() != TESSERA_EXTERNAL_ABI_VERSION)
      return Status(ErrorCode::kInvalidArgument, m.library + " speaks external ABI " + std::to_string(version()) +
                                                     ", this runtime " + std::to_string(TESSERA_EXTERNAL_ABI_VERSION));
  }
  payloads_ = contents.payloads;
  return Status::ok();
}

const ExternalPayload* ExternalModules::payload_for(const std::string& symbol) const {
  for (const ExternalPayload& p : payloads_)
    if (p.symbol == symbol) return &p;
  return nullptr;
}

Result<ExternalRegionCall> ExternalModules::create(const ExternalPayload& payload, void** args,
                                                   const std::vector<int64_t>& arg_bytes) {
  const Opened* module = nullptr;
  for (const Opened& m : modules_)
    if (m.backend == payload.backend) module = &m;
  if (!module)
    return Status(ErrorCode::kParseError, "payload " + payload.symbol + ": no module for backend " + payload.backend);
  char error[512] = {0};
  TesseraExternalRegion* region =
      module->create(payload.data.data(), static_cast<int64_t>(payload.data.size()), payload.version.c_str(), args,
                     arg_bytes.data(), static_cast<int64_t>(arg_bytes.size()), error, sizeof error);
  if (!region)
    return Status(ErrorCode::kParseError,
                  "the " + payload.backend + " module cannot build region " + payload.symbol + ": " + error);
  regions_.emplace_back(module->destroy, region);
  return ExternalRegionCall{module->run, region};
}

}  // namespace tessera::runtime
