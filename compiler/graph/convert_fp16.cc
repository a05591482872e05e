// convert_fp16_weights: `--precision fp16`. The products (MatMul, Gemm, the
// window products of long 1-D convs, and NHWC convolutions) of float32
// activations by constant float32 weights keep their weights in float16:
// half the bytes stored in the package and streamed by each call, which is
// what a product that streams its weights from memory (a large GEMV) is
// bound by. The products widen each weight to
// float32 as they read it (ops::matmul, ops::conv2d_nhwc) and accumulate in
// float32; the activations stay float32.
#include <cstring>
#include <map>

#include "base/half.h"
#include "compiler/graph/passes.h"

namespace tessera::graph {
namespace {

// The float16 copy of float32 constant `w`, rounded to nearest even.
Constant half_constant(const Constant& w) {
  const std::vector<double> v = w.to_doubles();
  Constant out{DType::f16(), w.shape, std::vector<uint8_t>(v.size() * 2)};
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t bits = float_to_half(static_cast<float>(v[i]));
    std::memcpy(out.bytes.data() + i * 2, &bits, 2);
  }
  return out;
}

}  // namespace

bool fp16_weights_eligible(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2 || !g.is_constant(n.inputs[1])) return false;
  size_t rank = 2;
  if (n.kind == OpKind::kConv) {
    // NHWC (the layout pass made it so); by Winograd too (its weights
    // transformed at compile time, then stored in float16).
    if (!std::get<ConvAttrs>(n.attrs).nhwc) return false;
    rank = 4;
  } else if (n.kind == OpKind::kGemm) {
    if (std::get<GemmAttrs>(n.attrs).trans_a) return false;
  } else if (n.kind != OpKind::kMatMul) {
    return false;
  }
  const Constant& w = g.constant(n.inputs[1]);
  return g.value(n.inputs[0]).dtype == DType::f32() && w.dtype == DType::f32() && w.shape.size() == rank;
}

Result<Graph> convert_fp16_weights(const Graph& g) {
  Graph out = g;
  std::map<ValueId, ValueId> halves;  // each weight converted once, for all its products
  for (Node& n : out.mutable_nodes()) {
    if (!fp16_weights_eligible(g, n)) continue;
    const ValueId w = n.inputs[1];
    auto half = halves.find(w);
    if (half == halves.end())
      half = halves.emplace(w, out.add_constant(g.value(w).name + ".fp16", half_constant(g.constant(w)))).first;
    n.inputs[1] = half->second;
  }
  TESSERA_RETURN_IF_ERROR(out.validate());
  return eliminate_dead_nodes(out);
}

}  // namespace tessera::graph
