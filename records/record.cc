#include "records/record.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>

namespace tessera::records {

const char* space_kind_name(SpaceKind kind) {
  switch (kind) {
    case SpaceKind::kKnob: return "knob";
    case SpaceKind::kSketch: return "sketch";
    case SpaceKind::kManual: return "manual";
  }
  return "unknown";
}

Result<SpaceKind> parse_space_kind(std::string_view name) {
  for (SpaceKind kind : {SpaceKind::kKnob, SpaceKind::kSketch, SpaceKind::kManual})
    if (name == space_kind_name(kind)) return kind;
  return Status(ErrorCode::kInvalidArgument,
                "unknown space kind '" + std::string(name) + "' (expected knob, sketch or manual)");
}

double Record::mean_cost() const {
  if (costs.empty()) return std::numeric_limits<double>::infinity();
  return std::accumulate(costs.begin(), costs.end(), 0.0) / static_cast<double>(costs.size());
}

const Record* best_of(const std::vector<Record>& records) {
  const Record* best = nullptr;
  for (const Record& r : records) {
    if (!r.ok()) continue;
    const double c = r.mean_cost();
    if (!best || c < best->mean_cost() || (c == best->mean_cost() && r.id != 0 && best->id != 0 && r.id < best->id))
      best = &r;
  }
  return best;
}

bool is_infrastructure_error(std::string_view error_kind, std::string_view error_message) {
  return error_kind == "no-worker" || error_kind == "protocol-error" || error_kind == "no-result" ||
         error_kind == "measurement-error" ||
         (error_kind == "timeout" && error_message.substr(0, 23) == "no result from the farm");
}

bool is_valid_workload_key(std::string_view key) {
  if (key.size() != 32) return false;
  for (char c : key)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

namespace {

// A strict scanner for JSON that is already in canonical form, i.e. exactly what
// nlohmann's dump() prints: no whitespace, object keys strictly increasing,
// plain integers, ASCII strings without escapes. The tuner's step lists come out
// of dump() and pass; anything else (even if valid JSON) takes the slow path.
class CanonicalScanner {
 public:
  explicit CanonicalScanner(std::string_view text) : s_(text) {}

  bool scan() { return value(0) && i_ == s_.size(); }

 private:
  bool value(int depth) {
    if (i_ >= s_.size() || depth > 64) return false;
    switch (s_[i_]) {
      case '{': return object(depth);
      case '[': return array(depth);
      case '"': return string(nullptr);
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default: return integer();
    }
  }

  bool object(int depth) {
    ++i_;
    if (i_ < s_.size() && s_[i_] == '}') return ++i_, true;
    std::string_view previous;
    for (bool first = true;; first = false) {
      std::string_view key;
      if (!string(&key) || (!first && !(previous < key))) return false;
      previous = key;
      if (i_ >= s_.size() || s_[i_++] != ':' || !value(depth + 1)) return false;
      if (i_ >= s_.size()) return false;
      char c = s_[i_++];
      if (c == '}') return true;
      if (c != ',') return false;
    }
  }

  bool array(int depth) {
    ++i_;
    if (i_ < s_.size() && s_[i_] == ']') return ++i_, true;
    for (;;) {
      if (!value(depth + 1) || i_ >= s_.size()) return false;
      char c = s_[i_++];
      if (c == ']') return true;
      if (c != ',') return false;
    }
  }

  bool string(std::string_view* out) {
    size_t start = ++i_;
    for (; i_ < s_.size(); ++i_) {
      unsigned char c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        if (out) *out = s_.substr(start, i_ - start);
        return ++i_, true;
      }
      if (c == '\\' || c < 0x20 || c >= 0x7f) return false;
    }
    return false;
  }

  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }

  bool integer() {
    size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    size_t digits = i_;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    size_t n = i_ - digits;
    if (n == 0 || n > 18) return false;                                // longer ones may not be int64
    if (s_[digits] == '0' && (n > 1 || digits > start)) return false;  // "01", "-0"
    return true;
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

bool is_canonical_json(std::string_view json) {
  return CanonicalScanner(json).scan();
}

bool json_too_deep(std::string_view json) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

Result<std::string> canonical_json(std::string_view json, std::string_view what) {
  if (is_canonical_json(json)) return std::string(json);
  if (json_too_deep(json))
    return Status(ErrorCode::kInvalidArgument,
                  std::string(what) + " nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  // nlohmann keeps object keys in a std::map, so dump() sorts them; numbers
  // print in their shortest round-trip form.
  nlohmann::json value = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return Status(ErrorCode::kInvalidArgument, std::string(what) + " is not valid JSON");
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

int64_t steps_hash(std::string_view text) {
  // MurmurHash64A, 8 bytes a round, with little-endian loads so that the value
  // stored in a database is the same on every machine.
  constexpr uint64_t kMul = 0xc6a4a7935bd1e995ull;
  constexpr int kShift = 47;
  auto load = [](const char* p, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
    return v;
  };
  uint64_t h = 0x5453524453544550ull ^ (text.size() * kMul);
  const char* p = text.data();
  size_t rounds = text.size() / 8;
  for (size_t i = 0; i < rounds; ++i, p += 8) {
    uint64_t k = load(p, 8);
    k *= kMul;
    k ^= k >> kShift;
    k *= kMul;
    h ^= k;
    h *= kMul;
  }
  if (size_t rest = text.size() % 8) {
    h ^= load(p, rest);
    h *= kMul;
  }
  h ^= h >> kShift;
  h *= kMul;
  h ^= h >> kShift;
  return static_cast<int64_t>(h);
}

double unix_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

namespace {

bool is_error_kind_word(std::string_view kind) {
  if (kind.empty()) return false;
  for (char c : kind)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  return true;
}

bool is_finite_non_negative(double v) {
  return std::isfinite(v) && v >= 0;
}

}  // namespace

Result<Record> normalize_record(Record r, double now) {
  auto bad = [&](const std::string& why) {
    return Status(ErrorCode::kInvalidArgument, "record of workload '" + r.workload_key + "': " + why);
  };
  if (!is_valid_workload_key(r.workload_key)) return bad("workload key must be 32 lowercase hex characters");
  if (r.target.empty()) return bad("target is empty");
  if (!is_error_kind_word(r.error_kind))
    return bad("error kind '" + r.error_kind + "' is not a lowercase kebab-case word");
  if (r.ok() && r.costs.empty()) return bad("an ok record needs at least one cost");
  if (r.ok() && r.infrastructure) return bad("an ok record cannot be an infrastructure error");
  for (double c : r.costs)
    if (!is_finite_non_negative(c)) return bad("costs must be finite and non-negative");
  if (!is_finite_non_negative(r.build_seconds) || !is_finite_non_negative(r.run_seconds))
    return bad("build and run seconds must be finite and non-negative");
  if (!std::isfinite(r.timestamp) || r.timestamp < 0) return bad("timestamp must be a finite time");
  if (r.session_id < 0) return bad("session id must not be negative");

  auto steps = canonical_json(r.steps_json, "step list");
  if (!steps) return bad(steps.status().message());
  if (steps->front() != '[') return bad("step list must be a JSON array");
  r.steps_json = std::move(steps).value();
  if (!r.knob_config_json.empty()) {
    auto knobs = canonical_json(r.knob_config_json, "knob config");
    if (!knobs) return bad(knobs.status().message());
    r.knob_config_json = std::move(knobs).value();
  }
  if (r.timestamp == 0) r.timestamp = now;
  return r;
}

}  // namespace tessera::records
