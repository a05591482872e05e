#include "compiler/space/knob/knob_space.h"

#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "base/int_div.h"

namespace tessera {
namespace {

using Json = nlohmann::ordered_json;

Status invalid(const std::string& what) {
  return Status(ErrorCode::kInvalidArgument, what);
}

std::string list_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Divisors of n in increasing order, from its prime factorization (trial
// division stops at the square root of what is left, so powers of two and
// other smooth extents are quick even when huge).
std::vector<int64_t> divisors(int64_t n) {
  std::vector<std::pair<int64_t, int>> primes;
  for (int64_t p = 2; p <= n / p; ++p) {
    int e = 0;
    while (n % p == 0) {
      n /= p;
      ++e;
    }
    if (e) primes.emplace_back(p, e);
  }
  if (n > 1) primes.emplace_back(n, 1);
  std::vector<int64_t> out = {1};
  for (auto [p, e] : primes) {
    const size_t before = out.size();
    int64_t power = 1;
    for (int i = 0; i < e; ++i) {
      power *= p;
      for (size_t j = 0; j < before; ++j) out.push_back(out[j] * power);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Enumerates split candidates level by level (f1 first), so the inner sizes
// come out in lexicographic order.
class SplitEnumerator {
 public:
  SplitEnumerator(int64_t extent, SplitPolicy policy, int num_outputs, const SplitFilter& filter)
      : extent_(extent), policy_(policy), n_(num_outputs), filter_(filter) {
    std::set<int64_t> options;
    if (policy.kind != SplitPolicy::Kind::kPowerOfTwo)
      for (int64_t d : divisors(extent)) options.insert(d);
    if (policy.kind != SplitPolicy::Kind::kFactors)
      for (int64_t f = 1; f <= pow2_ceil(extent); f *= 2) options.insert(f);
    for (int64_t f : options)
      if (policy.max_factor <= 0 || f <= policy.max_factor) options_.push_back(f);
  }

  // False when more than KnobSpace::kMaxCandidates candidates were found.
  bool run(std::vector<std::vector<int64_t>>* out) {
    out_ = out;
    sizes_.assign(n_, 0);
    const int64_t start = policy_.kind == SplitPolicy::Kind::kFactors ? extent_ : pow2_ceil(extent_);
    // Count first (memoized, cheap) so that an absurd split fails at once
    // instead of after enumerating millions of candidates.
    if (count(1, start) > KnobSpace::kMaxCandidates * (filter_ ? 4 : 1)) return false;
    if (!visit(1, start)) return false;
    return policy_.kind != SplitPolicy::Kind::kTiles || n_ != 3 || add_whole_tile_blocks();
  }

 private:
  // Candidates from `level` on (before filtering), saturating above the cap.
  uint64_t count(int level, int64_t rest) {
    if (level == n_) return 1;
    auto key = std::make_pair(level, rest);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    uint64_t total = 0;
    for (int64_t f : options_) {
      if (f > rest) break;
      if (policy_.kind == SplitPolicy::Kind::kFactors && rest % f != 0) continue;
      total = std::min<uint64_t>(total + count(level + 1, rest / f), uint64_t{1} << 40);
    }
    return memo_[key] = total;
  }

  // `rest`: what the sizes from `level` on may still take (the remaining
  // quotient for kFactors, the remaining budget for kPowerOfTwo).
  bool visit(int level, int64_t rest) {
    if (level == n_) {
      sizes_[0] = policy_.kind == SplitPolicy::Kind::kFactors ? rest : ceil_div(extent_, inner_product());
      if (++visited_ > 4 * KnobSpace::kMaxCandidates) return false;
      if (!filter_ || filter_(sizes_)) out_->push_back(sizes_);
      return out_->size() <= KnobSpace::kMaxCandidates;
    }
    for (int64_t f : options_) {
      if (f > rest) break;
      if (policy_.kind == SplitPolicy::Kind::kFactors && rest % f != 0) continue;
      sizes_[level] = f;
      if (!visit(level + 1, rest / f)) return false;
    }
    return true;
  }
  // kTiles of three sizes: also the middle sizes that divide the
  // number of inner tiles, so that blocks of tiles cover an odd extent
  // evenly (257 columns are 9 tiles of 32: blocks of 3 tiles, where powers
  // of two gave blocks of 4 and a last block of 1 -- or, padded, of 4 again).
  bool add_whole_tile_blocks() {
    std::set<std::vector<int64_t>> seen(out_->begin(), out_->end());
    for (int64_t inner : options_) {
      const int64_t tiles = ceil_div(extent_, inner);
      for (int64_t d : divisors(tiles)) {
        if (policy_.max_factor > 0 && d > policy_.max_factor) continue;
        sizes_ = {tiles / d, d, inner};
        if (seen.count(sizes_) || (filter_ && !filter_(sizes_))) continue;
        seen.insert(sizes_);
        out_->push_back(sizes_);
        if (out_->size() > KnobSpace::kMaxCandidates) return false;
      }
    }
    // In the enumeration's order: by the middle size, then the inner one.
    std::sort(out_->begin(), out_->end(), [](const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
      return std::lexicographical_compare(a.begin() + 1, a.end(), b.begin() + 1, b.end());
    });
    return true;
  }

  int64_t inner_product() const {
    int64_t p = 1;
    for (int i = 1; i < n_; ++i) p *= sizes_[i];
    return p;
  }
  static int64_t pow2_ceil(int64_t n) {
    int64_t p = 1;
    while (p < n) p *= 2;
    return p;
  }

  int64_t extent_;
  SplitPolicy policy_;
  int n_;
  const SplitFilter& filter_;
  std::vector<int64_t> options_, sizes_;
  std::vector<std::vector<int64_t>>* out_ = nullptr;
  uint64_t visited_ = 0;
  std::map<std::pair<int, int64_t>, uint64_t> memo_;
};

const char* annotation_json_name(int64_t a) {
  return a >= 0 && a <= static_cast<int64_t>(IterAnnotation::kTensorize)
             ? annotation_name(static_cast<IterAnnotation>(a))
             : "?";
}

}  // namespace

const char* knob_kind_name(KnobKind kind) {
  switch (kind) {
    case KnobKind::kSplit: return "split";
    case KnobKind::kReorder: return "reorder";
    case KnobKind::kAnnotate: return "annotate";
    case KnobKind::kChoice: return "choice";
  }
  return "?";
}

// ---------------------------------------------------------------------------
// KnobSpace

Status KnobSpace::add(Knob knob) {
  if (knob.name.empty()) return invalid("a knob needs a name");
  if (find(knob.name)) return invalid("knob '" + knob.name + "' is defined twice");
  if (knob.candidates.empty()) return invalid("knob '" + knob.name + "' has no candidate values");
  if (knob.candidates.size() > kMaxCandidates)
    return invalid("knob '" + knob.name + "' has more than " + std::to_string(kMaxCandidates) + " values");
  std::set<std::vector<int64_t>> seen(knob.candidates.begin(), knob.candidates.end());
  if (seen.size() != knob.candidates.size()) return invalid("knob '" + knob.name + "' repeats a value");
  const uint64_t n = knob.candidates.size();
  if (size_ > std::numeric_limits<uint64_t>::max() / n)
    return invalid("knob '" + knob.name + "' (" + std::to_string(n) + " values) would make the space larger than " +
                   "2^64 - 1 configurations (it has " + std::to_string(size_) + " already)");
  size_ *= n;
  knobs_.push_back(std::move(knob));
  return Status::ok();
}

Status KnobSpace::define_split(const std::string& name, int64_t extent, SplitPolicy policy, int num_outputs,
                               const SplitFilter& filter) {
  if (extent < 1) return invalid("split knob '" + name + "': extent " + std::to_string(extent) + " must be positive");
  if (num_outputs < 1 || num_outputs > 16)
    return invalid("split knob '" + name + "': num_outputs " + std::to_string(num_outputs) + " must be in [1, 16]");
  Knob k{name, KnobKind::kSplit, {}, extent};
  if (!SplitEnumerator(extent, policy, num_outputs, filter).run(&k.candidates))
    return invalid("split knob '" + name + "' of extent " + std::to_string(extent) + " into " +
                   std::to_string(num_outputs) + " has more than " + std::to_string(kMaxCandidates) + " candidates");
  return add(std::move(k));
}

Status KnobSpace::define_reorder(const std::string& name, std::vector<std::vector<int>> orders) {
  Knob k{name, KnobKind::kReorder, {}, 0};
  for (const auto& order : orders) {
    if (order.size() != orders[0].size())
      return invalid("reorder knob '" + name + "': every order must list the same loops");
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i)
      if (sorted[i] != static_cast<int>(i))
        return invalid("reorder knob '" + name + "': an order must be a permutation of 0.." +
                       std::to_string(order.size() - 1));
    k.candidates.emplace_back(order.begin(), order.end());
  }
  return add(std::move(k));
}

Status KnobSpace::define_reorder_all(const std::string& name, int num_loops) {
  if (num_loops < 1 || num_loops > 10)
    return invalid("reorder knob '" + name + "': " + std::to_string(num_loops) + " loops (1..10 allowed)");
  std::vector<int> order(num_loops);
  for (int i = 0; i < num_loops; ++i) order[i] = i;
  std::vector<std::vector<int>> orders;
  do orders.push_back(order);
  while (std::next_permutation(order.begin(), order.end()));
  return define_reorder(name, std::move(orders));
}

Status KnobSpace::define_annotate(const std::string& name, const std::vector<std::vector<IterAnnotation>>& choices) {
  if (choices.empty()) return invalid("annotate knob '" + name + "' names no loops");
  uint64_t total = 1;
  for (const auto& c : choices) {
    if (c.empty()) return invalid("annotate knob '" + name + "': a loop has no choices");
    if (total > kMaxCandidates / c.size())
      return invalid("annotate knob '" + name + "' has more than " + std::to_string(kMaxCandidates) + " values");
    total *= c.size();
  }
  Knob k{name, KnobKind::kAnnotate, {}, 0};
  // Mixed radix with the last loop fastest: lexicographic over the loops.
  for (uint64_t i = 0; i < total; ++i) {
    std::vector<int64_t> v(choices.size());
    uint64_t rest = i;
    for (size_t a = choices.size(); a-- > 0;) {
      v[a] = static_cast<int64_t>(choices[a][rest % choices[a].size()]);
      rest /= choices[a].size();
    }
    k.candidates.push_back(std::move(v));
  }
  return add(std::move(k));
}

Status KnobSpace::define_knob(const std::string& name, std::vector<int64_t> values) {
  Knob k{name, KnobKind::kChoice, {}, 0};
  for (int64_t v : values) k.candidates.push_back({v});
  return add(std::move(k));
}

const Knob* KnobSpace::find(std::string_view name) const {
  for (const Knob& k : knobs_)
    if (k.name == name) return &k;
  return nullptr;
}

Result<KnobConfig> KnobSpace::config(uint64_t index) const {
  if (index >= size_)
    return invalid("configuration index " + std::to_string(index) + " is outside the space of " +
                   std::to_string(size_));
  KnobConfig c;
  c.index_ = index;
  uint64_t rest = index;
  for (const Knob& k : knobs_) {
    const uint64_t n = k.candidates.size();
    c.values_.push_back({k.name, k.kind, k.candidates[rest % n]});
    rest /= n;
  }
  return c;
}

Result<KnobConfig> KnobSpace::config_of(const std::vector<std::pair<std::string, std::vector<int64_t>>>& values) const {
  for (const auto& [name, value] : values)
    if (!find(name)) return invalid("the space has no knob '" + name + "'");
  uint64_t index = 0, stride = 1;
  KnobConfig c;
  for (const Knob& k : knobs_) {
    const std::vector<int64_t>* given = nullptr;
    for (const auto& [name, value] : values) {
      if (name != k.name) continue;
      if (given) return invalid("knob '" + k.name + "' is given twice");
      given = &value;
    }
    if (!given) return invalid("knob '" + k.name + "' is not given");
    auto at = std::find(k.candidates.begin(), k.candidates.end(), *given);
    if (at == k.candidates.end())
      return invalid("knob '" + k.name + "' cannot take " + list_text(*given) + " (it has " +
                     std::to_string(k.candidates.size()) + " " + knob_kind_name(k.kind) + " values)");
    index += static_cast<uint64_t>(at - k.candidates.begin()) * stride;
    stride *= k.candidates.size();  // no overflow: the product of all sizes fits
    c.values_.push_back({k.name, k.kind, *given});
  }
  c.index_ = index;
  return c;
}

bool KnobSpace::contains(const KnobConfig& config) const {
  auto c = this->config(config.index());
  return c.is_ok() && *c == config;
}

std::string KnobSpace::to_string() const {
  std::string s;
  for (const Knob& k : knobs_) {
    s += k.name + ": " + knob_kind_name(k.kind);
    if (k.kind == KnobKind::kSplit) s += " of " + std::to_string(k.extent);
    s += ", " + std::to_string(k.candidates.size()) + " values\n";
  }
  return s + "size: " + std::to_string(size_) + "\n";
}

// ---------------------------------------------------------------------------
// KnobConfig

const std::vector<int64_t>* KnobConfig::find(std::string_view name) const {
  for (const KnobValue& v : values_)
    if (v.name == name) return &v.value;
  return nullptr;
}

const std::vector<int64_t>& KnobConfig::get(std::string_view name) const {
  const std::vector<int64_t>* v = find(name);
  TESSERA_CHECK(v != nullptr) << "a template read the knob '" << name << "', which it did not define";
  return *v;
}

bool KnobConfig::operator==(const KnobConfig& o) const {
  if (index_ != o.index_ || values_.size() != o.values_.size()) return false;
  for (size_t i = 0; i < values_.size(); ++i)
    if (values_[i].name != o.values_[i].name || values_[i].kind != o.values_[i].kind ||
        values_[i].value != o.values_[i].value)
      return false;
  return true;
}

std::string KnobConfig::to_string() const {
  std::string s;
  for (const KnobValue& v : values_) {
    s += (s.empty() ? "" : " ") + v.name + "=";
    if (v.kind == KnobKind::kChoice) {
      s += std::to_string(v.value.at(0));
    } else if (v.kind == KnobKind::kAnnotate) {
      s += "[";
      for (size_t i = 0; i < v.value.size(); ++i) s += std::string(i ? ", " : "") + annotation_json_name(v.value[i]);
      s += "]";
    } else {
      s += list_text(v.value);
    }
  }
  return s;
}

std::string KnobConfig::to_json() const {
  Json knobs = Json::object();
  for (const KnobValue& v : values_) {
    if (v.kind == KnobKind::kChoice) {
      knobs[v.name] = v.value.at(0);
    } else if (v.kind == KnobKind::kAnnotate) {
      Json names = Json::array();
      for (int64_t a : v.value) names.push_back(annotation_json_name(a));
      knobs[v.name] = names;
    } else {
      knobs[v.name] = v.value;
    }
  }
  Json j;
  j["index"] = index_;
  j["knobs"] = knobs;
  return j.dump();
}

Result<KnobConfig> KnobConfig::from_json(const std::string& text, const KnobSpace& space) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto parse_error = [](const std::string& what) {
    return Status(ErrorCode::kParseError, "knob config JSON: " + what);
  };
  if (j.is_discarded()) return parse_error("not valid JSON");
  if (!j.is_object() || !j.contains("knobs") || !j["knobs"].is_object())
    return parse_error("expected {\"index\": ..., \"knobs\": {...}}");
  std::vector<std::pair<std::string, std::vector<int64_t>>> values;
  for (const auto& [name, value] : j["knobs"].items()) {
    const Knob* knob = space.find(name);
    if (!knob) return invalid("knob config JSON: the space has no knob '" + name + "'");
    std::vector<int64_t> v;
    if (knob->kind == KnobKind::kChoice) {
      if (!value.is_number_integer()) return parse_error("knob '" + name + "' must be an integer");
      v.push_back(value.get<int64_t>());
    } else {
      if (!value.is_array()) return parse_error("knob '" + name + "' must be an array");
      for (const Json& e : value) {
        if (knob->kind == KnobKind::kAnnotate && e.is_string()) {
          int64_t code = -1;
          for (int a = 0; a <= static_cast<int>(IterAnnotation::kTensorize); ++a)
            if (e.get<std::string>() == annotation_name(static_cast<IterAnnotation>(a))) code = a;
          if (code < 0) return parse_error("knob '" + name + "': unknown annotation '" + e.get<std::string>() + "'");
          v.push_back(code);
        } else if (e.is_number_integer()) {
          v.push_back(e.get<int64_t>());
        } else {
          return parse_error("knob '" + name + "' must hold integers");
        }
      }
    }
    values.emplace_back(name, std::move(v));
  }
  TESSERA_ASSIGN_OR_RETURN(KnobConfig c, space.config_of(values));
  if (j.contains("index")) {
    if (!j["index"].is_number_unsigned()) return parse_error("\"index\" must be a non-negative integer");
    const uint64_t index = j["index"].get<uint64_t>();
    if (index != c.index())
      return invalid("knob config JSON: index " + std::to_string(index) + " disagrees with the knob values (index " +
                     std::to_string(c.index()) + ")");
  }
  return c;
}

}  // namespace tessera
