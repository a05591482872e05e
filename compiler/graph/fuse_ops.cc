#include "compiler/graph/fuse_ops.h"

#include <algorithm>
#include <sstream>

namespace tessera::graph {

namespace {

bool is_light(OpPattern p) {
  return p == OpPattern::kElementwise || p == OpPattern::kBroadcast || p == OpPattern::kInjective;
}

bool may_join(OpPattern anchor, OpPattern node) {
  if (anchor == OpPattern::kComplex || anchor == OpPattern::kReduction)
    return node == OpPattern::kElementwise || node == OpPattern::kBroadcast;
  return is_light(anchor) && is_light(node);
}

class Fuser {
 public:
  explicit Fuser(const Graph& g) : g_(g), uses_(g.use_counts()), group_of_value_(g.values().size(), -1) {
    for (ValueId v : g.outputs()) is_output_.push_back(v);
  }

  std::vector<FusedGroup> run() {
    for (size_t i = 0; i < g_.nodes().size(); ++i) place(static_cast<int>(i));
    for (FusedGroup& grp : groups_) finish(grp);
    return std::move(groups_);
  }

 private:
  void place(int index) {
    const Node& n = g_.nodes()[static_cast<size_t>(index)];
    const OpPattern p = node_pattern(g_, n);
    int target = -1;
    if (n.outputs.size() == 1) {
      for (ValueId v : n.inputs) {
        const int grp = group_of_value_[static_cast<size_t>(v)];
        if (grp < 0 || groups_[grp].output != v || uses_[static_cast<size_t>(v)] != 1) continue;
        if (std::find(is_output_.begin(), is_output_.end(), v) != is_output_.end()) continue;
        if (!may_join(groups_[grp].pattern, p) || !inputs_precede(n, v, grp)) continue;
        target = grp;
        break;
      }
    }
    if (target < 0) {
      groups_.push_back(FusedGroup{{}, index, p, {}, -1, ""});
      target = static_cast<int>(groups_.size()) - 1;
    }
    FusedGroup& grp = groups_[target];
    grp.nodes.push_back(index);
    grp.output = n.outputs.empty() ? -1 : n.outputs[0];
    for (ValueId v : n.outputs) group_of_value_[static_cast<size_t>(v)] = target;
  }

  // Groups run in creation order, so a node may join group `grp` only when
  // its other inputs come from earlier groups (or no group): otherwise the
  // group would read a value computed after it, or two groups would read
  // each other's outputs.
  bool inputs_precede(const Node& n, ValueId joined, int grp) const {
    for (ValueId v : n.inputs) {
      if (v == joined) continue;
      if (group_of_value_[static_cast<size_t>(v)] >= grp) return false;
    }
    return true;
  }

  // Inputs: every value a member reads that no member produces, in first-use order.
  void finish(FusedGroup& grp) const {
    std::vector<ValueId> produced;
    std::string name = "fused";
    for (int i : grp.nodes) {
      const Node& n = g_.nodes()[static_cast<size_t>(i)];
      for (ValueId v : n.inputs) {
        const bool inside = std::find(produced.begin(), produced.end(), v) != produced.end();
        if (!inside && std::find(grp.inputs.begin(), grp.inputs.end(), v) == grp.inputs.end()) grp.inputs.push_back(v);
      }
      produced.insert(produced.end(), n.outputs.begin(), n.outputs.end());
      name.append("_").append(op_kind_name(n.kind));
    }
    grp.name = name;
  }

  const Graph& g_;
  std::vector<int> uses_;
  std::vector<int> group_of_value_;
  std::vector<ValueId> is_output_;
  std::vector<FusedGroup> groups_;
};

}  // namespace

std::vector<FusedGroup> fuse_ops(const Graph& g) { return Fuser(g).run(); }

std::string groups_to_string(const Graph& g, const std::vector<FusedGroup>& groups) {
  std::ostringstream s;
  for (const FusedGroup& grp : groups) {
    s << grp.name << ":";
    for (int i : grp.nodes) s << " " << g.nodes()[static_cast<size_t>(i)].name;
    s << " (in";
    for (ValueId v : grp.inputs) s << " %" << v;
    s << ") -> %" << grp.output << "\n";
  }
  return s.str();
}

}  // namespace tessera::graph
