#include "compiler/space/choose/apply_best.h"

#include <cstdio>
#include <optional>
#include <utility>

#include "compiler/lower/lower.h"
#include "compiler/space/choose/generic_schedule.h"
#include "compiler/space/knob/templates.h"

namespace tessera {
namespace {

// "record 17", or the source's own words for a candidate without a record.
std::string label(const ScheduleCandidate& c, size_t index) {
  if (c.record_id > 0) return "record " + std::to_string(c.record_id);
  return "candidate " + std::to_string(index + 1) + " (" + c.why + ")";
}

std::string format_cost(double seconds) {
  char buf[48];
  if (!(seconds > 0)) return "cost unknown";
  if (seconds >= 1)
    std::snprintf(buf, sizeof buf, "%.3f s", seconds);
  else if (seconds >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.3f ms", seconds * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.3f us", seconds * 1e6);
  return buf;
}

// The state a candidate's steps give on `dag`, checked to lower; or why not.
// A record measured on a compatible target is also checked against this
// build's own reading of its target: the source judged it without LLVM.
Result<State> try_candidate(const std::shared_ptr<const ComputeDAG>& dag, const ScheduleCandidate& c,
                            const Target& target) {
  if (c.match == TargetMatch::kCompatible) {
    auto measured_on = Target::parse(c.target);
    if (measured_on.is_ok() && (measured_on->triple != target.triple || measured_on->vector_bits != target.vector_bits))
      return Status(ErrorCode::kTargetError, "measured on '" + c.target + "' (" + measured_on->triple + ", " +
                                                 std::to_string(measured_on->vector_bits) +
                                                 "-bit vectors), which does not match " + target.triple + " with " +
                                                 std::to_string(target.vector_bits) + "-bit vectors");
  }
  auto steps = steps_from_json(c.steps_json);
  if (!steps.is_ok()) return steps.status().with_context("the step list does not parse");
  auto state = replay(dag, *steps);
  if (!state.is_ok()) return state.status().with_context("the step list no longer replays");
  auto func = lower(*state);
  if (!func.is_ok()) return func.status().with_context("the schedule no longer lowers");
  return std::move(state).value();
}

// Records first: the first candidate that replays and lowers, or nullopt.
std::optional<ScheduleChoice> choose_from_source(const std::shared_ptr<const ComputeDAG>& dag, const Target& target,
                                                 ScheduleSource& source, std::vector<std::string>* warnings, int* seen,
                                                 int* skipped) {
  const std::string target_text = target.to_string();
  auto candidates = source.candidates(dag->workload_key(), target_text);
  if (!candidates.is_ok()) {
    warnings->push_back("the schedule source failed (" + candidates.status().to_string() +
                        "); compiling without records");
    return std::nullopt;
  }
  *seen = static_cast<int>(candidates->size());
  for (size_t i = 0; i < candidates->size(); ++i) {
    const ScheduleCandidate& c = (*candidates)[i];
    auto state = try_candidate(dag, c, target);
    if (!state.is_ok()) {
      warnings->push_back(label(c, i) + ": " + state.status().message() + " — skipped");
      ++*skipped;
      continue;
    }
    const bool exact = c.match == TargetMatch::kExact;
    ScheduleChoice choice(std::move(state).value());
    choice.source = exact ? ScheduleChoice::Source::kRecord : ScheduleChoice::Source::kCompatibleRecord;
    choice.explanation = label(c, i) + ": " + c.why + " (" + format_cost(c.cost_s) + ")";
    if (!exact)
      warnings->push_back("no usable record on this target; " + label(c, i) + " was measured on '" + c.target +
                          "' and may not be the best here");
    choice.record = c;
    return choice;
  }
  return std::nullopt;
}

}  // namespace

const char* schedule_source_name(ScheduleChoice::Source source) {
  switch (source) {
    case ScheduleChoice::Source::kRecord: return "record";
    case ScheduleChoice::Source::kCompatibleRecord: return "compatible-record";
    case ScheduleChoice::Source::kTemplateFallback: return "template-fallback";
    case ScheduleChoice::Source::kGenericFallback: return "generic-fallback";
    case ScheduleChoice::Source::kDefault: return "default";
  }
  return "unknown";
}

Result<ScheduleChoice> choose_schedule(std::shared_ptr<const ComputeDAG> dag, const std::string& op_name,
                                       const Target& target, ScheduleSource* source) {
  if (!dag) return Status(ErrorCode::kInvalidArgument, "choose_schedule: no DAG");
  std::vector<std::string> warnings;
  int seen = 0, skipped = 0;
  std::string passed_over;
  auto finish = [&](ScheduleChoice choice) {
    choice.passed_over = passed_over;
    choice.warnings = std::move(warnings);
    choice.candidates_seen = seen;
    choice.candidates_skipped = skipped;
    return choice;
  };
  if (source) {
    if (auto chosen = choose_from_source(dag, target, *source, &warnings, &seen, &skipped))
      return finish(std::move(*chosen));
  }
  if (source && seen == 0) {
    auto why = source->passed_over(dag->workload_key(), target.to_string());
    if (why.is_ok()) passed_over = std::move(why).value();
  }
  const std::string no_record = !source                ? "no schedule source"
                                : !passed_over.empty() ? "the fallback kept: " + passed_over
                                : seen == 0
                                    ? "no record for this workload on this or a compatible target"
                                    : "none of the " + std::to_string(seen) + " candidate schedules could be used";
  // A fallback is taken when it exists and lowers; else a warning says why not.
  auto fallback = [&](Result<State> state, ScheduleChoice::Source kind, const std::string& what,
                      const std::string& why) -> std::optional<ScheduleChoice> {
    if (state.is_ok()) {
      auto func = lower(*state);
      if (func.is_ok()) {
        ScheduleChoice choice(std::move(state).value());
        choice.source = kind;
        choice.explanation = no_record + "; " + why;
        return choice;
      }
      state = func.status();
    }
    warnings.push_back(what + " failed (" + state.status().to_string() + ")");
    return std::nullopt;
  };
  const KnobTemplate* t = find_template(op_name);
  if (t) {
    const std::string what = "the " + std::string(t->family) + " template's fallback";
    if (auto c = fallback(apply_fallback(*t, dag, target), ScheduleChoice::Source::kTemplateFallback, what,
                          what + " configuration"))
      return finish(std::move(*c));
  }
  if (auto c = fallback(generic_schedule(dag, target), ScheduleChoice::Source::kGenericFallback, "the generic schedule",
                        t ? "the generic schedule" : "no template for '" + op_name + "': the generic schedule"))
    return finish(std::move(*c));
  ScheduleChoice choice{State(dag)};
  choice.source = ScheduleChoice::Source::kDefault;
  choice.explanation = no_record + "; the default schedule (unscheduled loops)";
  return finish(std::move(choice));
}

void CompileReport::add(const std::string& name, const std::string& workload_key, const ScheduleChoice& choice) {
  ++kernels;
  const bool record =
      choice.source == ScheduleChoice::Source::kRecord || choice.source == ScheduleChoice::Source::kCompatibleRecord;
  if (record) ++from_records;
  const std::string entry =
      name + " (workload " + workload_key.substr(0, 8) + "): " + schedule_source_name(choice.source);
  if (!record && listed_.insert(workload_key).second) {
    without_record.push_back(entry);
    if (!choice.passed_over.empty()) kept_fallback.push_back(entry);
  }
  if (choice.source == ScheduleChoice::Source::kCompatibleRecord && listed_.insert(workload_key).second)
    compatible_only.push_back(entry);
  for (const std::string& w : choice.warnings) warnings.push_back(name + ": " + w);
}

std::string CompileReport::to_string() const {
  std::string out = std::to_string(kernels) + " kernels, " + std::to_string(from_records) + " scheduled from records";
  if (!compatible_only.empty())
    out += " (" + std::to_string(compatible_only.size()) + " workloads from a compatible target's)";
  out += "\n";
  if (!without_record.empty()) {
    out += std::to_string(without_record.size()) + " workloads compiled without a record:\n";
    for (const auto& w : without_record) out += "  " + w + "\n";
  }
  for (const auto& w : compatible_only) out += "compatible target: " + w + "\n";
  for (const auto& w : warnings) out += "warning: " + w + "\n";
  return out;
}

}  // namespace tessera
