#include "compiler/space/sketch/sketch_space.h"

#include <nlohmann/json.hpp>

#include "compiler/space/sketch/annotation.h"
#include "compiler/space/sketch/sketch_rules.h"

namespace tessera {
namespace {

// Annotation fails only when a rule emits a step that does not apply, which
// is a bug; a few fresh draws keep one bad corner from stopping a search.
constexpr int kSampleAttempts = 4;

Status check_options(const SketchOptions& o) {
  auto bad = [](const std::string& what) { return Status(ErrorCode::kInvalidArgument, "sketch options: " + what); };
  if (o.max_sketches < 1) return bad("max_sketches must be at least 1");
  if (o.vector_bias < 0 || o.vector_bias > 1) return bad("vector_bias must be in [0, 1]");
  if (o.nondividing_chance < 0 || o.nondividing_chance > 1) return bad("nondividing_chance must be in [0, 1]");
  if (o.unfriendly_nondividing_chance < 0 || o.unfriendly_nondividing_chance > 1)
    return bad("unfriendly_nondividing_chance must be in [0, 1]");
  for (int64_t u : o.unroll_steps)
    if (u < 0) return bad("unroll steps must not be negative");
  return Status::ok();
}

}  // namespace

Result<SketchSpace> SketchSpace::make(std::shared_ptr<const ComputeDAG> dag, const Target& target,
                                      SketchOptions options) {
  if (!dag) return Status(ErrorCode::kInvalidArgument, "sketch space: no DAG");
  TESSERA_RETURN_IF_ERROR(check_options(options));
  TESSERA_ASSIGN_OR_RETURN(std::vector<Sketch> sketches, generate_sketches(*dag, target, options));
  return SketchSpace(std::move(dag), target, std::move(options), std::move(sketches));
}

Result<SketchProgram> SketchSpace::complete(int sketch, SketchDecisions decisions, SpaceRng& rng) const {
  if (sketch < 0 || sketch >= static_cast<int>(sketches_.size()))
    return Status(ErrorCode::kInvalidArgument, "sketch space: no sketch " + std::to_string(sketch) + " (it has " +
                                                   std::to_string(sketches_.size()) + ")");
  TESSERA_ASSIGN_OR_RETURN(State state, annotate_sketch(dag_, sketches_[sketch], target_, options_, &decisions, rng));
  return SketchProgram(sketch, std::move(decisions), std::move(state));
}

Result<SketchProgram> SketchSpace::sample(SpaceRng& rng) const {
  Status last;
  for (int attempt = 0; attempt < kSampleAttempts; ++attempt) {
    const int sketch = static_cast<int>(rng.uniform(static_cast<int64_t>(sketches_.size())));
    auto program = complete(sketch, SketchDecisions::unset(sketches_[sketch]), rng);
    if (program.is_ok()) return program;
    last = program.status();
  }
  return last;
}

Result<std::vector<SketchProgram>> SketchSpace::sample(int n, uint64_t seed) const {
  if (n < 0) return Status(ErrorCode::kInvalidArgument, "sketch space: a negative sample count");
  SpaceRng rng(seed);
  std::vector<SketchProgram> out;
  out.reserve(n);
  for (int i = 0; i < n; ++i) {
    TESSERA_ASSIGN_OR_RETURN(SketchProgram p, sample(rng));
    out.push_back(std::move(p));
  }
  return out;
}

std::string SketchSpace::program_to_json(const SketchProgram& program) {
  return "{\"sketch\":" + std::to_string(program.sketch) + ",\"decisions\":" + program.decisions.to_json() + "}";
}

Result<SketchProgram> SketchSpace::program_from_json(const std::string& text, SpaceRng& rng) const {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("sketch") || !j["sketch"].is_number_integer() || !j.contains("decisions"))
    return Status(ErrorCode::kParseError, "sketch program: expected {\"sketch\": <index>, \"decisions\": {...}}");
  const int64_t sketch = j["sketch"].get<int64_t>();
  if (sketch < 0 || sketch >= static_cast<int64_t>(sketches_.size()))
    return Status(ErrorCode::kInvalidArgument, "sketch program: no sketch " + std::to_string(sketch) +
                                                   " in this space (it has " + std::to_string(sketches_.size()) + ")");
  TESSERA_ASSIGN_OR_RETURN(SketchDecisions d, SketchDecisions::from_json(j["decisions"].dump()));
  const Sketch& sk = sketches_[sketch];
  if (d.tiles.size() != sk.tiles.size() || d.parallel.size() != sk.plans.size())
    return Status(ErrorCode::kInvalidArgument, "sketch program: the decisions do not fit sketch " +
                                                   std::to_string(sketch) + " of this space (another DAG?)");
  return complete(static_cast<int>(sketch), std::move(d), rng);
}

std::string SketchSpace::to_string() const {
  std::string out;
  for (size_t i = 0; i < sketches_.size(); ++i)
    out += "sketch " + std::to_string(i) + ": " + sketches_[i].to_string(*dag_);
  return out;
}

}  // namespace tessera
