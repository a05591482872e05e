#include "compiler/codegen/llvm_target.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <memory>

#include "compiler/codegen/llvm_init.h"

namespace tessera {
namespace {

Status target_error(const Target& t, const std::string& why) {
  return Status(ErrorCode::kTargetError, "target '" + t.to_string() + "': " + why);
}

const llvm::Target* lookup(const std::string& triple, std::string* error) {
  ensure_llvm_initialized();
  return llvm::TargetRegistry::lookupTarget(triple, *error);
}

// A description of `triple`'s generic CPU: the lists of CPUs and features.
std::unique_ptr<llvm::MCSubtargetInfo> generic_info(const std::string& triple) {
  std::string error;
  const llvm::Target* target = lookup(triple, &error);
  if (!target) return nullptr;
  return std::unique_ptr<llvm::MCSubtargetInfo>(target->createMCSubtargetInfo(triple, "generic", ""));
}

}  // namespace

Result<int> llvm_vector_bits(const Target& t) {
  std::string error;
  const llvm::Target* llvm_target = lookup(t.triple, &error);
  if (!llvm_target) return target_error(t, "unknown triple '" + t.triple + "': " + error);
  // Check the CPU name on a generic description first: LLVM prints a warning
  // when asked to describe a CPU it does not know.
  std::unique_ptr<llvm::MCSubtargetInfo> generic(llvm_target->createMCSubtargetInfo(t.triple, "generic", ""));
  if (!generic) return target_error(t, "LLVM cannot describe this target");
  if (t.cpu != "generic" && !generic->isCPUStringValid(t.cpu))
    return target_error(t, "LLVM does not know the CPU '" + t.cpu + "' for " + t.triple);
  // LLVM ignores a feature it does not know (with a warning on stderr); a
  // target named with one would file records under a name no machine has.
  for (const std::string& f : t.features) {
    const std::string name = f.empty() || (f[0] != '+' && f[0] != '-') ? f : f.substr(1);
    const auto known = generic->getAllProcessorFeatures();
    if (std::none_of(known.begin(), known.end(), [&](const llvm::SubtargetFeatureKV& kv) { return name == kv.Key; }))
      return target_error(t, "LLVM does not know the -mattr feature '" + name + "' for " + t.triple);
  }
  std::unique_ptr<llvm::MCSubtargetInfo> sti(llvm_target->createMCSubtargetInfo(t.triple, t.cpu, t.feature_string()));
  if (!t.is_x86()) return 128;  // NEON
  if (sti->checkFeatures("+avx512f")) return 512;
  return sti->checkFeatures("+avx") ? 256 : 128;
}

bool llvm_has_feature(const Target& t, const std::string& name) {
  std::string error;
  const llvm::Target* llvm_target = lookup(t.triple, &error);
  if (!llvm_target) return false;
  std::unique_ptr<llvm::MCSubtargetInfo> sti(llvm_target->createMCSubtargetInfo(t.triple, t.cpu, t.feature_string()));
  return sti && sti->checkFeatures("+" + name);
}

Status check_target(const Target& t) {
  TESSERA_ASSIGN_OR_RETURN(int bits, llvm_vector_bits(t));
  if (bits != t.vector_bits)
    return target_error(t, "LLVM enables " + std::to_string(bits) + "-bit vectors where base/target.h's tables say " +
                               std::to_string(t.vector_bits) + " (the tables need updating)");
  return Status::ok();
}

Result<Target> parse_target(const std::string& text) {
  TESSERA_ASSIGN_OR_RETURN(Target t, Target::parse(text));
  if (t.triple.empty()) t.triple = llvm::sys::getDefaultTargetTriple();
  TESSERA_RETURN_IF_ERROR(check_target(t));
  return t;
}

Target host_target() {
  ensure_llvm_initialized();
  // The host's CPU name can undersell it (LLVM calls some AMX machines
  // "rocketlake"); its feature list is the truth. Only the features where the
  // host differs from the named CPU are written, so the string stays short.
  std::string triple = llvm::sys::getDefaultTargetTriple();
  std::string cpu(llvm::sys::getHostCPUName());
  std::string error;
  const llvm::Target* llvm_target = llvm::TargetRegistry::lookupTarget(triple, error);
  std::unique_ptr<llvm::MCSubtargetInfo> sti(llvm_target ? llvm_target->createMCSubtargetInfo(triple, cpu, "")
                                                         : nullptr);
  std::vector<std::string> names;
  for (const auto& f : llvm::sys::getHostCPUFeatures()) {
    std::string name = f.first().str();
    bool cpu_has = sti && sti->checkFeatures("+" + name);
    if (f.second != cpu_has) names.push_back((f.second ? "+" : "-") + name);
  }
  std::sort(names.begin(), names.end());
  std::string attrs;
  for (const auto& n : names) attrs += (attrs.empty() ? "" : ",") + n;
  std::string text = "llvm -mtriple=" + triple + " -mcpu=" + cpu;
  if (!attrs.empty()) text += " -mattr=" + attrs;
  auto t = parse_target(text);
  if (t.is_ok()) return *t;
  return *parse_target("llvm -mtriple=" + llvm::sys::getDefaultTargetTriple());
}

std::vector<std::string> llvm_cpu_names(const std::string& triple) {
  std::vector<std::string> names;
  if (auto info = generic_info(triple))
    for (const auto& cpu : info->getAllProcessorDescriptions()) names.emplace_back(cpu.Key);
  return names;
}

std::vector<std::string> llvm_feature_names(const std::string& triple) {
  std::vector<std::string> names;
  if (auto info = generic_info(triple))
    for (const auto& feature : info->getAllProcessorFeatures()) names.emplace_back(feature.Key);
  return names;
}

}  // namespace tessera
