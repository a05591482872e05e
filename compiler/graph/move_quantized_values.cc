// A QDQ model wraps every operator that only moves or selects values
// (MaxPool, Concat, Reshape, Transpose, Slice, nearest Resize) in a
// DequantizeLinear and a QuantizeLinear of the same scale and zero point,
// as ONNX Runtime's quantizer writes them. Those operators commute with
// dequantization (a maximum with any increasing map), and quantizing a
// dequantized integer with its own parameters gives it back, so the
// operator runs on the integers themselves: no float tensor, no rounding.
#include <map>
#include <set>

#include "compiler/graph/passes.h"

namespace tessera::graph {
namespace {

// The inputs of `n` that carry its data (the rest are shapes or indices),
// for the operators that only move or select values; empty for any other.
std::vector<size_t> moved_inputs(const Node& n) {
  switch (n.kind) {
    case OpKind::kMaxPool:
      if (std::get<PoolAttrs>(n.attrs).indices) return {};
      return {0};
    case OpKind::kReshape:
    case OpKind::kTranspose:
    case OpKind::kSlice: return {0};
    case OpKind::kResize:
      if (std::get<ResizeAttrs>(n.attrs).mode != ResizeAttrs::Mode::kNearest) return {};
      return {0};
    case OpKind::kConcat: {
      std::vector<size_t> all(n.inputs.size());
      for (size_t i = 0; i < all.size(); ++i) all[i] = i;
      return all;
    }
    default: return {};
  }
}

bool same_constant(const Graph& g, ValueId a, ValueId b) {
  if (a == b) return true;
  if (!g.is_constant(a) || !g.is_constant(b)) return false;
  const Constant &x = g.constant(a), &y = g.constant(b);
  return x.dtype == y.dtype && x.shape == y.shape && x.bytes == y.bytes;
}

class QuantizedMoves {
 public:
  explicit QuantizedMoves(const Graph& g) : g_(g) {
    for (const Node& n : g.nodes()) {
      for (ValueId v : n.inputs) ++readers_[v];
      for (ValueId v : n.outputs) producer_[v] = &n;
    }
    for (ValueId v : g.outputs()) ++readers_[v];
  }

  Graph run() {
    // Which mover each QuantizeLinear takes the place of.
    std::map<const Node*, const Node*> quantize_of;
    std::set<const Node*> dropped;
    for (const Node& q : g_.nodes()) {
      if (q.kind != OpKind::kQuantize) continue;
      const Node* mover = producer_of(q.inputs[0]);
      if (mover && readers_[q.inputs[0]] == 1 && movable(*mover, q)) {
        quantize_of[mover] = &q;
        dropped.insert(&q);
      }
    }
    Graph out = g_;
    std::vector<Node> nodes;
    for (const Node& n : g_.nodes()) {
      if (dropped.count(&n)) continue;
      auto it = quantize_of.find(&n);
      if (it == quantize_of.end()) {
        nodes.push_back(n);
        continue;
      }
      Node moved = n;
      for (size_t i : moved_inputs(n)) moved.inputs[i] = producer_of(n.inputs[i])->inputs[0];
      moved.outputs = it->second->outputs;
      nodes.push_back(std::move(moved));
    }
    out.mutable_nodes() = std::move(nodes);
    return eliminate_dead_nodes(out);
  }

 private:
  const Node* producer_of(ValueId v) const {
    auto it = producer_.find(v);
    return it == producer_.end() ? nullptr : it->second;
  }

  // Whether every data input of `mover` is dequantized with q's scale and
  // zero point, from integers of q's type.
  bool movable(const Node& mover, const Node& q) const {
    const std::vector<size_t> data = moved_inputs(mover);
    if (data.empty()) return false;
    for (size_t i : data) {
      const Node* dq = producer_of(mover.inputs[i]);
      if (!dq || dq->kind != OpKind::kDequantize) return false;
      if (g_.value(dq->inputs[0]).dtype != g_.value(q.outputs[0]).dtype) return false;
      if (!same_constant(g_, dq->inputs[1], q.inputs[1]) || !same_constant(g_, dq->inputs[2], q.inputs[2]))
        return false;
    }
    return true;
  }

  const Graph& g_;
  std::map<ValueId, int> readers_;
  std::map<ValueId, const Node*> producer_;
};

}  // namespace

Result<Graph> move_quantized_values(const Graph& g) {
  Graph out = QuantizedMoves(g).run();
  TESSERA_RETURN_IF_ERROR(out.validate());
  return out;
}

}  // namespace tessera::graph
