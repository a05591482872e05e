// SketchSpace: the template-free search space of one ComputeDAG (TVM's
// auto-scheduler, Ansor). It holds the sketches the rules generate
// (sketch_rules.h), completes them with random annotation (annotation.h) and
// mutates complete programs (mutation.h). Every program is a replayable step
// list: `program.state.steps()`.
//
//   auto space = SketchSpace::make(dag, host_target()).value();
//   SpaceRng rng(42);
//   auto programs = space.sample(1000, /*seed=*/42).value();   // random programs
//   auto child = space.mutate(programs[0], rng);               // evolution
//   if (child.applied()) build(child.program->state, target);
//
// A SketchSpace is immutable after make(); its methods are const and safe to
// call from several threads, each with its own SpaceRng.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/target.h"
#include "compiler/space/sketch/mutation.h"
#include "compiler/space/sketch/sketch.h"
#include "compiler/space/space_rng.h"

namespace tessera {

class SketchSpace {
 public:
  /// Generates the sketches of `dag` for `target`. kInvalidArgument when the
  /// DAG has no compute stage or the options are out of range.
  static Result<SketchSpace> make(std::shared_ptr<const ComputeDAG> dag, const Target& target,
                                  SketchOptions options = {});

  const ComputeDAG& dag() const { return *dag_; }
  const std::shared_ptr<const ComputeDAG>& dag_ptr() const { return dag_; }
  const Target& target() const { return target_; }
  const SketchOptions& options() const { return options_; }
  /// The sketches, at least one.
  const std::vector<Sketch>& sketches() const { return sketches_; }

  /// Completes sketch `sketch` with `decisions`; unset or stale decisions
  /// are drawn from `rng`. kInvalidArgument for a sketch index out of range.
  Result<SketchProgram> complete(int sketch, SketchDecisions decisions, SpaceRng& rng) const;

  /// One random complete program: a uniformly chosen sketch, randomly
  /// annotated. The program replays; lowering is the caller's (the rules
  /// build only valid programs, which the tests check by lowering).
  Result<SketchProgram> sample(SpaceRng& rng) const;

  /// `n` random programs; the same seed gives the same programs.
  Result<std::vector<SketchProgram>> sample(int n, uint64_t seed) const;

  /// A mutation of `kind` (see mutation.h): a valid, different program or
  /// "not applicable".
  MutationResult mutate(const SketchProgram& program, MutationKind kind, SpaceRng& rng) const {
    return tessera::mutate(*this, program, kind, rng);
  }
  /// A mutation of a random kind that has something to change.
  MutationResult mutate(const SketchProgram& program, SpaceRng& rng) const {
    return tessera::mutate(*this, program, rng);
  }

  /// A program's sketch index and decisions as JSON,
  /// {"sketch":1,"decisions":{...}} — what a record keeps beside the steps so
  /// that the program can be rebuilt and mutated later.
  static std::string program_to_json(const SketchProgram& program);
  /// Rebuilds a program from program_to_json's text: the same decisions
  /// replay to the same steps (`rng` only fills what the text leaves unset).
  /// kParseError for malformed text, kInvalidArgument when it does not fit
  /// this space's sketches.
  Result<SketchProgram> program_from_json(const std::string& text, SpaceRng& rng) const;

  /// Every sketch in readable form, numbered.
  std::string to_string() const;

 private:
  SketchSpace(std::shared_ptr<const ComputeDAG> dag, Target target, SketchOptions options, std::vector<Sketch> sketches)
      : dag_(std::move(dag)),
        target_(std::move(target)),
        options_(std::move(options)),
        sketches_(std::move(sketches)) {}

  std::shared_ptr<const ComputeDAG> dag_;
  Target target_;
  SketchOptions options_;
  std::vector<Sketch> sketches_;
};

}  // namespace tessera
