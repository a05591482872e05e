#include "compiler/graph/fuse_ops.h"

#include <algorithm>
#include <map>
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

// The node producing `v` when `v` is read once (by the chain's next node)
// and is no graph output; else -1.
int single_use_producer(const std::vector<int>& producer, ValueId v, const std::vector<std::vector<int>>& readers,
                        const std::vector<bool>& pinned) {
  const int p = producer[static_cast<size_t>(v)];
  if (p < 0 || readers[static_cast<size_t>(v)].size() != 1 || pinned[static_cast<size_t>(v)]) return -1;
  return p;
}

}  // namespace

std::vector<std::vector<int>> attention_chains(const Graph& g, const std::vector<std::vector<int>>& readers,
                                               const std::vector<bool>& pinned, int64_t min_score_bytes) {
  const std::vector<int> producer = g.producers();
  auto is_product = [&](int i) {
    const Node& n = g.nodes()[static_cast<size_t>(i)];
    if (n.kind != OpKind::kMatMul || n.inputs.size() != 2 || n.outputs.size() != 1) return false;
    const Value& out = g.value(n.outputs[0]);
    return out.dtype == DType::f32() && out.shape.size() >= 3;
  };
  // The context reads the probabilities as they are (an operand may be a
  // folded view: compiler/graph's fold_matmul_views).
  auto reads_as_is = [&](const Node& n, ValueId v) {
    const auto* views = std::get_if<MatMulAttrs>(&n.attrs);
    return n.inputs[0] == v && (!views || views->a.map.empty());
  };
  std::vector<std::vector<int>> chains;
  for (size_t s = 0; s < g.nodes().size(); ++s) {
    const Node& softmax = g.nodes()[s];
    if (softmax.kind != OpKind::kSoftmax) continue;
    const auto rank = static_cast<int64_t>(g.value(softmax.inputs[0]).shape.size());
    if (std::get<AxisAttrs>(softmax.attrs).axis != rank - 1) continue;
    const Value& scores = g.value(softmax.inputs[0]);
    if (shape_size(scores.shape) * scores.dtype.storage_bytes() < min_score_bytes) continue;
    // Forward: the softmax read once, as the A operand of a product.
    const ValueId probs = softmax.outputs[0];
    if (readers[static_cast<size_t>(probs)].size() != 1 || pinned[static_cast<size_t>(probs)]) continue;
    const int context = readers[static_cast<size_t>(probs)][0];
    if (!is_product(context) || !reads_as_is(g.nodes()[static_cast<size_t>(context)], probs)) continue;
    // Backward: light nodes (a scale, a mask) on their first input, each
    // read once, up to the scores' product.
    std::vector<int> chain = {static_cast<int>(s), context};
    int at = single_use_producer(producer, softmax.inputs[0], readers, pinned);
    while (at >= 0 && !is_product(at)) {
      const Node& n = g.nodes()[static_cast<size_t>(at)];
      const OpPattern p = node_pattern(g, n);
      if ((p != OpPattern::kElementwise && p != OpPattern::kBroadcast) || n.outputs.size() != 1 || n.inputs.empty() ||
          g.value(n.inputs[0]).shape != g.value(n.outputs[0]).shape) {
        at = -1;
        break;
      }
      chain.push_back(at);
      at = single_use_producer(producer, n.inputs[0], readers, pinned);
    }
    if (at < 0) continue;
    chain.push_back(at);
    std::sort(chain.begin(), chain.end());  // graph order is topological
    chains.push_back(std::move(chain));
  }
  return chains;
}

namespace {

class Fuser {
 public:
  Fuser(const Graph& g, const FuseOptions& options)
      : g_(g), readers_(g.values().size()), pinned_(g.values().size(), false), deferred_(g.nodes().size(), false) {
    for (size_t i = 0; i < g.nodes().size(); ++i)
      for (ValueId v : g.nodes()[i].inputs) readers_[static_cast<size_t>(v)].push_back(static_cast<int>(i));
    for (ValueId v : g.outputs()) pinned_[static_cast<size_t>(v)] = true;
    chains_ = attention_chains(g, readers_, pinned_, options.attention_min_score_bytes);
    for (size_t c = 0; c < chains_.size(); ++c) {
      for (int i : chains_[c]) deferred_[static_cast<size_t>(i)] = true;
      deferred_[static_cast<size_t>(chains_[c].back())] = false;
      chain_ending_at_[chains_[c].back()] = c;
    }
  }

  // Greedy placement joins through a value with several readers on the bet
  // that all of them join the same group (x in x * clip(x + 3, 0, 6) / 6).
  // A lost bet pins the value (it must stay a group output) and placement
  // starts over; each round pins at least one more value, so this ends.
  std::vector<FusedGroup> run() {
    for (;;) {
      groups_.clear();
      group_of_value_.assign(g_.values().size(), -1);
      group_of_node_.assign(g_.nodes().size(), -1);
      for (size_t i = 0; i < g_.nodes().size(); ++i) place(static_cast<int>(i));
      if (!pin_escaping_values()) break;
    }
    // Groups merged into another are left empty.
    groups_.erase(std::remove_if(groups_.begin(), groups_.end(), [](const FusedGroup& g) { return g.nodes.empty(); }),
                  groups_.end());
    for (FusedGroup& grp : groups_) finish(grp);
    return std::move(groups_);
  }

 private:
  void place(int index) {
    // An attention chain's members wait for its last node, then form one
    // group (the value projection may come between them in graph order).
    if (deferred_[static_cast<size_t>(index)]) return;
    if (auto chain = chain_ending_at_.find(index); chain != chain_ending_at_.end()) {
      place_chain(chains_[chain->second]);
      return;
    }
    const Node& n = g_.nodes()[static_cast<size_t>(index)];
    const OpPattern p = node_pattern(g_, n);
    int target = -1;
    // An external region is one call of its backend's code: alone in its group.
    if (n.outputs.size() == 1 && !runs_alone(n.kind)) {
      for (ValueId v : n.inputs) {
        const int grp = group_of_value_[static_cast<size_t>(v)];
        if (grp < 0 || groups_[grp].output != v || pinned_[static_cast<size_t>(v)]) continue;
        if (runs_alone(g_.nodes()[static_cast<size_t>(groups_[grp].anchor)].kind)) continue;
        if (!may_join(groups_[grp].pattern, p) || !inputs_precede(n, v, grp)) continue;
        target = grp;
        break;
      }
    }
    if (target < 0) {
      groups_.push_back(FusedGroup{{}, index, p, {}, -1, ""});
      target = static_cast<int>(groups_.size()) - 1;
    }
    if (!is_light(groups_[target].pattern) && is_light(p) && !groups_[target].nodes.empty())
      take_in_epilogue_operands(n, target);
    FusedGroup& grp = groups_[target];
    grp.nodes.push_back(index);
    grp.output = n.outputs.empty() ? -1 : n.outputs[0];
    group_of_node_[static_cast<size_t>(index)] = target;
    for (ValueId v : n.outputs) group_of_value_[static_cast<size_t>(v)] = target;
    if (is_light(groups_[target].pattern) && is_light(p)) merge_input_groups(n, target);
  }

  // One group of a whole attention chain, anchored at its scores' MatMul.
  void place_chain(const std::vector<int>& chain) {
    groups_.push_back(FusedGroup{chain, chain.front(), OpPattern::kComplex, {}, -1, ""});
    const int target = static_cast<int>(groups_.size()) - 1;
    for (int i : chain) {
      group_of_node_[static_cast<size_t>(i)] = target;
      for (ValueId v : g_.nodes()[static_cast<size_t>(i)].outputs) group_of_value_[static_cast<size_t>(v)] = target;
    }
    groups_[static_cast<size_t>(target)].output = g_.nodes()[static_cast<size_t>(chain.back())].outputs[0];
  }

  // A light node that joined a light group takes in the other light groups
  // whose outputs it reads (a recurrent cell's gates: i * g + f * c, each
  // gate its own chain): one kernel, not one a chain. Those groups come
  // before `target` (the join checked it), so the merged group may run where
  // `target` does; a merged value another group reads is pinned later, as
  // for any join.
  void merge_input_groups(const Node& n, int target) {
    bool merged = false;
    for (ValueId v : n.inputs) {
      const int other = group_of_value_[static_cast<size_t>(v)];
      if (other < 0 || other == target || groups_[static_cast<size_t>(other)].output != v ||
          pinned_[static_cast<size_t>(v)])
        continue;
      if (!may_take_in(other, target)) continue;
      move_into(other, target);
      merged = true;
    }
    if (!merged) return;
    std::vector<int>& nodes = groups_[static_cast<size_t>(target)].nodes;
    std::sort(nodes.begin(), nodes.end());  // graph order is topological
    groups_[static_cast<size_t>(target)].anchor = nodes.front();
    groups_[static_cast<size_t>(target)].pattern = node_pattern(g_, g_.nodes()[static_cast<size_t>(nodes.front())]);
  }

  // An epilogue node that joined a conv's or a product's group takes in the
  // elementwise groups that compute its other operands at its own shape,
  // each read by it alone: a quantized residual's DequantizeLinear reads the
  // int8 skip tensor in the epilogue instead of writing it out in float and
  // reading that back. Same shape, so nothing is computed more often than
  // before. Their nodes go just before the epilogue node (the anchor stays
  // first; they read only values of earlier groups, checked at the join).
  void take_in_epilogue_operands(const Node& n, int target) {
    for (ValueId v : n.inputs) {
      const int other = group_of_value_[static_cast<size_t>(v)];
      if (other < 0 || other == target || groups_[static_cast<size_t>(other)].output != v ||
          pinned_[static_cast<size_t>(v)] || readers_[static_cast<size_t>(v)].size() != 1 ||
          g_.value(v).shape != g_.value(n.outputs[0]).shape)
        continue;
      // The anchor is kComplex or kReduction: elementwise and broadcast
      // nodes only.
      if (may_take_in(other, target)) move_into(other, target);
    }
  }

  // Whether every node of group `from` may join group `target`: one output
  // each, no external region, and a pattern `target`'s anchor admits.
  bool may_take_in(int from, int target) const {
    const std::vector<int>& nodes = groups_[static_cast<size_t>(from)].nodes;
    return std::all_of(nodes.begin(), nodes.end(), [&](int i) {
      const Node& m = g_.nodes()[static_cast<size_t>(i)];
      return !runs_alone(m.kind) && m.outputs.size() == 1 &&
             may_join(groups_[static_cast<size_t>(target)].pattern, node_pattern(g_, m));
    });
  }

  // Appends group `from`'s nodes to group `target`, leaving `from` empty.
  void move_into(int from, int target) {
    FusedGroup& moved = groups_[static_cast<size_t>(from)];
    for (int i : moved.nodes) {
      groups_[static_cast<size_t>(target)].nodes.push_back(i);
      group_of_node_[static_cast<size_t>(i)] = target;
      for (ValueId out : g_.nodes()[static_cast<size_t>(i)].outputs) group_of_value_[static_cast<size_t>(out)] = target;
    }
    moved.nodes.clear();
    moved.output = -1;
  }

  // Groups run in creation order, so a node may join group `grp` only when
  // its other inputs come from earlier groups, no group, or `grp` itself
  // (a value computed inside it): otherwise the group would read a value
  // computed after it, or two groups would read each other's outputs.
  bool inputs_precede(const Node& n, ValueId joined, int grp) const {
    for (ValueId v : n.inputs) {
      if (v == joined) continue;
      if (group_of_value_[static_cast<size_t>(v)] > grp) return false;
    }
    return true;
  }

  // Pins every value computed inside a group, other than its output, that a
  // node of another group reads; true when it pinned any.
  bool pin_escaping_values() {
    bool pinned_any = false;
    for (size_t v = 0; v < readers_.size(); ++v) {
      const int grp = group_of_value_[v];
      if (grp < 0 || groups_[static_cast<size_t>(grp)].output == static_cast<ValueId>(v)) continue;
      for (int reader : readers_[v]) {
        if (group_of_node_[static_cast<size_t>(reader)] == grp) continue;
        // A multi-output node's (an external region's) other outputs stay
        // pinned: count only new pins, or placement would never settle.
        pinned_any = pinned_any || !pinned_[v];
        pinned_[v] = true;
        break;
      }
    }
    return pinned_any;
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
  std::vector<std::vector<int>> readers_;  // per value: the nodes that read it
  std::vector<bool> pinned_;               // values that must stay a group's output
  std::vector<std::vector<int>> chains_;   // attention chains (attention_chains)
  std::vector<bool> deferred_;             // nodes of a chain but its last
  std::map<int, size_t> chain_ending_at_;  // a chain's last node -> the chain
  std::vector<int> group_of_value_;
  std::vector<int> group_of_node_;
  std::vector<FusedGroup> groups_;
};

}  // namespace

std::vector<FusedGroup> fuse_ops(const Graph& g, const FuseOptions& options) {
  return Fuser(g, options).run();
}

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
