// recognize_layer_norm: LayerNorm written out as primitive nodes (as
// torch.onnx exports it before opset 17) becomes one kLayerNorm node.
#include <optional>

#include "compiler/graph/passes.h"

namespace tessera::graph {

namespace {

// What a match found: the normalized input, the axes' start, epsilon, and
// the optional affine constants (value ids, or -1).
struct LayerNormMatch {
  ValueId x = -1;
  int64_t axis = 0;
  double eps = 0;
  ValueId gamma = -1, beta = -1;
  size_t last = 0;  // index of the node whose output the layer norm takes over
};

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g), producer_(g.producers()), uses_(g.use_counts()) {}

  // The pattern ending in Div(d, sqrt(mean(d^2) + eps)), d = x - mean(x),
  // then optionally * gamma and + beta: every intermediate read only inside.
  std::optional<LayerNormMatch> match(size_t div_index) const {
    const Node& div = g_.nodes()[div_index];
    if (div.kind != OpKind::kDiv || div.inputs.size() != 2) return std::nullopt;
    const ValueId d = div.inputs[0];
    const Node* sub = producer(d, OpKind::kSub);
    if (!sub || sub->inputs.size() != 2) return std::nullopt;
    const ValueId x = sub->inputs[0];
    const Node* mean = producer(sub->inputs[1], OpKind::kReduceMean);
    if (!mean || mean->inputs[0] != x || uses(sub->inputs[1]) != 1) return std::nullopt;
    const std::optional<int64_t> axis = trailing_axes(*mean, g_.value(x).shape.size());
    if (!axis) return std::nullopt;
    const Node* sqrt = producer(div.inputs[1], OpKind::kUnary);
    if (!sqrt || std::get<UnaryAttrs>(sqrt->attrs).fn != ops::UnaryFn::kSqrt || uses(div.inputs[1]) != 1)
      return std::nullopt;
    const Node* add_eps = producer(sqrt->inputs[0], OpKind::kAdd);
    if (!add_eps || uses(sqrt->inputs[0]) != 1) return std::nullopt;
    const int eps_side = scalar_constant(add_eps->inputs[1]) ? 1 : scalar_constant(add_eps->inputs[0]) ? 0 : -1;
    if (eps_side < 0) return std::nullopt;
    const ValueId var_v = add_eps->inputs[1 - eps_side];
    const Node* var = producer(var_v, OpKind::kReduceMean);
    if (!var || uses(var_v) != 1 || trailing_axes(*var, g_.value(x).shape.size()) != axis) return std::nullopt;
    if (!is_square_of(var->inputs[0], d)) return std::nullopt;
    const int square_reads = producer(var->inputs[0], OpKind::kMul) ? 2 : 1;
    if (uses(d) != 1 + square_reads || !g_.value(x).dtype.is_float()) return std::nullopt;

    LayerNormMatch m{x, *axis, g_.constant(add_eps->inputs[eps_side]).at(0), -1, -1, div_index};
    const std::vector<int64_t>& shape = g_.value(x).shape;
    const std::vector<int64_t> norm_shape(shape.begin() + *axis, shape.end());
    // Affine tail: y * gamma, then + beta, each a constant of the normalized shape.
    const Node* next = sole_reader(div.outputs[0], OpKind::kMul);
    if (next && (m.gamma = affine_constant(*next, div.outputs[0], norm_shape)) >= 0) {
      m.last = static_cast<size_t>(next - g_.nodes().data());
      const Node* add = sole_reader(next->outputs[0], OpKind::kAdd);
      if (add && (m.beta = affine_constant(*add, next->outputs[0], norm_shape)) >= 0)
        m.last = static_cast<size_t>(add - g_.nodes().data());
    }
    return m;
  }

 private:
  int uses(ValueId v) const { return uses_[static_cast<size_t>(v)]; }

  const Node* producer(ValueId v, OpKind kind) const {
    const int p = producer_[static_cast<size_t>(v)];
    if (p < 0) return nullptr;
    const Node& n = g_.nodes()[static_cast<size_t>(p)];
    return n.kind == kind && n.outputs.size() == 1 ? &n : nullptr;
  }

  // The one node that reads `v` (and `v` is no graph output), if of `kind`.
  const Node* sole_reader(ValueId v, OpKind kind) const {
    if (uses(v) != 1) return nullptr;
    for (const Node& n : g_.nodes())
      for (ValueId in : n.inputs)
        if (in == v) return n.kind == kind && n.inputs.size() == 2 ? &n : nullptr;
    return nullptr;
  }

  // ReduceMean with keepdims over the axes [a, rank): a.
  std::optional<int64_t> trailing_axes(const Node& reduce, size_t rank) const {
    const auto& r = std::get<ReduceAttrs>(reduce.attrs);
    if (!r.keepdims || r.axes.empty() || r.axes.back() != static_cast<int64_t>(rank) - 1) return std::nullopt;
    for (size_t i = 1; i < r.axes.size(); ++i)
      if (r.axes[i] != r.axes[i - 1] + 1) return std::nullopt;
    return r.axes.front();
  }

  bool scalar_constant(ValueId v) const { return g_.is_constant(v) && g_.constant(v).num_elements() == 1; }

  // sq = Pow(d, 2) or Mul(d, d), read only by the variance.
  bool is_square_of(ValueId sq, ValueId d) const {
    if (uses(sq) != 1) return false;
    if (const Node* pow = producer(sq, OpKind::kPow))
      return pow->inputs[0] == d && scalar_constant(pow->inputs[1]) && g_.constant(pow->inputs[1]).at(0) == 2.0;
    const Node* mul = producer(sq, OpKind::kMul);
    return mul && mul->inputs[0] == d && mul->inputs[1] == d;
  }

  // The constant operand of `n` (the other being `y`) when it holds one value
  // per normalized element (its shape the normalized shape, maybe with
  // leading 1s), else -1.
  ValueId affine_constant(const Node& n, ValueId y, const std::vector<int64_t>& norm_shape) const {
    const ValueId c = n.inputs[0] == y ? n.inputs[1] : n.inputs[0];
    if (c == y || !g_.is_constant(c) || g_.value(c).dtype != g_.value(y).dtype) return -1;
    if (g_.value(n.outputs[0]).shape != g_.value(y).shape) return -1;
    const std::vector<int64_t>& cs = g_.value(c).shape;
    if (cs.size() < norm_shape.size()) return -1;
    const size_t lead = cs.size() - norm_shape.size();
    for (size_t i = 0; i < cs.size(); ++i)
      if (i < lead ? cs[i] != 1 : cs[i] != norm_shape[i - lead]) return -1;
    return c;
  }

  const Graph& g_;
  std::vector<int> producer_;
  std::vector<int> uses_;
};

// A constant of the normalized shape: `from`'s data, or `fill` everywhere.
ValueId norm_constant(Graph& g, ValueId from, const std::string& name, const std::vector<int64_t>& shape, DType dtype,
                      double fill) {
  if (from >= 0 && g.value(from).shape == shape) return from;
  Constant c =
      from >= 0 ? g.constant(from) : Constant::from_doubles(dtype, shape, std::vector<double>(shape_size(shape), fill));
  c.shape = shape;
  return g.add_constant(name, std::move(c));
}

}  // namespace

Result<Graph> recognize_layer_norm(const Graph& g) {
  std::vector<LayerNormMatch> matches;
  {
    const Matcher matcher(g);
    for (size_t i = 0; i < g.nodes().size(); ++i)
      if (auto m = matcher.match(i)) matches.push_back(*m);
  }
  if (matches.empty()) return g;
  Graph out = g;
  for (const LayerNormMatch& m : matches) {
    const Node last = out.nodes()[m.last];
    const Value& xv = out.value(m.x);
    const std::vector<int64_t> norm_shape(xv.shape.begin() + m.axis, xv.shape.end());
    const DType t = xv.dtype;
    const ValueId gamma = norm_constant(out, m.gamma, last.name + ".gamma", norm_shape, t, 1.0);
    const ValueId beta = norm_constant(out, m.beta, last.name + ".beta", norm_shape, t, 0.0);
    // The layer norm takes over the last node's place and output; the
    // primitive nodes before it become dead (each was read only inside).
    out.mutable_nodes()[m.last] =
        Node{last.name, OpKind::kLayerNorm, NormAttrs{m.axis, m.eps}, {m.x, gamma, beta}, last.outputs};
  }
  TESSERA_RETURN_IF_ERROR(out.validate());
  return eliminate_dead_nodes(out);
}

}  // namespace tessera::graph
