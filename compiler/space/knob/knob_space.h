// KnobSpace: the configuration space of a schedule template (TVM AutoTVM's
// ConfigSpace). A template defines named knobs from the DAG and the target;
// the space is their product, and a configuration is one point of it, named
// both by an index in [0, size()) and by the value every knob takes.
//
//   KnobSpace space;
//   space.define_split("tile_i", 1024, SplitPolicy::factors(), 3);   // [outer, middle, inner]
//   space.define_reorder_all("order", 3);                            // the 6 orders of 3 loops
//   space.define_knob("cache_b", {1, 0});
//   KnobConfig c = space.config(42).value();
//   c.get("tile_i")  // e.g. {64, 2, 8}
//
// Knobs are enumerated, not sampled: each holds its candidate values in a
// fixed order, so an index means the same configuration on every run and
// every machine. The first knob defined varies fastest with the index.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "compiler/schedule/step.h"

namespace tessera {

/// How define_split enumerates the sizes of one loop. A split into n outputs
/// is the vector [outer, f1, ..., f(n-1)], outer to inner.
struct SplitPolicy {
  enum class Kind : uint8_t {
    kFactors,     ///< every f divides the extent and outer * f1 * ... = extent (no guards)
    kPowerOfTwo,  ///< every f is a power of two, f1 * ... <= the extent rounded up to a
                  ///< power of two, outer = ceil(extent / (f1 * ...)) (guards when it does not divide)
    kTiles,       ///< every f divides the extent or is a power of two, f1 * ... <= the extent
                  ///< rounded up to a power of two, outer = ceil(extent / (f1 * ...)): the exact
                  ///< factorizations and the tile sizes that suit a target whatever the extent
                  ///< (a prime extent gets an 8 x 32 micro-kernel and a remainder); split in
                  ///< three, also every middle size that divides the count of inner tiles
                  ///< (257 = 9 tiles of 32: blocks of 3 or 9 tiles, none left part-empty)
  };
  Kind kind = Kind::kFactors;
  int64_t max_factor = 0;  ///< > 0: every inner size f1..f(n-1) is at most this

  /// All exact factorizations, optionally with inner sizes at most `max_factor`.
  static SplitPolicy factors(int64_t max_factor = 0) { return {Kind::kFactors, max_factor}; }
  /// Powers of two, optionally at most `max_factor`.
  static SplitPolicy power_of_two(int64_t max_factor = 0) { return {Kind::kPowerOfTwo, max_factor}; }
  /// Divisors and powers of two, optionally at most `max_factor`.
  static SplitPolicy tiles(int64_t max_factor = 0) { return {Kind::kTiles, max_factor}; }
};

/// What a knob's values mean (for printing and JSON; the values are integers).
enum class KnobKind : uint8_t {
  kSplit,     ///< loop sizes [outer, ..., inner]
  kReorder,   ///< a permutation of loop positions
  kAnnotate,  ///< one IterAnnotation per loop, as integers
  kChoice,    ///< one integer from a list (define_knob)
};
const char* knob_kind_name(KnobKind kind);

/// Keeps a split candidate when it returns true (sizes are [outer, ..., inner]).
using SplitFilter = std::function<bool(const std::vector<int64_t>& sizes)>;

/// One knob: its name, kind and candidate values in index order. Candidates
/// are distinct; a kChoice candidate has one element.
struct Knob {
  std::string name;
  KnobKind kind = KnobKind::kChoice;
  std::vector<std::vector<int64_t>> candidates;
  int64_t extent = 0;  ///< kSplit: the loop extent split
};

/// The value one knob takes in a configuration.
struct KnobValue {
  std::string name;
  KnobKind kind = KnobKind::kChoice;
  std::vector<int64_t> value;
};

class KnobSpace;

/// A point of a KnobSpace: its index and each knob's value, in definition
/// order. Made by KnobSpace (config, config_of, from_json), so the index and
/// the values always agree with the space that made it.
class KnobConfig {
 public:
  /// An empty configuration (of the space without knobs).
  KnobConfig() = default;

  /// The index in [0, space.size()).
  uint64_t index() const { return index_; }
  /// Every knob's value, in definition order.
  const std::vector<KnobValue>& values() const { return values_; }
  /// The value of knob `name`, or nullptr when the space has no such knob.
  const std::vector<int64_t>* find(std::string_view name) const;
  /// The value of knob `name`; the knob must exist (templates read the knobs
  /// they defined).
  const std::vector<int64_t>& get(std::string_view name) const;
  /// The single value of a kChoice knob.
  int64_t get_int(std::string_view name) const { return get(name).at(0); }

  /// "tile_i=[64, 2, 8] order=[2, 0, 1] cache_b=1"
  std::string to_string() const;
  /// {"index":42,"knobs":{"tile_i":[64,2,8],"unroll":["unroll","vectorize"],"cache_b":1}}
  /// Annotations appear by name, choices as a bare integer.
  std::string to_json() const;
  /// Parses to_json's text against `space`: the knob values decide the
  /// configuration; "index", when present, must agree. Malformed text is
  /// kParseError; an unknown, missing or out-of-space knob value, or an index
  /// that disagrees, is kInvalidArgument.
  static Result<KnobConfig> from_json(const std::string& text, const KnobSpace& space);

  /// Same index and the same value for every knob, in the same order.
  bool operator==(const KnobConfig& o) const;

 private:
  friend class KnobSpace;
  uint64_t index_ = 0;
  std::vector<KnobValue> values_;
};

/// The product space of named knobs. define_* refuse (and leave the space
/// as it was) a repeated name, an empty or duplicated candidate list, a knob
/// with more than kMaxCandidates values, or one that would make the space
/// larger than 2^64 - 1: size() is therefore always exact.
class KnobSpace {
 public:
  /// Most candidates one knob may enumerate.
  static constexpr uint64_t kMaxCandidates = uint64_t{1} << 22;

  /// Splits of a loop of `extent` into `num_outputs` sizes (>= 1) under
  /// `policy`, keeping those `filter` accepts, in lexicographic order of
  /// the inner sizes.
  Status define_split(const std::string& name, int64_t extent, SplitPolicy policy, int num_outputs,
                      const SplitFilter& filter = {});
  /// A choice among `orders`, each a permutation of 0..n-1 for one n.
  Status define_reorder(const std::string& name, std::vector<std::vector<int>> orders);
  /// Every permutation of `num_loops` loops (1..10), in lexicographic order.
  Status define_reorder_all(const std::string& name, int num_loops);
  /// One annotation per loop: loop i takes one of choices[i]; the
  /// candidates are their product, the first loop varying slowest.
  Status define_annotate(const std::string& name, const std::vector<std::vector<IterAnnotation>>& choices);
  /// A named choice among distinct `values` (block sizes, flags, locations).
  Status define_knob(const std::string& name, std::vector<int64_t> values);

  /// The number of configurations (1 for a space without knobs).
  uint64_t size() const { return size_; }
  /// The knobs in definition order.
  const std::vector<Knob>& knobs() const { return knobs_; }
  /// The knob named `name`, or nullptr.
  const Knob* find(std::string_view name) const;

  /// The configuration at `index`; kInvalidArgument when index >= size().
  Result<KnobConfig> config(uint64_t index) const;
  /// The configuration taking `values` (knob name -> value); every knob
  /// must be given exactly once with one of its candidates (kInvalidArgument).
  Result<KnobConfig> config_of(const std::vector<std::pair<std::string, std::vector<int64_t>>>& values) const;
  /// Whether `config` is a point of this space (same knobs, values, index).
  bool contains(const KnobConfig& config) const;

  /// One line per knob with its kind, candidate count, and the size.
  std::string to_string() const;

 private:
  Status add(Knob knob);

  std::vector<Knob> knobs_;
  uint64_t size_ = 1;
};

}  // namespace tessera
