#include "tuner/candidate.h"

#include <mutex>
#include <optional>

#include "compiler/lower/lower.h"
#include "costmodel/features.h"

namespace tessera::tuner {

// What was made from the steps, shared by a candidate's copies. The builder
// works on several candidates at once; the mutex keeps one candidate's
// artifacts made once even if it were handed to two threads.
struct Candidate::Made {
  std::mutex mu;
  std::optional<Result<std::shared_ptr<const State>>> state;
  std::optional<Result<PrimFunc>> loop_nest;
  CandidateTrace trace;
};

namespace {
const std::shared_ptr<const std::vector<Step>>& no_steps() {
  static const auto kEmpty = std::make_shared<const std::vector<Step>>();
  return kEmpty;
}
}  // namespace

Candidate::Candidate() : steps_(no_steps()), hash_(hash_steps({})), made_(std::make_shared<Made>()) {}

Candidate::Candidate(std::vector<Step> steps, records::SpaceKind space, std::string knob_config_json)
    : space(space),
      knob_config_json(std::move(knob_config_json)),
      steps_(std::make_shared<const std::vector<Step>>(std::move(steps))),
      hash_(hash_steps(*steps_)),
      made_(std::make_shared<Made>()) {}

Candidate Candidate::from_state(State state, records::SpaceKind space, std::string knob_config_json) {
  Candidate c(state.steps(), space, std::move(knob_config_json));
  c.made_->state = std::shared_ptr<const State>(std::make_shared<State>(std::move(state)));
  c.made_->trace.replays = 1;
  return c;
}

const std::vector<Step>& Candidate::steps() const {
  return *steps_;
}

uint64_t Candidate::hash() const {
  return hash_;
}

bool Candidate::operator==(const Candidate& o) const {
  return hash_ == o.hash_ && (steps_ == o.steps_ || *steps_ == *o.steps_);
}

CandidateTrace Candidate::trace() const {
  std::lock_guard<std::mutex> lock(made_->mu);
  return made_->trace;
}

Result<std::shared_ptr<const State>> Candidate::state(const std::shared_ptr<const ComputeDAG>& dag) const {
  std::lock_guard<std::mutex> lock(made_->mu);
  Made& m = *made_;
  const bool cached = m.state && (!m.state->is_ok() || (**m.state)->dag_ptr() == dag);
  if (cached) return *m.state;
  ++m.trace.replays;
  auto replayed = replay(dag, *steps_);
  Result<std::shared_ptr<const State>> out =
      replayed.is_ok() ? Result<std::shared_ptr<const State>>(std::make_shared<const State>(std::move(*replayed)))
                       : Result<std::shared_ptr<const State>>(replayed.status());
  if (!m.state) m.state = out;  // the first DAG's state is the one kept
  return out;
}

Result<PrimFunc> Candidate::loop_nest(const std::shared_ptr<const ComputeDAG>& dag) const {
  TESSERA_ASSIGN_OR_RETURN(std::shared_ptr<const State> st, state(dag));
  std::lock_guard<std::mutex> lock(made_->mu);
  Made& m = *made_;
  const bool own_state = m.state && m.state->is_ok() && **m.state == st;
  if (own_state && m.loop_nest) return *m.loop_nest;
  ++m.trace.lowerings;
  Result<PrimFunc> lowered = costmodel::lower_for_features(*st);
  if (own_state) m.loop_nest = lowered;
  return lowered;
}

Result<PrimFunc> Candidate::kernel(const std::shared_ptr<const ComputeDAG>& dag, const std::string& name) const {
  // The whole pipeline: the features' loop nest skips partition_loops, and
  // a kernel built from it would keep its remainders' guards in the
  // micro-kernel (a prime-sized matmul measured 4x slower than it runs).
  TESSERA_ASSIGN_OR_RETURN(std::shared_ptr<const State> st, state(dag));
  return lower(*st, name);
}

}  // namespace tessera::tuner
