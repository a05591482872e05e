#include "compiler/lower/place_guards.h"

#include <algorithm>

#include "compiler/ir/structural.h"

namespace tessera {
namespace {

void place_stage_guards(LoweringPlan& plan, int s) {
  const Stage& st = plan.stage(s);
  StageGuards& out = plan.guards[s];
  std::vector<Expr> guards;
  out.root_values = root_values(plan, s, &guards);
  const int n = static_cast<int>(st.iters.size());
  // The innermost loop a guard depends on (-1: none).
  auto depth_of = [&](const Expr& g) {
    int depth = -1;
    for (int i = 0; i < n; ++i)
      if (uses_var(g, st.iters[i].var.node())) depth = i;
    return depth;
  };
  int first_reduce = n;
  for (int i = 0; i < n; ++i)
    if (st.iters[i].kind == IterKind::kReduce) {
      first_reduce = i;
      break;
    }
  out.guards_at.assign(n + 1, {});
  // Split and region guards can coincide; each is placed once.
  std::vector<Expr> distinct;
  for (const Expr& g : guards)
    if (std::none_of(distinct.begin(), distinct.end(), [&](const Expr& d) { return structural_equal(d, g); }))
      distinct.push_back(g);
  for (const Expr& g : distinct) {
    const int depth = depth_of(g);
    out.guards_at[depth + 1].push_back(g);
    bool uses_reduce = false;
    for (const Iter& it : st.iters)
      if (it.kind == IterKind::kReduce && uses_var(g, it.var.node())) uses_reduce = true;
    if (!uses_reduce && depth >= first_reduce) out.init_guards.push_back(g);
  }
}

}  // namespace

Result<LoweringPlan> place_guards(LoweringPlan plan) {
  plan.guards.assign(plan.stages.size(), StageGuards());
  for (int s = 0; s < static_cast<int>(plan.stages.size()); ++s)
    if (plan.is_computed(s)) place_stage_guards(plan, s);
  return plan;
}

}  // namespace tessera
