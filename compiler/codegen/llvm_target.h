// What only LLVM knows about targets: the default triple, this machine's CPU
// and features, and whether LLVM agrees with a Target that base/target.h
// parsed from its own tables.
//
// A target a user types goes through parse_target, so that an unknown CPU or
// triple is an error before any work starts.
#pragma once

#include <string>
#include <vector>

#include "base/target.h"

namespace tessera {

/// Parses a target string a user typed: Target::parse, an omitted triple
/// filled with LLVM's default, then check_target. kTargetError when invalid.
Result<Target> parse_target(const std::string& text);

/// This machine: LLVM's default triple, the host CPU's name and the host's own
/// feature list (where it differs from the CPU's), and all its hardware threads.
Target host_target();

/// Checks `t` with LLVM: the triple and the CPU are known, and LLVM derives the
/// same vector width as the tables of base/target.h. kTargetError otherwise.
Status check_target(const Target& t);

/// The widest vector register LLVM enables for `t`'s triple, CPU and features;
/// kTargetError when LLVM does not know the triple or the CPU.
Result<int> llvm_vector_bits(const Target& t);

/// Whether LLVM enables the -mattr feature `name` (without '+', e.g.
/// "avx512vnni") for `t`'s triple, CPU and features: what the CPU implies,
/// less what `t` turns off. False for a triple LLVM does not know.
bool llvm_has_feature(const Target& t, const std::string& name);

/// The CPU names LLVM describes for `triple` (empty for an unknown triple).
std::vector<std::string> llvm_cpu_names(const std::string& triple);

/// The -mattr feature names (without '+') LLVM describes for `triple`.
std::vector<std::string> llvm_feature_names(const std::string& triple);

}  // namespace tessera
