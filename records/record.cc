#include "records/record.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

#include <nlohmann/json.hpp>

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

bool is_valid_workload_key(std::string_view key) {
  if (key.size() != 32) return false;
  for (char c : key)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

Result<std::string> canonical_json(std::string_view json, std::string_view what) {
  // nlohmann keeps object keys in a std::map, so dump() sorts them; numbers
  // print in their shortest round-trip form.
  nlohmann::json value = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded())
    return Status(ErrorCode::kInvalidArgument, std::string(what) + " is not valid JSON");
  return value.dump();
}

int64_t steps_hash(std::string_view canonical_steps) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : canonical_steps) {
    h ^= c;
    h *= 1099511628211ull;
  }
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

bool is_finite_non_negative(double v) { return std::isfinite(v) && v >= 0; }

}  // namespace

Result<Record> normalize_record(Record r, double now) {
  auto bad = [&](const std::string& why) {
    return Status(ErrorCode::kInvalidArgument, "record of workload '" + r.workload_key + "': " + why);
  };
  if (!is_valid_workload_key(r.workload_key))
    return bad("workload key must be 32 lowercase hex characters");
  if (r.target.empty()) return bad("target is empty");
  if (!is_error_kind_word(r.error_kind))
    return bad("error kind '" + r.error_kind + "' is not a lowercase kebab-case word");
  if (r.ok() && r.costs.empty()) return bad("an ok record needs at least one cost");
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
