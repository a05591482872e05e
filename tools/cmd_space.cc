// `tessera space`: what the search spaces hold for an operator on a target —
// the knobs and size of its template, or the sketches of the template-free
// space — with the template's fallback (the untuned default) and a few
// random samples as step lists and as lowered loop IR
// (or the IR after one lowering pass, --dump-after PASS).
#include <algorithm>
#include <cstdio>

#include "compiler/codegen/llvm_target.h"
#include "compiler/ir/printer.h"
#include "compiler/lower/lower.h"
#include "compiler/ops/op_spec.h"
#include "compiler/space/knob/knob_space.h"
#include "compiler/space/knob/templates.h"
#include "compiler/space/sketch/sketch_space.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace tessera::cli {
namespace {

const std::vector<OptionSpec> kOptions = {
    {"op", true, "operator spec, e.g. matmul:M=1024,N=1024,K=1024"},
    {"space", true, "sketch (default) or knob"},
    {"target", true, "target string (default: this machine)"},
    {"samples", true, "random programs to show (default 2)"},
    {"seed", true, "seed of the samples (default 0)"},
    {"no-ir", false, "show step lists only, not the lowered loop IR"},
    {"dump-after", true, "show the IR (or plan) after this lowering pass instead of the lowered IR"},
    {"help", false, "this message"},
};

// Prints the steps of `state` and, with `with_ir`, its lowered IR, or what
// lowering pass `dump_after` (when not empty) produced.
void show_program(const State& state, bool with_ir, const std::string& dump_after) {
  for (const Step& s : state.steps()) std::printf("    %s\n", s.to_string().c_str());
  if (!with_ir) return;
  std::vector<PassDump> trace;
  auto func = lower(state, "kernel", LowerOptions{.stop_after = dump_after, .trace = &trace});
  if (!func.is_ok()) {
    std::printf("  (does not lower: %s)\n", func.status().message().c_str());
    return;
  }
  if (dump_after.empty()) {
    std::printf("  lowered:\n%s", to_string(*func).c_str());
  } else {
    std::printf("  after %s:\n%s", dump_after.c_str(), trace.back().text.c_str());
  }
}

std::string pass_list() {
  std::string list;
  for (const std::string& p : lowering_pass_names()) list += (list.empty() ? "" : ", ") + p;
  return list;
}

// True when `name` is a lowering pass; otherwise says which ones there are.
bool check_pass_name(const std::string& name) {
  const std::vector<std::string> passes = lowering_pass_names();
  if (std::find(passes.begin(), passes.end(), name) != passes.end()) return true;
  std::fprintf(stderr, "tessera space: unknown --dump-after pass '%s' (passes: %s)\n", name.c_str(),
               pass_list().c_str());
  return false;
}

// The accepted operators with their parameters, from the op spec table
// (compiler/ops/op_spec.h): what --op takes is listed where it is defined.
std::string operator_list() {
  std::string out;
  for (const ops::OpInfo& op : ops::list_ops()) {
    std::string params;
    for (const ops::OpParam& p : op.params)
      if (!p.help.empty()) params += (params.empty() ? "" : "; ") + p.name + ": " + p.help;
    out += "  " + op.usage() + "\n      " + op.summary + (params.empty() ? "" : "\n      " + params) + "\n";
  }
  return out;
}

int print_usage(FILE* out) {
  std::fprintf(out,
               "usage: tessera space --op SPEC [--space sketch|knob] [--target TARGET] [--samples N] [--seed SEED]\n"
               "                     [--no-ir] [--dump-after PASS]\n\n%s\n"
               "lowering passes: %s\n\noperators (--op SPEC is NAME:PARAM=VALUE,...; [...] are optional, with their "
               "defaults):\n%s",
               format_options(kOptions).c_str(), pass_list().c_str(), operator_list().c_str());
  return out == stdout ? 0 : 2;
}

}  // namespace

int run_space(int argc, char** argv, int first) {
  auto args = Args::parse(argc, argv, first, kOptions);
  if (!args.is_ok()) {
    std::fprintf(stderr, "tessera space: %s\n", args.status().message().c_str());
    return 2;
  }
  if (args->has("help") || !args->has("op")) return print_usage(args->has("help") ? stdout : stderr);
  std::string space = args->get("space", "sketch");
  if (space != "sketch" && space != "knob") {
    std::fprintf(stderr, "tessera space: unknown --space '%s' (sketch, knob)\n", space.c_str());
    return 2;
  }
  auto samples = args->get_int("samples", 2);
  auto seed = args->get_int("seed", 0);
  if (!samples.is_ok() || !seed.is_ok() || *samples < 0) {
    std::fprintf(stderr, "tessera space: --samples and --seed take non-negative integers\n");
    return 2;
  }
  auto op = ops::parse_op_spec(args->get("op"));
  if (!op.is_ok()) {
    std::fprintf(stderr, "tessera space: %s\n", op.status().message().c_str());
    return 2;
  }
  Target target = host_target();
  if (args->has("target")) {
    auto t = parse_target(args->get("target"));
    if (!t.is_ok()) {
      std::fprintf(stderr, "tessera space: %s\n", t.status().message().c_str());
      return 2;
    }
    target = *t;
  }
  const bool with_ir = !args->has("no-ir");
  const std::string dump_after = args->get("dump-after", "");
  if (!dump_after.empty() && !check_pass_name(dump_after)) return 2;
  std::printf("%s on %s\nworkload %s, %.3g FLOP\n\n", op->spec.c_str(), target.to_string().c_str(),
              op->dag->workload_key().c_str(), op->flops);

  if (space == "knob") {
    const KnobTemplate* tmpl = find_template(op->op);
    if (!tmpl) {
      std::fprintf(stderr, "tessera space: no knob template for '%s'; try --space sketch\n", op->op.c_str());
      return 1;
    }
    auto knobs = tmpl->define(*op->dag, target);
    if (!knobs.is_ok()) {
      std::fprintf(stderr, "tessera space: %s\n", knobs.status().message().c_str());
      return 1;
    }
    std::printf("template %.*s (family %.*s)\n%s\n", static_cast<int>(tmpl->op.size()), tmpl->op.data(),
                static_cast<int>(tmpl->family.size()), tmpl->family.data(), knobs->to_string().c_str());
    // The template's fallback first: what compile time uses without records.
    auto fallback = tmpl->fallback(*knobs, *op->dag, target);
    if (fallback.is_ok()) {
      std::printf("fallback (the untuned default): %s\n", fallback->to_string().c_str());
      auto state = apply_template(*tmpl, op->dag, *fallback, target);
      if (state.is_ok())
        show_program(*state, with_ir, dump_after);
      else
        std::printf("  (template rejected it: %s)\n", state.status().message().c_str());
    }
    SpaceRng rng(static_cast<uint64_t>(*seed));
    for (int64_t i = 0; i < *samples && knobs->size() > 0; ++i) {
      auto config = knobs->config(static_cast<uint64_t>(rng.uniform(static_cast<int64_t>(knobs->size()))));
      if (!config.is_ok()) continue;
      std::printf("sample %lld: %s\n", static_cast<long long>(i), config->to_string().c_str());
      auto state = apply_template(*tmpl, op->dag, *config, target);
      if (!state.is_ok()) {
        std::printf("  (template rejected it: %s)\n", state.status().message().c_str());
        continue;
      }
      show_program(*state, with_ir, dump_after);
    }
    return 0;
  }

  auto sketches = SketchSpace::make(op->dag, target);
  if (!sketches.is_ok()) {
    std::fprintf(stderr, "tessera space: %s\n", sketches.status().message().c_str());
    return 1;
  }
  std::printf("%s\n", sketches->to_string().c_str());
  auto programs = sketches->sample(static_cast<int>(*samples), static_cast<uint64_t>(*seed));
  if (!programs.is_ok()) {
    std::fprintf(stderr, "tessera space: %s\n", programs.status().message().c_str());
    return 1;
  }
  for (size_t i = 0; i < programs->size(); ++i) {
    const SketchProgram& p = (*programs)[i];
    std::printf("sample %zu (sketch %d): %s\n", i, p.sketch,
                p.decisions.to_string(sketches->sketches()[p.sketch]).c_str());
    show_program(p.state, with_ir, dump_after);
  }
  return 0;
}

}  // namespace tessera::cli
