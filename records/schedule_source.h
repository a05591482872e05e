// RecordsScheduleSource: the compiler's ScheduleSource answered from a records
// database — the best measured schedules of a workload on the target asked
// for, or, when that target has none, on a compatible one.
//
// records/ may not depend on compiler/codegen, so targets are judged with a
// light reading of their strings (TargetTraits): the triple, the CPU and the
// -mattr features, and from them the widest vector register. The compiler side
// (compiler/space/apply_best.h) checks each proposed step list still replays.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/schedule/schedule_source.h"
#include "records/store.h"

namespace tessera::records {

/// What a target string says about compatibility, read without LLVM.
struct TargetTraits {
  std::string triple;                 ///< from -mtriple; empty when not given (the build host's)
  std::string cpu;                    ///< from -mcpu; "generic" when not given
  std::vector<std::string> features;  ///< from -mattr, as written ("+avx2", "-avx512f")
  int num_cores = 0;                  ///< from -num-cores; 0 when not given
  /// The widest SIMD register in bits: x86 512 (AVX-512F), 256 (AVX/AVX2) or
  /// 128; aarch64 128 (NEON). nullopt when the string does not tell (an
  /// unknown CPU name, an unknown architecture, no triple).
  std::optional<int> vector_bits;
};

/// Reads `-mtriple=`, `-mcpu=`, `-mattr=` and `-num-cores=` out of a target
/// string such as "llvm -mtriple=x86_64-linux-gnu -mcpu=icelake-server".
/// Other words are ignored; nothing here fails.
TargetTraits parse_target_traits(std::string_view target);

/// True when schedules measured on `b` suit `a`: the same non-empty triple and
/// the same known vector width (the CPU model, features and core count may
/// differ).
bool compatible_targets(const TargetTraits& a, const TargetTraits& b);

/// A ScheduleSource over a Store: for (key, target) the best `k` successful
/// records on exactly that target string, best first (ties to the earlier
/// record); when there are none, the best `k` over every compatible target
/// (lowest mean cost first, then target string, then record id). The store is
/// borrowed and must outlive the source; use it from one thread.
class RecordsScheduleSource final : public ScheduleSource {
 public:
  /// `k` >= 1: how many candidates to propose, so that a record that no longer
  /// replays leaves others to try.
  explicit RecordsScheduleSource(Store& store, int64_t k = 5) : store_(store), k_(k < 1 ? 1 : k) {}

  /// See ScheduleSource::candidates. kInvalidArgument for a malformed
  /// workload key; database errors as the store reports them.
  Result<std::vector<ScheduleCandidate>> candidates(const std::string& workload_key,
                                                    const std::string& target) override;

 private:
  Result<std::vector<ScheduleCandidate>> compatible_candidates(const std::string& workload_key,
                                                               const std::string& target);

  Store& store_;
  int64_t k_;
};

}  // namespace tessera::records
