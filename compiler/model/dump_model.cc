#include "compiler/model/dump_model.h"

#include <errno.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "compiler/codegen/llvm_codegen.h"
#include "compiler/ir/printer.h"

namespace tessera::model {
namespace {

Status write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status(ErrorCode::kIOError, "cannot write " + path + ": " + std::strerror(errno));
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.flush();
  if (!out) return Status(ErrorCode::kIOError, "cannot write " + path);
  return Status::ok();
}

const char* extension(DumpKind kind) {
  switch (kind) {
    case DumpKind::kIr: return ".ir";
    case DumpKind::kLlvmIr: return ".ll";
    case DumpKind::kAssembly: return ".s";
  }
  return "";
}

Result<std::string> kernel_text(const PrimFunc& func, const Target& target, DumpKind kind) {
  switch (kind) {
    case DumpKind::kIr: return to_string(func);
    case DumpKind::kLlvmIr: return emit_llvm_ir({func}, target);
    case DumpKind::kAssembly: return emit_assembly({func}, target);
  }
  return Status(ErrorCode::kInternal, "unknown dump kind");
}

// The index line's tail for `symbol`: its workload key and its calls' nodes,
// from the package's call metadata.
std::string calls_of(const runtime::PackageContents& package, const std::string& symbol, std::string* key) {
  std::string calls;
  for (size_t i = 0; i < package.calls.size() && i < package.call_info.size(); ++i) {
    if (package.calls[i].symbol != symbol) continue;
    const runtime::CallInfo& info = package.call_info[i];
    *key = info.workload_key;
    std::string nodes;
    for (const std::string& n : info.nodes) nodes += (nodes.empty() ? "" : "; ") + n;
    calls += (calls.empty() ? "" : " | ") + nodes;
  }
  return calls;
}

}  // namespace

const char* dump_kind_name(DumpKind kind) {
  switch (kind) {
    case DumpKind::kIr: return "ir";
    case DumpKind::kLlvmIr: return "ll";
    case DumpKind::kAssembly: return "asm";
  }
  return "unknown";
}

Status dump_kernels(const CompiledModel& model, const Target& target, DumpKind kind, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    return Status(ErrorCode::kIOError, "cannot create the dump directory " + dir + ": " +
                                           (ec ? ec.message() : "a file of that name exists"));
  std::string index = "symbol\tfile\tworkload_key\tlabel\tnodes\n";
  for (size_t k = 0; k < model.kernels.size() && k < model.lowered.size(); ++k) {
    const KernelInfo& kernel = model.kernels[k];
    auto text = kernel_text(model.lowered[k], target, kind);
    if (!text.is_ok()) return text.status().with_context(std::string("dumping ") + kernel.symbol);
    const std::string file = kernel.symbol + extension(kind);
    TESSERA_RETURN_IF_ERROR(write_file(dir + "/" + file, *text));
    std::string key;
    const std::string nodes = calls_of(model.package, kernel.symbol, &key);
    index += kernel.symbol + "\t" + file + "\t" + key + "\t" + kernel.label + "\t" + nodes + "\n";
  }
  return write_file(dir + "/index.tsv", index);
}

}  // namespace tessera::model
