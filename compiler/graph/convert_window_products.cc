// A long 1-D convolution of one input channel (an audio front end's STFT:
// 512 taps, 257 output channels, stride 160) is a matrix product: its windows
// are the rows of a matrix read in place, row m starting at sample
// m * stride, by the weights as taps x channels. The conv templates
// vectorize along its channels with a single input channel to broadcast,
// 43 GFLOP/s; the gemm template blocks it as a product.
#include <cstring>
#include <map>
#include <tuple>

#include "compiler/graph/passes.h"

namespace tessera::graph {
namespace {

// Windows at least this long. Measured on Zen 4: 512 taps (the STFT) ran
// 2.4x faster as a product (0.25 against 0.6 ms); 10 taps (wav2vec2's
// first conv, 3199 windows by 512 channels, a short reduction and a large
// output) ran 1.5x slower.
constexpr int64_t kMinTaps = 64;

// Whether `n` is such a conv: NHWC, a float32 input [N, 1, W, 1], a
// constant float32 weight [1, S, 1, K] (S >= kMinTaps), no padding, no
// dilation, one group.
bool window_product(const Graph& g, const Node& n) {
  if (n.kind != OpKind::kConv || n.inputs.size() < 2 || n.inputs.size() > 3) return false;
  const auto& a = std::get<ConvAttrs>(n.attrs);
  if (!a.nhwc || a.winograd || a.groups != 1 || a.dilation_w != 1 || a.pad_top || a.pad_left || a.pad_bottom ||
      a.pad_right)
    return false;
  const Value& x = g.value(n.inputs[0]);
  if (x.dtype != DType::f32() || x.shape.size() != 4 || x.shape[1] != 1 || x.shape[3] != 1) return false;
  if (!g.is_constant(n.inputs[1])) return false;
  const Constant& w = g.constant(n.inputs[1]);
  return w.dtype == DType::f32() && w.shape.size() == 4 && w.shape[0] == 1 && w.shape[2] == 1 && w.shape[1] >= kMinTaps;
}

// Window products of one signal by the same windows (an STFT's real and
// imaginary parts): one product by their weights side by side, [S, K1 + K2],
// each conv's output a slice of its columns. The windows are read once,
// and the product is twice as wide (257 channels each padded to 272; 514
// to 528).
using Windows = std::tuple<ValueId, int64_t, int64_t>;  // the signal, the stride, the taps

Windows windows_of(const Graph& g, const Node& conv) {
  return {conv.inputs[0], std::get<ConvAttrs>(conv.attrs).stride_w, g.constant(conv.inputs[1]).shape[1]};
}

std::map<Windows, std::vector<const Node*>> siblings_of(const Graph& g, const std::function<bool(const Node&)>& use) {
  std::map<Windows, std::vector<const Node*>> groups;
  for (const Node& n : g.nodes())
    if (window_product(g, n) && use(n)) groups[windows_of(g, n)].push_back(&n);
  return groups;
}

// The convs' weights side by side: [S, K1 + K2 + ...] (each HWIO [1, S, 1, K]
// holds its [S, K] row-major).
Constant weights_side_by_side(const Graph& g, const std::vector<const Node*>& convs, int64_t taps) {
  int64_t k = 0;
  for (const Node* c : convs) k += g.constant(c->inputs[1]).shape[3];
  Constant w;
  w.dtype = DType::f32();
  w.shape = {taps, k};
  w.bytes.resize(static_cast<size_t>(taps * k) * sizeof(float));
  int64_t column = 0;
  for (const Node* c : convs) {
    const Constant& cw = g.constant(c->inputs[1]);
    const int64_t kc = cw.shape[3];
    for (int64_t s = 0; s < taps; ++s)
      std::memcpy(&w.bytes[static_cast<size_t>(s * k + column) * sizeof(float)],
                  &cw.bytes[static_cast<size_t>(s * kc) * sizeof(float)], static_cast<size_t>(kc) * sizeof(float));
    column += kc;
  }
  return w;
}

}  // namespace

Result<Graph> convert_window_products(const Graph& g, const std::function<bool(const Node&)>& use) {
  Graph out = g;
  std::vector<Node> nodes;
  const auto groups = siblings_of(g, use);
  for (const Node& n : g.nodes()) {
    if (!window_product(g, n) || !use(n)) {
      nodes.push_back(n);
      continue;
    }
    const auto& attrs = std::get<ConvAttrs>(n.attrs);
    const int64_t taps = g.constant(n.inputs[1]).shape[1];
    const std::vector<const Node*>& convs = groups.at(windows_of(g, n));
    if (convs.front() != &n) continue;  // made with the first of its siblings
    Constant w = weights_side_by_side(g, convs, taps);
    const int64_t k = w.shape[1];
    const ValueId weights = out.add_constant(n.name + ".taps", std::move(w));
    // Window m of image b is row (b, 0, m) of the view [N, 1, M, S]:
    // sample m * stride + s of the input.
    const Value& y = g.value(n.outputs[0]);  // [N, 1, M, K]
    MatMulAttrs view;
    view.a = MatMulAttrs::View{{y.shape[0], 1, y.shape[2], taps},
                               {{1, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, attrs.stride_w, 1}, {0, 0, 0, 0}}};
    const std::vector<int64_t> shape = {y.shape[0], 1, y.shape[2], k};
    const ValueId product =
        convs.size() == 1 && n.inputs.size() == 2 ? n.outputs[0] : out.add_value(n.name + ".windows", shape, y.dtype);
    nodes.push_back(Node{n.name, OpKind::kMatMul, std::move(view), {n.inputs[0], weights}, {product}});
    int64_t column = 0;
    for (const Node* c : convs) {
      const int64_t kc = g.constant(c->inputs[1]).shape[3];
      ValueId columns = product;
      const bool bias = c->inputs.size() == 3;
      if (convs.size() > 1) {
        columns = bias ? out.add_value(c->name + ".columns", g.value(c->outputs[0]).shape, y.dtype) : c->outputs[0];
        nodes.push_back(Node{
            c->name + ".columns", OpKind::kSlice, SliceAttrs{{0, 0, 0, column}, {1, 1, 1, 1}}, {product}, {columns}});
      }
      if (bias) nodes.push_back(Node{c->name + ".bias", OpKind::kAdd, NoAttrs{}, {columns, c->inputs[2]}, c->outputs});
      column += kc;
    }
  }
  out.mutable_nodes() = std::move(nodes);
  TESSERA_RETURN_IF_ERROR(out.validate());
  return eliminate_dead_nodes(out);
}

}  // namespace tessera::graph
