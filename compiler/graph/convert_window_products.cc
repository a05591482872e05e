// A long 1-D convolution of one input channel (an audio front end's STFT:
// 512 taps, 257 output channels, stride 160) is a matrix product: its windows
// are the rows of a matrix read in place, row m starting at sample
// m * stride, by the weights as taps x channels. The conv templates
// vectorize along its channels with a single input channel to broadcast,
// 43 GFLOP/s; the gemm template blocks it as a product.
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

}  // namespace

Result<Graph> convert_window_products(const Graph& g, const std::function<bool(const Node&)>& use) {
  Graph out = g;
  std::vector<Node> nodes;
  for (const Node& n : g.nodes()) {
    if (!window_product(g, n) || !use(n)) {
      nodes.push_back(n);
      continue;
    }
    const auto& attrs = std::get<ConvAttrs>(n.attrs);
    const Value& y = g.value(n.outputs[0]);  // [N, 1, M, K]
    Constant w = g.constant(n.inputs[1]);
    const int64_t taps = w.shape[1], k = w.shape[3];
    w.shape = {taps, k};  // HWIO [1, S, 1, K] holds [S, K] row-major
    const ValueId weights = out.add_constant(n.name + ".taps", std::move(w));
    // Window m of image b is row (b, 0, m) of the view [N, 1, M, S]:
    // sample m * stride + s of the input.
    MatMulAttrs view;
    view.a = MatMulAttrs::View{{y.shape[0], 1, y.shape[2], taps},
                               {{1, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, attrs.stride_w, 1}, {0, 0, 0, 0}}};
    const bool bias = n.inputs.size() == 3;
    const ValueId product = bias ? out.add_value(y.name + ".windows", y.shape, y.dtype) : n.outputs[0];
    nodes.push_back(Node{n.name, OpKind::kMatMul, std::move(view), {n.inputs[0], weights}, {product}});
    if (bias) nodes.push_back(Node{n.name + ".bias", OpKind::kAdd, NoAttrs{}, {product, n.inputs[2]}, n.outputs});
  }
  out.mutable_nodes() = std::move(nodes);
  TESSERA_RETURN_IF_ERROR(out.validate());
  return eliminate_dead_nodes(out);
}

}  // namespace tessera::graph
