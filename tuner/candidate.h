// One candidate schedule on its way through the tuner: a search policy
// proposes it, the cost model reads its features, the builder compiles it,
// the measurer turns it into a record, and the policy learns from it.
//
// Its identity is its step list (equality and hash are the list's). It
// carries what was made from the steps: the State they replay to and that
// state lowered up to, not including, unrolling — the loop nest the cost
// model's features read and that the builder finishes (unrolls) and compiles.
// Each is made at most once per candidate, on first use or handed over by
// the policy that made it, and copies share them, so nothing on the
// candidate path replays or lowers a step list twice. The candidate counts
// how it was made (trace()), for the tests that check this.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/stmt.h"
#include "compiler/schedule/state.h"
#include "records/record.h"

namespace tessera::tuner {

/// How a candidate's artifacts were made: replays of its steps into a State
/// (or applications that built one) and lowerings of that state.
struct CandidateTrace {
  int replays = 0;
  int lowerings = 0;
};

class Candidate {
 public:
  /// The empty schedule (the untuned default).
  Candidate();
  /// The schedule `steps`; its state is replayed on first use.
  explicit Candidate(std::vector<Step> steps, records::SpaceKind space = records::SpaceKind::kSketch,
                     std::string knob_config_json = "");
  /// The schedule a policy built by applying its steps to `state` (its one
  /// replay, counted): `state.steps()` are the candidate's steps.
  static Candidate from_state(State state, records::SpaceKind space, std::string knob_config_json = "");

  /// The step list: what is recorded and what identifies the candidate.
  const std::vector<Step>& steps() const;
  /// hash_steps(steps()), computed once.
  uint64_t hash() const;

  /// The state the steps replay to on `dag`: made on the first call, then
  /// shared; the replay's error (kInvalidSchedule) when they do not apply.
  /// A DAG other than the one of the state already made gets its own replay.
  Result<std::shared_ptr<const State>> state(const std::shared_ptr<const ComputeDAG>& dag) const;
  /// state(dag) lowered for the cost model's features (costmodel::
  /// lower_for_features: no loop partitioning, no unrolling): made on the
  /// first call, then shared; the lowering's error when it does not lower.
  Result<PrimFunc> loop_nest(const std::shared_ptr<const ComputeDAG>& dag) const;
  /// The function ready for code generation, named `name`: lower(state, name),
  /// every pass (remainders partitioned, loops unrolled).
  Result<PrimFunc> kernel(const std::shared_ptr<const ComputeDAG>& dag, const std::string& name) const;

  /// How the state and loop nest were made so far (shared by copies).
  CandidateTrace trace() const;

  /// Same step list.
  bool operator==(const Candidate& o) const;

  /// Where the candidate comes from: kKnob, kSketch or kManual.
  records::SpaceKind space = records::SpaceKind::kSketch;
  /// The knob configuration for knob spaces; empty otherwise.
  std::string knob_config_json;
  /// Workers whose result for it was implausible (a measurement-error): it
  /// is measured elsewhere when the farm has another worker
  /// (rpc::MeasureInput::avoid_workers). Not part of its identity.
  std::vector<std::string> avoid_workers;
  /// Times it was sent and came back without a measurement (an
  /// infrastructure error); the tuner gives it up after a few. Not part of
  /// its identity.
  int times_lost = 0;

 private:
  struct Made;
  std::shared_ptr<const std::vector<Step>> steps_;
  uint64_t hash_ = 0;
  std::shared_ptr<Made> made_;
};

/// Hasher of candidates by their step lists.
struct CandidateHash {
  size_t operator()(const Candidate& c) const { return static_cast<size_t>(c.hash()); }
};

}  // namespace tessera::tuner
