#include <cmath>

#include "compiler/graph/passes.h"

namespace tessera::graph {

namespace {

// BatchNorm inputs: X, scale (gamma), B (beta), mean, var.
bool bn_params_constant(const Graph& g, const Node& bn) {
  for (size_t i = 1; i < 5; ++i)
    if (i >= bn.inputs.size() || !g.is_constant(bn.inputs[i])) return false;
  return true;
}

// Folds `bn` into `conv` inside `g`: the conv gets new weight and bias
// constants and takes over the BN's output value.
void fold_into_conv(Graph& g, Node& conv, const Node& bn) {
  const Constant& w = g.constant(conv.inputs[1]);
  const int64_t k = w.shape[0];
  const int64_t per_k = w.num_elements() / k;
  const auto gamma = g.constant(bn.inputs[1]).to_doubles(), beta = g.constant(bn.inputs[2]).to_doubles();
  const auto mean = g.constant(bn.inputs[3]).to_doubles(), var = g.constant(bn.inputs[4]).to_doubles();
  const double eps = std::get<ScalarAttrs>(bn.attrs).value;
  std::vector<double> bias(static_cast<size_t>(k), 0.0);
  if (conv.inputs.size() > 2) bias = g.constant(conv.inputs[2]).to_doubles();
  auto weights = w.to_doubles();
  for (int64_t o = 0; o < k; ++o) {
    const double s = gamma[o] / std::sqrt(var[o] + eps);
    for (int64_t j = 0; j < per_k; ++j) weights[o * per_k + j] *= s;
    bias[o] = (bias[o] - mean[o]) * s + beta[o];
  }
  const std::string& wname = g.value(conv.inputs[1]).name;
  const ValueId new_w = g.add_constant(wname + ".bn_folded", Constant::from_doubles(w.dtype, w.shape, weights));
  const ValueId new_b = g.add_constant(conv.name + ".bias.bn_folded", Constant::from_doubles(w.dtype, {k}, bias));
  conv.inputs = {conv.inputs[0], new_w, new_b};
  conv.outputs = bn.outputs;
}

}  // namespace

Result<Graph> fold_batch_norm(const Graph& g) {
  Graph out = g;
  const std::vector<int> producer = g.producers();
  const std::vector<int> uses = g.use_counts();
  std::vector<bool> drop(g.nodes().size(), false);
  auto& nodes = out.mutable_nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node bn = nodes[i];
    if (bn.kind != OpKind::kBatchNorm || !bn_params_constant(out, bn)) continue;
    const ValueId x = bn.inputs[0];
    const int p = producer[static_cast<size_t>(x)];
    if (p < 0 || uses[static_cast<size_t>(x)] != 1) continue;
    Node& conv = nodes[static_cast<size_t>(p)];
    if (conv.kind != OpKind::kConv || !out.is_constant(conv.inputs[1])) continue;
    if (conv.inputs.size() > 2 && !out.is_constant(conv.inputs[2])) continue;
    if (out.constant(bn.inputs[1]).num_elements() != out.constant(conv.inputs[1]).shape[0]) continue;
    fold_into_conv(out, conv, bn);
    drop[i] = true;
  }
  // The conv now writes the BN's output, which later nodes read, so the conv
  // still precedes all of its readers.
  std::vector<Node> kept;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!drop[i]) kept.push_back(std::move(nodes[i]));
  nodes = std::move(kept);
  return eliminate_dead_nodes(out);
}

}  // namespace tessera::graph
