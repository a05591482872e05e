// Targets: what code generation compiles for, parsed from a string a user can
// type, e.g. "llvm -mtriple=x86_64-linux-gnu -mcpu=icelake-server" or
// "llvm -mtriple=aarch64-linux-gnu -mattr=+neon -num-cores=4".
//
// Code generation never asks the machine it runs on; it asks the Target.
#pragma once

#include <string>
#include <vector>

#include "runtime/dtype.h"
#include "runtime/status.h"

namespace tessera {

struct Target {
  std::string triple;                 ///< "x86_64-linux-gnu", "aarch64-linux-gnu"
  std::string cpu;                    ///< LLVM CPU name; "generic" when not given
  std::vector<std::string> features;  ///< "+avx512f", "-avx512fp16", ... as given or implied
  int vector_bits = 128;              ///< widest SIMD register in use
  int num_cores = 1;                  ///< threads a parallel loop may use
  int64_t l1_bytes = 32 * 1024, l2_bytes = 1024 * 1024, l3_bytes = 16 * 1024 * 1024;

  /// Parses a target string; unknown options, triples and CPUs are errors.
  static Result<Target> parse(const std::string& text);
  /// This machine: host triple, CPU name and the host's own feature list.
  static Target host();

  bool is_x86() const;
  bool is_aarch64() const;
  bool has_feature(const std::string& name) const;  ///< name without '+'
  /// Lanes of `t` that fill one vector register (16 for f32 on AVX-512).
  int vector_lanes(DType t) const { return vector_bits / (t.bits < 8 ? 8 : t.bits); }
  /// The canonical string: parse(to_string()) gives an equal target.
  std::string to_string() const;
  /// The features joined for LLVM ("+a,+b").
  std::string feature_string() const;
};

}  // namespace tessera
