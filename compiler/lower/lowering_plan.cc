#include "compiler/lower/lowering_plan.h"

#include "compiler/ir/functor.h"
#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"

namespace tessera {
namespace {

const char* location_name(ComputeLocation location) {
  switch (location) {
    case ComputeLocation::kRoot: return "root";
    case ComputeLocation::kInline: return "inline";
    case ComputeLocation::kAt: return "at";
  }
  return "?";
}

}  // namespace

bool LoweringPlan::is_computed(int s) const {
  const Stage& st = stage(s);
  return !st.is_placeholder() && st.location != ComputeLocation::kInline;
}

int LoweringPlan::stage_of_tensor(const TensorNode* tensor) const {
  auto it = stage_of.find(tensor);
  return it == stage_of.end() ? -1 : it->second;
}

std::string LoweringPlan::to_string() const {
  IRPrinter printer;
  std::string out;
  for (size_t s = 0; s < stages.size(); ++s) {
    const Stage& st = stage(static_cast<int>(s));
    const PlannedStage& p = stages[s];
    out += "stage " + st.name() + ": " + (st.is_placeholder() ? "placeholder" : location_name(st.location));
    if (st.location == ComputeLocation::kAt)
      out += " " + stage(st.attach_stage).name() + "." + st.attach_var.name() + (st.pad_tile ? " padded" : "");
    if (!p.region_min.empty()) {
      out += ", region [";
      for (size_t d = 0; d < p.region_min.size(); ++d)
        out += (d ? ", " : "") + printer.print(p.region_min[d]) + " +" + std::to_string(p.region_extent[d]);
      out += "]";
    }
    if (!p.extent.empty()) {
      out += ", loops";
      for (const Iter& it : st.iters) {
        auto found = p.extent.find(it.var.node());
        if (found != p.extent.end()) out += " " + it.var.name() + ":" + std::to_string(found->second);
      }
    }
    if (p.buffer.defined())
      out += std::string(", buffer ") + p.buffer->name + (p.buffer->scope == MemoryScope::kGlobal ? " (param)" : "");
    if (s < guards.size()) {
      const StageGuards& g = guards[s];
      size_t count = g.init_guards.size();
      for (const auto& at : g.guards_at) count += at.size();
      if (count > 0) out += ", guards";
      for (size_t d = 0; d < g.guards_at.size(); ++d)
        for (const Expr& e : g.guards_at[d]) out += " " + printer.print(e) + "@" + std::to_string(d);
      for (const Expr& e : g.init_guards) out += " " + printer.print(e) + "@init";
    }
    out += "\n";
  }
  return out;
}

VarMap root_values(const LoweringPlan& plan, int s, std::vector<Expr>* guards) {
  const Stage& st = plan.stage(s);
  const PlannedStage& sp = plan.stages[s];
  const auto& ext = sp.extent;
  VarMap v;
  for (const Iter& it : st.iters) v[it.var.node()] = it.var;
  for (auto rel = st.relations.rbegin(); rel != st.relations.rend(); ++rel) {
    if (const auto* split = std::get_if<SplitRelation>(&*rel)) {
      Expr value = v.at(split->outer.node()) * split->factor + v.at(split->inner.node());
      v[split->parent.node()] = value;
      int64_t parent_extent = ext.at(split->parent.node());
      if (guards && ext.at(split->outer.node()) * split->factor != parent_extent)
        guards->push_back(value < parent_extent);
    } else {
      const auto& fu = std::get<FuseRelation>(*rel);
      Expr fused = v.at(fu.fused.node());
      int64_t inner_extent = ext.at(fu.inner.node());
      v[fu.outer.node()] = fused / inner_extent;
      v[fu.inner.node()] = fused % inner_extent;
    }
  }
  VarMap values;
  for (size_t d = 0; d < st.axes.size(); ++d) {
    const VarNode* axis = st.axes[d]->var.node();
    Expr global = sp.region_min[d] + v.at(axis);
    values[axis] = global;
    // A region may hang over the tensor's edge; points outside are skipped,
    // unless the stage computes its whole tile (PadTileStep).
    if (guards && st.location == ComputeLocation::kAt && !st.pad_tile) {
      guards->push_back(global < st.tensor->shape[d]);
      guards->push_back(global >= 0);
    }
  }
  for (const IterVar& r : st.reduce_axes) values[r->var.node()] = v.at(r->var.node());
  return values;
}

}  // namespace tessera
