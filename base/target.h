// Targets as values: what code generation compiles for, parsed from a string a
// user can type, e.g. "llvm -mtriple=x86_64-linux-gnu -mcpu=icelake-server" or
// "llvm -mtriple=aarch64-linux-gnu -mattr=+neon -num-cores=4".
//
// The parser needs no LLVM: the CPU names LLVM 19 knows and the vector width
// each CPU and -mattr feature implies are tables below, checked against LLVM
// by tests/compiler/codegen/target_test.cc. compiler/codegen/llvm_target.h adds
// what only LLVM knows: the default triple, the host CPU and its features.
//
// Code generation never asks the machine it runs on; it asks the Target.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"

namespace tessera {

/// The most cores a target may name (-num-cores): a parallel loop is cut
/// into tasks for each, so a typo of 999999 would build kernels that spend
/// their time launching.
inline constexpr int kMaxCores = 1024;

/// A compilation target: triple, CPU, features and what they imply.
struct Target {
  /// "x86_64-linux-gnu", "aarch64-linux-gnu"; empty when the string names
  /// none: the machine's own (codegen's parse_target fills in LLVM's default).
  std::string triple;
  std::string cpu = "generic";        ///< LLVM CPU name
  std::vector<std::string> features;  ///< "+avx512f", "-avx512fp16", ... as given
  int vector_bits = 128;              ///< widest SIMD register in use
  /// x86's matrix unit (AMX): tile products of u8 x s8 (TDPBUSD) and of
  /// bfloat16 pairs (TDPBF16PS), as the CPU and the features give them.
  bool amx_int8 = false, amx_bf16 = false;
  int num_cores = 1;  ///< threads a parallel loop may use
  int64_t l1_bytes = 32 * 1024, l2_bytes = 1024 * 1024, l3_bytes = 16 * 1024 * 1024;

  /// Parses a target string without LLVM: unknown options, architectures
  /// (only x86_64 and aarch64) and CPUs are kTargetError. Vector width and
  /// cache sizes come from the tables; -num-cores defaults to 4 on aarch64 and
  /// to this machine's hardware threads on x86.
  static Result<Target> parse(const std::string& text);

  /// x86-64 (by the triple; an empty triple means this machine's architecture).
  bool is_x86() const;
  /// AArch64 (aarch64 or arm64 triples; an empty triple as in is_x86).
  bool is_aarch64() const;
  /// Whether -mattr enables `name` (given without '+').
  bool has_feature(const std::string& name) const {
    return std::find(features.begin(), features.end(), "+" + name) != features.end();
  }
  /// Lanes of `t` that fill one vector register (16 for f32 on AVX-512).
  int vector_lanes(DType t) const { return vector_bits / (t.bits < 8 ? 8 : t.bits); }
  /// Architectural vector registers: 32 with AVX-512 or on AArch64, else 16.
  int vector_registers() const { return is_aarch64() || vector_bits >= 512 ? 32 : 16; }
  /// True when schedules tuned for `other` suit this target: the same
  /// non-empty triple and vector width (CPU model, features and cores may differ).
  /// (A schedule that runs products on AMX tiles needs them here too: the
  /// records say so by their steps, records/records_schedule_source.cc.)
  bool shares_schedules_with(const Target& other) const {
    return !triple.empty() && triple == other.triple && vector_bits == other.vector_bits;
  }
  /// The canonical string: parse(to_string()) gives an equal target.
  std::string to_string() const;
  /// What tells targets apart, for tables and messages: the architecture,
  /// the CPU, the features it adds and the cores ("x86_64 znver4, 2 cores";
  /// "aarch64 neon dotprod, 4 cores"). The features a host target turns
  /// off (-mwaitx, ...) are left out; to_string() has everything.
  std::string short_name() const;
  /// The features joined for LLVM ("+a,+b").
  std::string feature_string() const;
};

namespace target_tables {

// LLVM 19's x86-64 CPU names by the widest vector register their features
// enable (AVX-512F: 512, AVX: 256, else 128), aliases included.
// (Tables of names, filled to the line.)
// clang-format off
inline constexpr std::string_view kX86Cpus512[] = {
    "cannonlake", "cascadelake", "cooperlake", "emeraldrapids", "graniterapids", "graniterapids-d",
    "graniterapids_d", "icelake-client", "icelake-server", "icelake_client", "icelake_server", "knl",
    "knm", "mic_avx512", "rocketlake", "sapphirerapids", "skx", "skylake-avx512", "skylake_avx512",
    "tigerlake", "x86-64-v4", "znver4", "znver5"};
inline constexpr std::string_view kX86Cpus256[] = {
    "alderlake", "arrowlake", "arrowlake-s", "arrowlake_s", "bdver1", "bdver2", "bdver3", "bdver4",
    "broadwell", "btver2", "clearwaterforest", "core-avx-i", "core-avx2", "core_2nd_gen_avx",
    "core_3rd_gen_avx", "core_4th_gen_avx", "core_4th_gen_avx_tsx", "core_5th_gen_avx",
    "core_5th_gen_avx_tsx", "corei7-avx", "gracemont", "grandridge", "haswell", "ivybridge",
    "lunarlake", "meteorlake", "pantherlake", "raptorlake", "sandybridge", "sierraforest", "skylake",
    "x86-64-v3", "znver1", "znver2", "znver3"};
inline constexpr std::string_view kX86Cpus128[] = {
    "amdfam10", "athlon", "athlon-4", "athlon-fx", "athlon-mp", "athlon-tbird", "athlon-xp",
    "athlon64", "athlon64-sse3", "atom", "atom_sse4_2", "atom_sse4_2_movbe", "barcelona", "bonnell",
    "btver1", "c3", "c3-2", "core2", "core_2_duo_sse4_1", "core_2_duo_ssse3", "core_aes_pclmulqdq",
    "core_i7_sse4_2", "corei7", "generic", "geode", "goldmont", "goldmont-plus", "goldmont_plus",
    "i386", "i486", "i586", "i686", "k6", "k6-2", "k6-3", "k8", "k8-sse3", "lakemont", "nehalem",
    "nocona", "opteron", "opteron-sse3", "penryn", "pentium", "pentium-m", "pentium-mmx", "pentium2",
    "pentium3", "pentium3m", "pentium4", "pentium4m", "pentium_4", "pentium_4_sse3", "pentium_ii",
    "pentium_iii", "pentium_iii_no_xmm_regs", "pentium_m", "pentium_mmx", "pentium_pro", "pentiumpro",
    "prescott", "silvermont", "slm", "tremont", "westmere", "winchip-c6", "winchip2", "x86-64",
    "x86-64-v2", "yonah"};
// LLVM 19's AArch64 CPU names; every one has 128-bit NEON registers (SVE is
// not used).
inline constexpr std::string_view kAarch64Cpus[] = {
    "a64fx", "ampere1", "ampere1a", "ampere1b", "apple-a10", "apple-a11", "apple-a12", "apple-a13",
    "apple-a14", "apple-a15", "apple-a16", "apple-a17", "apple-a7", "apple-m4", "carmel", "cortex-a34",
    "cortex-a35", "cortex-a510", "cortex-a520", "cortex-a520ae", "cortex-a53", "cortex-a55",
    "cortex-a57", "cortex-a65", "cortex-a65ae", "cortex-a710", "cortex-a715", "cortex-a72",
    "cortex-a720", "cortex-a720ae", "cortex-a725", "cortex-a73", "cortex-a75", "cortex-a76",
    "cortex-a76ae", "cortex-a77", "cortex-a78", "cortex-a78ae", "cortex-a78c", "cortex-r82",
    "cortex-r82ae", "cortex-x1", "cortex-x1c", "cortex-x2", "cortex-x3", "cortex-x4", "cortex-x925",
    "exynos-m3", "exynos-m4", "exynos-m5", "falkor", "generic", "kryo", "neoverse-512tvb",
    "neoverse-e1", "neoverse-n1", "neoverse-n2", "neoverse-n3", "neoverse-v1", "neoverse-v2",
    "neoverse-v3", "neoverse-v3ae", "oryon-1", "saphira", "thunderx", "thunderx2t99", "thunderx3t110",
    "thunderxt81", "thunderxt83", "thunderxt88", "tsv110"};
// LLVM 19's x86-64 CPU names whose features include AMX (amx-tile, amx-int8
// and amx-bf16 together).
inline constexpr std::string_view kX86CpusAmx[] = {
    "emeraldrapids", "graniterapids", "graniterapids-d", "graniterapids_d", "sapphirerapids"};
// clang-format on

// x86 -mattr features by what they do to the vector width, as LLVM applies
// them after the CPU's own, in order: '+' raises the width to at least the
// feature's, '-' lowers it to at most what is left without the feature and
// everything that implies it. Every "avx512*" and "avx10*" feature implies
// AVX-512F; every other "avx*" implies AVX.
inline constexpr std::string_view kX86Features256[] = {  // besides "avx*": imply AVX
    "f16c", "fma", "fma4", "sha512", "sm3", "sm4", "vaes", "vpclmulqdq", "xop"};
inline constexpr std::string_view kX86Removal128[] = {  // without these: no AVX
    "avx", "sse", "sse2", "sse3", "sse4.1", "sse4.2", "ssse3"};
inline constexpr std::string_view kX86Removal256[] = {  // without these: no AVX-512F
    "avx2", "avx512f", "f16c", "fma"};

/// Cache sizes by architecture (there is no per-CPU row: the tuner reads
/// them, and a row would change what it measures).
struct CacheSizes {
  int64_t l1_bytes, l2_bytes, l3_bytes;
};
inline constexpr CacheSizes kX86Caches{32 * 1024, 1024 * 1024, 16 * 1024 * 1024};
inline constexpr CacheSizes kAarch64Caches{32 * 1024, 1024 * 1024, 16 * 1024 * 1024};

/// The architecture of the machine this code runs on: what an empty triple means.
#if defined(__x86_64__)
inline constexpr std::string_view kNativeArch = "x86_64";
#elif defined(__aarch64__)
inline constexpr std::string_view kNativeArch = "aarch64";
#else
inline constexpr std::string_view kNativeArch = "";
#endif

template <size_t N>
bool listed(const std::string_view (&names)[N], std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

inline bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

inline bool x86_triple(std::string_view triple) {
  return starts_with(triple.empty() ? kNativeArch : triple, "x86_64");
}
inline bool aarch64_triple(std::string_view triple) {
  const std::string_view t = triple.empty() ? kNativeArch : triple;
  return starts_with(t, "aarch64") || starts_with(t, "arm64");
}

/// The vector width of a known x86 CPU with `features` applied in order.
inline int x86_vector_bits(std::string_view cpu, const std::vector<std::string>& features) {
  int bits = listed(kX86Cpus512, cpu) ? 512 : listed(kX86Cpus256, cpu) ? 256 : 128;
  for (const std::string& f : features) {
    const std::string_view name = std::string_view(f).substr(1);
    if (f[0] == '+') {
      if (starts_with(name, "avx512") || starts_with(name, "avx10"))
        bits = 512;
      else if (starts_with(name, "avx") || listed(kX86Features256, name))
        bits = std::max(bits, 256);
    } else if (listed(kX86Removal128, name)) {
      bits = 128;
    } else if (listed(kX86Removal256, name)) {
      bits = std::min(bits, 256);
    }
  }
  return bits;
}

/// AMX's tile products on a known x86 CPU with `features` applied in order,
/// as LLVM applies them: amx-int8 and amx-bf16 each imply amx-tile, and
/// without amx-tile there are neither.
struct AmxUnits {
  bool int8 = false, bf16 = false;
};
inline AmxUnits x86_amx_units(std::string_view cpu, const std::vector<std::string>& features) {
  AmxUnits u;
  u.int8 = u.bf16 = listed(kX86CpusAmx, cpu);
  for (const std::string& f : features) {
    const bool on = f[0] == '+';
    const std::string_view name = std::string_view(f).substr(1);
    if (name == "amx-int8") u.int8 = on;
    if (name == "amx-bf16") u.bf16 = on;
    if (name == "amx-tile" && !on) u.int8 = u.bf16 = false;
  }
  return u;
}

inline std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

inline Status target_error(const std::string& text, const std::string& why) {
  return Status(ErrorCode::kTargetError, "target '" + text + "': " + why);
}

/// Reads the options into `t`; syntax errors only.
inline Status read_options(const std::string& text, Target* t, bool* has_cores) {
  std::istringstream in(text);
  std::string word;
  if (!(in >> word) || word != "llvm") return target_error(text, "must start with 'llvm'");
  while (in >> word) {
    const size_t eq = word.find('=');
    const std::string key = word.substr(0, eq), value = eq == std::string::npos ? "" : word.substr(eq + 1);
    if (eq == std::string::npos || value.empty()) return target_error(text, "option '" + word + "' needs a value");
    if (key == "-mtriple")
      t->triple = value;
    else if (key == "-mcpu")
      t->cpu = value;
    else if (key == "-mattr")
      t->features = split_commas(value);
    else if (key == "-num-cores") {
      try {
        t->num_cores = std::stoi(value);
      } catch (...) {
        return target_error(text, "-num-cores wants a number");
      }
      if (t->num_cores < 1) return target_error(text, "-num-cores must be at least 1");
      if (t->num_cores > kMaxCores)
        return target_error(text, "-num-cores " + value + " is more than " + std::to_string(kMaxCores) +
                                      ", the most a parallel loop is split for");
      *has_cores = true;
    } else {
      return target_error(text, "unknown option '" + key + "' (accepted: -mtriple, -mcpu, -mattr, -num-cores)");
    }
  }
  for (const auto& f : t->features)
    if (f.size() < 2 || (f[0] != '+' && f[0] != '-'))
      return target_error(text, "feature '" + f + "' must start with + or -");
  return Status::ok();
}

}  // namespace target_tables

inline bool Target::is_x86() const {
  return target_tables::x86_triple(triple);
}
inline bool Target::is_aarch64() const {
  return target_tables::aarch64_triple(triple);
}

inline std::string Target::feature_string() const {
  std::string s;
  for (const auto& f : features) s.append(s.empty() ? "" : ",").append(f);
  return s;
}

inline std::string Target::to_string() const {
  std::string s = "llvm";
  if (!triple.empty()) s.append(" -mtriple=").append(triple);
  if (cpu != "generic") s.append(" -mcpu=").append(cpu);
  if (!features.empty()) s.append(" -mattr=").append(feature_string());
  s.append(" -num-cores=").append(std::to_string(num_cores));
  return s;
}

inline std::string Target::short_name() const {
  std::string s = is_aarch64() ? "aarch64" : "x86_64";
  if (cpu != "generic") s.append(" ").append(cpu);
  for (const std::string& f : features)
    if (f.size() > 1 && f[0] == '+') s.append(" ").append(f.substr(1));
  return s + ", " + std::to_string(num_cores) + (num_cores == 1 ? " core" : " cores");
}

/// Target::short_name of a target string; the string itself when it does
/// not parse (a record written by another version, say).
inline std::string short_target_name(const std::string& text) {
  Result<Target> t = Target::parse(text);
  return t.is_ok() ? t->short_name() : text;
}

inline Result<Target> Target::parse(const std::string& text) {
  namespace tt = target_tables;
  Target t;
  bool has_cores = false;
  TESSERA_RETURN_IF_ERROR(tt::read_options(text, &t, &has_cores));
  const std::string arch = t.triple.empty() ? "this machine's " + std::string(tt::kNativeArch) : t.triple;
  if (!t.is_x86() && !t.is_aarch64())
    return tt::target_error(text, "unknown triple '" + t.triple + "': only x86_64 and aarch64 are supported");
  const bool known_cpu = t.is_x86() ? tt::listed(tt::kX86Cpus512, t.cpu) || tt::listed(tt::kX86Cpus256, t.cpu) ||
                                          tt::listed(tt::kX86Cpus128, t.cpu)
                                    : tt::listed(tt::kAarch64Cpus, t.cpu);
  if (!known_cpu) return tt::target_error(text, "LLVM does not know the CPU '" + t.cpu + "' for " + arch);
  t.vector_bits = t.is_x86() ? tt::x86_vector_bits(t.cpu, t.features) : 128;  // NEON
  if (t.is_x86()) {
    const tt::AmxUnits amx = tt::x86_amx_units(t.cpu, t.features);
    t.amx_int8 = amx.int8;
    t.amx_bf16 = amx.bf16;
  }
  const tt::CacheSizes caches = t.is_x86() ? tt::kX86Caches : tt::kAarch64Caches;
  t.l1_bytes = caches.l1_bytes;
  t.l2_bytes = caches.l2_bytes;
  t.l3_bytes = caches.l3_bytes;
  if (!has_cores)
    t.num_cores = t.is_aarch64() ? 4 : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return t;
}

}  // namespace tessera
