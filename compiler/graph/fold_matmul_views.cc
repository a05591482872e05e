// fold_matmul_views: a MatMul reads a transposed or axis-split operand in
// place (attention's K^T, heads split out of a projection) instead of
// after a copy kernel.
#include <optional>

#include "compiler/graph/passes.h"

namespace tessera::graph {

namespace {

using Map = std::vector<std::vector<int64_t>>;

Map identity(size_t rank) {
  Map m(rank, std::vector<int64_t>(rank, 0));
  for (size_t d = 0; d < rank; ++d) m[d][d] = 1;
  return m;
}

// outer * inner: composes index maps (inner first).
Map compose(const Map& outer, const Map& inner) {
  const size_t cols = inner.empty() ? 0 : inner[0].size();
  Map m(outer.size(), std::vector<int64_t>(cols, 0));
  for (size_t j = 0; j < outer.size(); ++j)
    for (size_t t = 0; t < inner.size(); ++t)
      if (outer[j][t] != 0)
        for (size_t d = 0; d < cols; ++d) m[j][d] += outer[j][t] * inner[t][d];
  return m;
}

// Transpose: input index perm[d] is output index d.
Map transpose_map(const std::vector<int64_t>& perm) {
  Map m(perm.size(), std::vector<int64_t>(perm.size(), 0));
  for (size_t d = 0; d < perm.size(); ++d) m[static_cast<size_t>(perm[d])][d] = 1;
  return m;
}

// A Reshape that only splits input axes into consecutive output axes (and
// adds or drops axes of extent 1): input index j = sum of its output axes'
// indices times their strides. nullopt for anything that merges axes.
std::optional<Map> split_map(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  Map m(in.size(), std::vector<int64_t>(out.size(), 0));
  size_t d = 0;
  for (size_t j = 0; j < in.size(); ++j) {
    if (in[j] == 1) continue;  // index 0 whatever the output index
    while (d < out.size() && out[d] == 1) ++d;
    std::vector<size_t> group;
    int64_t product = 1;
    while (d < out.size() && product < in[j]) {
      if (out[d] != 1) {
        group.push_back(d);
        product *= out[d];
      }
      ++d;
    }
    if (product != in[j]) return std::nullopt;
    int64_t stride = 1;
    for (size_t g = group.size(); g-- > 0;) {
      m[j][group[g]] = stride;
      stride *= out[group[g]];
    }
  }
  for (; d < out.size(); ++d)
    if (out[d] != 1) return std::nullopt;
  return m;
}

// The map from node `p`'s output index to its input's, when `p` is a view.
std::optional<Map> view_map(const Graph& g, const Node& p) {
  if (p.outputs.size() != 1 || p.inputs.empty()) return std::nullopt;
  if (p.kind == OpKind::kTranspose) return transpose_map(std::get<PermAttrs>(p.attrs).perm);
  if (p.kind == OpKind::kReshape) return split_map(g.value(p.inputs[0]).shape, g.value(p.outputs[0]).shape);
  return std::nullopt;
}

// A product of one row per batch element by a shared matrix, A [..., 1, K]
// (one leading axis of extent P > 1) by B [K, N]: as read, A is the matrix
// [P, K] (the map from [P, K] to A's shape; nullopt otherwise). Batched,
// it would be P products of one row, each streaming all of B (an LSTM's
// input projection over 100 steps ran at 56 GFLOP/s).
std::optional<Map> rows_map(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t rank = a.size();
  if (rank < 3 || b.size() != 2 || a[rank - 2] != 1) return std::nullopt;
  Map m(rank, std::vector<int64_t>(2, 0));
  int leading = 0;
  for (size_t d = 0; d + 2 < rank; ++d)
    if (a[d] != 1) ++leading, m[d][0] = 1;
  if (leading != 1) return std::nullopt;
  m[rank - 1][1] = 1;
  return m;
}

// The shape a MatMul reads operand k as: its view's, else the value's.
const std::vector<int64_t>& read_shape(const Graph& g, const Node& n, const MatMulAttrs& attrs, size_t k) {
  const MatMulAttrs::View& view = k == 0 ? attrs.a : attrs.b;
  return view.map.empty() ? g.value(n.inputs[k]).shape : view.shape;
}

}  // namespace

Result<Graph> fold_matmul_views(const Graph& g) {
  Graph out = g;
  const std::vector<int> producer = g.producers();
  const std::vector<int> uses = g.use_counts();
  bool changed = false;
  for (Node& n : out.mutable_nodes()) {
    if (n.kind != OpKind::kMatMul || n.inputs.size() != 2 || !std::holds_alternative<NoAttrs>(n.attrs)) continue;
    MatMulAttrs attrs;
    for (size_t k = 0; k < 2; ++k) {
      ValueId v = n.inputs[k];
      const std::vector<int64_t> shape = g.value(v).shape;
      Map map = identity(shape.size());
      // Walk up through views read by this matmul alone (not graph outputs:
      // use_counts counts those as readers).
      while (uses[static_cast<size_t>(v)] == 1 && producer[static_cast<size_t>(v)] >= 0) {
        const Node& p = g.nodes()[static_cast<size_t>(producer[static_cast<size_t>(v)])];
        std::optional<Map> step = view_map(g, p);
        if (!step || g.value(p.inputs[0]).dtype != g.value(v).dtype) break;
        map = compose(*step, map);
        v = p.inputs[0];
      }
      if (v == n.inputs[k]) continue;
      (k == 0 ? attrs.a : attrs.b) = MatMulAttrs::View{shape, std::move(map)};
      n.inputs[k] = v;
      changed = true;
    }
    if (!attrs.a.map.empty() || !attrs.b.map.empty()) n.attrs = std::move(attrs);
  }
  // One row per batch element by a shared matrix: a 2-D product over the
  // rows, then a Reshape to the batched shape.
  std::vector<Node> nodes;
  for (Node& n : out.mutable_nodes()) {
    if (n.kind != OpKind::kMatMul || n.inputs.size() != 2) {
      nodes.push_back(std::move(n));
      continue;
    }
    MatMulAttrs attrs = std::holds_alternative<MatMulAttrs>(n.attrs) ? std::get<MatMulAttrs>(n.attrs) : MatMulAttrs{};
    const std::vector<int64_t> a_shape = read_shape(out, n, attrs, 0);
    const std::optional<Map> rows = rows_map(a_shape, read_shape(out, n, attrs, 1));
    if (!rows) {
      nodes.push_back(std::move(n));
      continue;
    }
    const Map& to_source = attrs.a.map.empty() ? identity(a_shape.size()) : attrs.a.map;
    const int64_t p = graph::shape_size(a_shape) / a_shape.back();
    attrs.a = MatMulAttrs::View{{p, a_shape.back()}, compose(to_source, *rows)};
    const ValueId batched = n.outputs[0];
    const Value& y = out.value(batched);
    const ValueId flat = out.add_value(y.name + ".rows", {p, y.shape.back()}, y.dtype);
    Node reshape{n.name + ".rows", OpKind::kReshape, NoAttrs{}, {flat}, {batched}};
    n.attrs = std::move(attrs);
    n.outputs[0] = flat;
    nodes.push_back(std::move(n));
    nodes.push_back(std::move(reshape));
    changed = true;
  }
  out.mutable_nodes() = std::move(nodes);
  if (!changed) return g;
  TESSERA_RETURN_IF_ERROR(out.validate());
  return eliminate_dead_nodes(out);
}

}  // namespace tessera::graph
