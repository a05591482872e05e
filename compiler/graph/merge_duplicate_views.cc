// merge_duplicate_views: a Reshape, Transpose or Slice that repeats an
// earlier one -- the same input, attributes, output shape and type -- is
// dropped, and its readers read the earlier one's output. Exporters write
// such repeats: a 1-D conv's input reshaped to 2-D once per conv (an STFT's
// real and imaginary convs read one signal), a shape computed per head.
#include <map>
#include <tuple>

#include "compiler/graph/passes.h"

namespace tessera::graph {
namespace {

// What makes two view nodes the same: kind, input, output shape and type,
// and their attributes (a permutation; a slice's starts and steps).
using ViewKey =
    std::tuple<OpKind, ValueId, std::vector<int64_t>, std::string, std::vector<int64_t>, std::vector<int64_t>>;

bool is_view(const Node& n) {
  return (n.kind == OpKind::kReshape || n.kind == OpKind::kTranspose || n.kind == OpKind::kSlice) &&
         n.inputs.size() == 1 && n.outputs.size() == 1;
}

ViewKey key_of(const Graph& g, const Node& n) {
  const Value& y = g.value(n.outputs[0]);
  std::vector<int64_t> first, second;
  if (const auto* perm = std::get_if<PermAttrs>(&n.attrs)) first = perm->perm;
  if (const auto* slice = std::get_if<SliceAttrs>(&n.attrs)) first = slice->starts, second = slice->steps;
  return {n.kind, n.inputs[0], y.shape, y.dtype.to_string(), first, second};
}

}  // namespace

Result<Graph> merge_duplicate_views(const Graph& g) {
  Graph out = g;
  std::map<ValueId, ValueId> replaced;
  std::map<ViewKey, ValueId> seen;
  auto current = [&](ValueId v) {
    auto it = replaced.find(v);
    return it == replaced.end() ? v : it->second;
  };
  std::vector<Node> nodes;
  for (Node n : g.nodes()) {
    for (ValueId& v : n.inputs) v = current(v);
    if (is_view(n)) {
      auto [it, fresh] = seen.emplace(key_of(g, n), n.outputs[0]);
      if (!fresh) {
        replaced[n.outputs[0]] = it->second;
        continue;
      }
    }
    nodes.push_back(std::move(n));
  }
  out.mutable_nodes() = std::move(nodes);
  for (size_t i = 0; i < out.outputs().size(); ++i)
    if (replaced.count(out.outputs()[i])) out.replace_output(i, current(out.outputs()[i]));
  TESSERA_RETURN_IF_ERROR(out.validate());
  return out;
}

}  // namespace tessera::graph
