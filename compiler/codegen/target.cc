#include "compiler/codegen/target.h"

#include <algorithm>
#include <mutex>
#include <sstream>
#include <thread>

#include <llvm/ADT/StringMap.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include "compiler/codegen/llvm_init.h"

namespace tessera {
namespace {

Status target_error(const std::string& text, const std::string& why) {
  return Status(ErrorCode::kTargetError, "target '" + text + "': " + why);
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

// The widest vectors and the cache sizes a target implies.
void derive_properties(Target* t, const llvm::MCSubtargetInfo& sti) {
  if (t->is_x86()) {
    if (sti.checkFeatures("+avx512f")) t->vector_bits = 512;
    else if (sti.checkFeatures("+avx")) t->vector_bits = 256;
    else t->vector_bits = 128;
  } else {
    t->vector_bits = 128;  // NEON
  }
}

}  // namespace

bool Target::is_x86() const { return triple.rfind("x86_64", 0) == 0; }
bool Target::is_aarch64() const { return triple.rfind("aarch64", 0) == 0 || triple.rfind("arm64", 0) == 0; }

bool Target::has_feature(const std::string& name) const {
  return std::find(features.begin(), features.end(), "+" + name) != features.end();
}

std::string Target::feature_string() const {
  std::string s;
  for (const auto& f : features) s += (s.empty() ? "" : ",") + f;
  return s;
}

std::string Target::to_string() const {
  std::string s = "llvm -mtriple=" + triple;
  if (cpu != "generic") s += " -mcpu=" + cpu;
  if (!features.empty()) s += " -mattr=" + feature_string();
  s += " -num-cores=" + std::to_string(num_cores);
  return s;
}

Result<Target> Target::parse(const std::string& text) {
  ensure_llvm_initialized();
  std::istringstream in(text);
  std::string word;
  if (!(in >> word) || word != "llvm") return target_error(text, "must start with 'llvm'");
  Target t;
  t.cpu = "generic";
  bool has_cores = false;
  while (in >> word) {
    auto eq = word.find('=');
    std::string key = word.substr(0, eq), value = eq == std::string::npos ? "" : word.substr(eq + 1);
    if (eq == std::string::npos || value.empty()) return target_error(text, "option '" + word + "' needs a value");
    if (key == "-mtriple") t.triple = value;
    else if (key == "-mcpu") t.cpu = value;
    else if (key == "-mattr") t.features = split_commas(value);
    else if (key == "-num-cores") {
      try {
        t.num_cores = std::stoi(value);
      } catch (...) {
        return target_error(text, "-num-cores wants a number");
      }
      if (t.num_cores < 1) return target_error(text, "-num-cores must be at least 1");
      has_cores = true;
    } else {
      return target_error(text, "unknown option '" + key + "' (accepted: -mtriple, -mcpu, -mattr, -num-cores)");
    }
  }
  if (t.triple.empty()) t.triple = llvm::sys::getDefaultTargetTriple();
  for (const auto& f : t.features)
    if (f.size() < 2 || (f[0] != '+' && f[0] != '-')) return target_error(text, "feature '" + f + "' must start with + or -");
  std::string error;
  llvm::Triple triple(t.triple);
  const llvm::Target* llvm_target = llvm::TargetRegistry::lookupTarget(t.triple, error);
  if (!llvm_target) return target_error(text, "unknown triple '" + t.triple + "': " + error);
  if (!t.is_x86() && !t.is_aarch64()) return target_error(text, "only x86_64 and aarch64 are supported");
  // Check the CPU name on a generic description first: LLVM prints a warning
  // when asked to describe a CPU it does not know.
  std::unique_ptr<llvm::MCSubtargetInfo> generic(llvm_target->createMCSubtargetInfo(t.triple, "generic", ""));
  if (!generic) return target_error(text, "LLVM cannot describe this target");
  if (t.cpu != "generic" && !generic->isCPUStringValid(t.cpu))
    return target_error(text, "LLVM does not know the CPU '" + t.cpu + "' for " + t.triple);
  std::unique_ptr<llvm::MCSubtargetInfo> sti(llvm_target->createMCSubtargetInfo(t.triple, t.cpu, t.feature_string()));
  derive_properties(&t, *sti);
  if (!has_cores) t.num_cores = t.is_aarch64() ? 4 : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return t;
}

Target Target::host() {
  ensure_llvm_initialized();
  // The host's CPU name can undersell it (LLVM calls some AMX machines
  // "rocketlake"); its feature list is the truth. Only the features where the
  // host differs from the named CPU are written, so the string stays short.
  std::string triple = llvm::sys::getDefaultTargetTriple();
  std::string cpu(llvm::sys::getHostCPUName());
  std::string error;
  const llvm::Target* llvm_target = llvm::TargetRegistry::lookupTarget(triple, error);
  std::unique_ptr<llvm::MCSubtargetInfo> sti(
      llvm_target ? llvm_target->createMCSubtargetInfo(triple, cpu, "") : nullptr);
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
  auto t = parse(text);
  if (t.is_ok()) return *t;
  return *parse("llvm -mtriple=" + llvm::sys::getDefaultTargetTriple());
}

}  // namespace tessera
