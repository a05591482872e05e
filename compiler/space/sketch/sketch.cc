#include "compiler/space/sketch/sketch.h"

#include <nlohmann/json.hpp>

namespace tessera {

const char* stage_rule_name(StageRule rule) {
  switch (rule) {
    case StageRule::kInline: return "inline";
    case StageRule::kSimple: return "simple";
    case StageRule::kTiled: return "tiled SSRSRS";
    case StageRule::kFusedConsumer: return "fused consumer (SS tiles)";
    case StageRule::kFusedProducer: return "fused producer (RSRS in the consumer's tile)";
  }
  return "?";
}

std::vector<int64_t> default_unroll_steps(const Target& target) {
  // Ansor's CPU set; AArch64 cores have fewer registers to unroll into, but the
  // set stays the same so that records compare across targets.
  (void)target;
  return {0, 16, 64, 512};
}

int resolve_stage(const State& state, const SketchStageRef& ref) {
  const auto& tensors = state.dag().tensors();
  if (ref.tensor < 0 || ref.tensor >= static_cast<int>(tensors.size())) return -1;
  const int at = state.stage_index(tensors[ref.tensor]);
  if (at < 0) return -1;
  // cache_write and rfactor insert their stage just before the original,
  // cache_read just after.
  switch (ref.kind) {
    case SketchStageRef::Kind::kTensor: return at;
    case SketchStageRef::Kind::kCacheRead: return at + 1;
    default: return at - 1;
  }
}

namespace {

std::string ref_name(const ComputeDAG& dag, const SketchStageRef& ref) {
  std::string name = dag.tensors()[ref.tensor]->name;
  switch (ref.kind) {
    case SketchStageRef::Kind::kTensor: return name;
    case SketchStageRef::Kind::kLocal: return name + ".local";
    case SketchStageRef::Kind::kRfactor: return name + ".rf";
    case SketchStageRef::Kind::kCacheRead: return name + ".local";
  }
  return name;
}

std::string join(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

std::string Sketch::to_string(const ComputeDAG& dag) const {
  std::string out = description + "\n";
  for (const SketchStructureStep& s : structure) {
    switch (s.kind) {
      case SketchStructureStep::Kind::kCacheWrite: out += "  cache_write " + ref_name(dag, s.stage) + "\n"; break;
      case SketchStructureStep::Kind::kInline: out += "  compute_inline " + ref_name(dag, s.stage) + "\n"; break;
      case SketchStructureStep::Kind::kRfactor:
        out += "  rfactor " + ref_name(dag, s.stage) + " reduce axis " + std::to_string(s.axis) + " by ?(" +
               tiles[s.tile].name + ")\n";
        break;
    }
  }
  for (const StagePlan& p : plans) {
    out += "  " + ref_name(dag, p.stage) + ": " + stage_rule_name(p.rule);
    if (p.partner >= 0) out += " with " + ref_name(dag, plans[p.partner].stage);
    if (p.movable) out += ", compute location ?";
    if (p.unrolls) out += ", auto-unroll ?";
    for (int t : p.packed) out += ", packs " + dag.tensors()[t]->name;
    bool first = true;
    for (int t : p.tiles) {
      if (t < 0) continue;
      out += std::string(first ? ", tiles " : " ") + tiles[t].name + "=?x" + std::to_string(tiles[t].levels);
      first = false;
    }
    out += "\n";
  }
  return out;
}

SketchDecisions SketchDecisions::unset(const Sketch& sketch) {
  SketchDecisions d;
  d.tiles.assign(sketch.tiles.size(), {});
  d.tile_extents.assign(sketch.tiles.size(), 0);
  d.parallel.assign(sketch.plans.size(), -1);
  d.parallel_options.assign(sketch.plans.size(), 0);
  d.unroll.assign(sketch.plans.size(), -1);
  d.location.assign(sketch.plans.size(), -1);
  d.location_options.assign(sketch.plans.size(), 0);
  d.pad.assign(sketch.plans.size(), -1);
  return d;
}

std::string SketchDecisions::to_string(const Sketch& sketch) const {
  std::string out;
  auto sep = [&out] { out += out.empty() ? "" : "; "; };
  for (size_t t = 0; t < tiles.size() && t < sketch.tiles.size(); ++t) {
    if (tiles[t].empty()) continue;
    sep();
    out += "tile " + sketch.tiles[t].name + "=" + join(tiles[t]);
  }
  for (size_t p = 0; p < sketch.plans.size() && p < parallel.size(); ++p) {
    if (parallel[p] > 0) {
      sep();
      out += "parallel plan " + std::to_string(p) + "=" + std::to_string(parallel[p]) + " loops";
    }
    if (unroll[p] > 0) {
      sep();
      out += "unroll plan " + std::to_string(p) + "=" + std::to_string(unroll[p]);
    }
    if (location_options[p] > 0) {
      sep();
      out += "location plan " + std::to_string(p) + "=" + std::to_string(location[p]) + "/" +
             std::to_string(location_options[p]);
    }
    if (p < pad.size() && pad[p] > 0) {
      sep();
      out += "padded tiles plan " + std::to_string(p);
    }
  }
  return out;
}

std::string SketchDecisions::to_json() const {
  nlohmann::ordered_json j;
  j["tiles"] = tiles;
  j["tile_extents"] = tile_extents;
  j["parallel"] = parallel;
  j["unroll"] = unroll;
  j["location"] = location;
  j["pad"] = pad;
  return j.dump();
}

Result<SketchDecisions> SketchDecisions::from_json(const std::string& text) {
  auto bad = [](const std::string& what) { return Status(ErrorCode::kParseError, "sketch decisions: " + what); };
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return bad("not a JSON object");
  SketchDecisions d;
  try {
    for (const char* key : {"tiles", "tile_extents", "parallel", "unroll", "location"})
      if (!j.contains(key) || !j[key].is_array())
        return bad(std::string("field '") + key + "' is missing or not a list");
    d.tiles = j["tiles"].get<std::vector<std::vector<int64_t>>>();
    d.tile_extents = j["tile_extents"].get<std::vector<int64_t>>();
    d.parallel = j["parallel"].get<std::vector<int>>();
    d.unroll = j["unroll"].get<std::vector<int64_t>>();
    d.location = j["location"].get<std::vector<int>>();
    if (j.contains("pad"))
      d.pad = j["pad"].get<std::vector<int>>();
    else
      d.pad.assign(d.parallel.size(), 0);
  } catch (const nlohmann::json::exception& e) {
    return bad(std::string("a field has the wrong type (") + e.what() + ")");
  }
  if (d.tile_extents.size() != d.tiles.size()) return bad("tiles and tile_extents differ in length");
  if (d.unroll.size() != d.parallel.size() || d.location.size() != d.parallel.size() ||
      d.pad.size() != d.parallel.size())
    return bad("parallel, unroll, location and pad differ in length");
  d.parallel_options.assign(d.parallel.size(), 0);
  d.location_options.assign(d.parallel.size(), 0);
  return d;
}

}  // namespace tessera
