// convert_bf16: `--precision bf16`. The products (MatMul, Gemm, NHWC Conv)
// of float32 activations by constant float32 weights run on the CPU's
// bfloat16 dot product: the weights rounded to bfloat16 once, here, and
// packed in pairs along the reduction; the activations cast to bfloat16 by
// a node of their own, which fuses into the kernel that produces them; the
// sums accumulated in float32.
#include <cstring>
#include <map>

#include "base/half.h"
#include "compiler/graph/passes.h"

namespace tessera::graph {
namespace {

// The weight of a product `n` runs on: its constant float32 [K, N] operand,
// or null. `transposed`: the constant holds [N, K] (Gemm's trans_b).
const Constant* product_weight(const Graph& g, const Node& n, bool* transposed) {
  *transposed = false;
  if (n.kind == OpKind::kMatMul) {
    if (!std::holds_alternative<NoAttrs>(n.attrs) || n.inputs.size() != 2) return nullptr;
  } else if (n.kind == OpKind::kGemm) {
    const auto& a = std::get<GemmAttrs>(n.attrs);
    if (a.trans_a || a.alpha != 1.0 || (n.inputs.size() > 2 && a.beta != 1.0)) return nullptr;
    *transposed = a.trans_b;
  } else {
    return nullptr;
  }
  if (!g.is_constant(n.inputs[1]) || g.is_constant(n.inputs[0])) return nullptr;
  const Constant& w = g.constant(n.inputs[1]);
  const Value& x = g.value(n.inputs[0]);
  if (w.dtype != DType::f32() || x.dtype != DType::f32() || w.shape.size() != 2 || x.shape.size() < 2) return nullptr;
  const int64_t k = *transposed ? w.shape[1] : w.shape[0];
  return k % 2 == 0 && k == x.shape.back() ? &w : nullptr;
}

// `w` ([K, N], or [N, K] transposed) rounded to bfloat16 and packed in pairs
// along K: [K/2, N, 2].
Constant packed_bf16(const Constant& w, bool transposed) {
  const int64_t k = transposed ? w.shape[1] : w.shape[0], n = transposed ? w.shape[0] : w.shape[1];
  const std::vector<double> v = w.to_doubles();
  Constant out{DType::bf16(), {k / 2, n, 2}, std::vector<uint8_t>(static_cast<size_t>(k * n * 2))};
  for (int64_t kk = 0; kk < k; ++kk)
    for (int64_t j = 0; j < n; ++j) {
      const double x = v[static_cast<size_t>(transposed ? j * k + kk : kk * n + j)];
      const uint16_t bits = float_to_bfloat16(static_cast<float>(x));
      std::memcpy(out.bytes.data() + ((kk / 2 * n + j) * 2 + kk % 2) * 2, &bits, 2);
    }
  return out;
}

// Whether conv `n` runs in bfloat16: NHWC (convert_layout_nhwc made it so),
// one group, not by Winograd, float32 input of an even channel count,
// constant float32 HWIO weights.
bool bf16_conv(const Graph& g, const Node& n) {
  if (n.kind != OpKind::kConv) return false;
  const auto& a = std::get<ConvAttrs>(n.attrs);
  if (!a.nhwc || a.winograd || a.groups != 1 || n.inputs.size() < 2 || !g.is_constant(n.inputs[1])) return false;
  const Value& x = g.value(n.inputs[0]);
  const Constant& w = g.constant(n.inputs[1]);
  return x.dtype == DType::f32() && w.dtype == DType::f32() && x.shape.size() == 4 && w.shape.size() == 4 &&
         x.shape[3] % 2 == 0 && w.shape[2] == x.shape[3];
}

// HWIO weights [R, S, C, K] rounded to bfloat16 and packed in pairs of input
// channels: [R, S, C/2, K, 2].
Constant packed_conv_bf16(const Constant& w) {
  const int64_t r = w.shape[0], s = w.shape[1], c = w.shape[2], k = w.shape[3];
  const std::vector<double> v = w.to_doubles();
  Constant out{DType::bf16(), {r, s, c / 2, k, 2}, std::vector<uint8_t>(v.size() * 2)};
  for (int64_t rs = 0; rs < r * s; ++rs)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t kk = 0; kk < k; ++kk) {
        const uint16_t bits = float_to_bfloat16(static_cast<float>(v[static_cast<size_t>((rs * c + ch) * k + kk)]));
        std::memcpy(out.bytes.data() + (((rs * (c / 2) + ch / 2) * k + kk) * 2 + ch % 2) * 2, &bits, 2);
      }
  return out;
}

}  // namespace

bool bf16_eligible(const Graph& g, const Node& n) {
  bool transposed = false;
  return product_weight(g, n, &transposed) != nullptr || bf16_conv(g, n);
}

Result<Graph> convert_bf16(const Graph& g) {
  Graph out = g;
  std::vector<Node> nodes;
  std::map<ValueId, ValueId> in_bf16;  // float32 activations cast once, for all their products
  // The bfloat16 copy of activation `x`, cast once for all its readers.
  auto activation = [&](const Node& n, ValueId x) {
    auto cast = in_bf16.find(x);
    if (cast != in_bf16.end()) return cast->second;
    const Value xv = g.value(x);
    const ValueId y = out.add_value(xv.name + ".bf16", xv.shape, DType::bf16());
    nodes.push_back(Node{n.name + ".bf16_input", OpKind::kCast, CastAttrs{DType::bf16()}, {x}, {y}});
    return in_bf16.emplace(x, y).first->second;
  };
  for (const Node& n : g.nodes()) {
    if (bf16_conv(g, n)) {
      const ValueId x = activation(n, n.inputs[0]);
      std::vector<ValueId> inputs = {
          x, out.add_constant(g.value(n.inputs[1]).name + ".bf16", packed_conv_bf16(g.constant(n.inputs[1])))};
      if (n.inputs.size() > 2) inputs.push_back(n.inputs[2]);
      nodes.push_back(Node{n.name, OpKind::kConvBf16, n.attrs, std::move(inputs), n.outputs});
      continue;
    }
    bool transposed = false;
    const Constant* w = product_weight(g, n, &transposed);
    if (!w) {
      nodes.push_back(n);
      continue;
    }
    const ValueId x = activation(n, n.inputs[0]);
    const ValueId packed = out.add_constant(g.value(n.inputs[1]).name + ".bf16", packed_bf16(*w, transposed));
    if (n.inputs.size() < 3) {
      nodes.push_back(Node{n.name, OpKind::kMatMulBf16, NoAttrs{}, {x, packed}, n.outputs});
      continue;
    }
    // Gemm's C: added to the product.
    const Value yv = g.value(n.outputs[0]);
    const ValueId product = out.add_value(yv.name + ".product", yv.shape, yv.dtype);
    nodes.push_back(Node{n.name, OpKind::kMatMulBf16, NoAttrs{}, {x, packed}, {product}});
    nodes.push_back(Node{n.name + ".c", OpKind::kAdd, NoAttrs{}, {product, n.inputs[2]}, n.outputs});
  }
  out.mutable_nodes() = std::move(nodes);
  TESSERA_RETURN_IF_ERROR(out.validate());
  return eliminate_dead_nodes(out);
}

}  // namespace tessera::graph
