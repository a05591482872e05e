// On a target with an int8 matrix-multiply instruction (AArch64's USMMLA,
// +i8mm), an int8 product runs as 2 x 2 tiles over eight bytes of K, one
// instruction a tile (ops::matmul_u8s8_pairs, and for a convolution
// ops::conv2d_nhwc_u8s8_pairs: pairs of output columns by pairs of output
// channels over eight input channels), where the dot-product form takes
// four bytes of one row a lane: the instruction does twice the
// multiply-adds of a USDOT.
#include "compiler/graph/passes.h"

namespace tessera::graph {

namespace {

// An NHWC conv with weights packed to words (R x S x C/4 x K), one group,
// C a multiple of 8 and K even.
bool pairs_fit_conv(const Graph& g, const Node& n) {
  const auto& a = std::get<ConvAttrs>(n.attrs);
  const Value& x = g.value(n.inputs[0]);
  const Value& w = g.value(n.inputs[1]);
  return a.nhwc && a.groups == 1 && !a.winograd && w.dtype == DType::i32() && x.dtype == DType::u8() &&
         x.shape.size() == 4 && w.shape.size() == 4 && x.shape[3] % 8 == 0 && w.shape[3] % 2 == 0;
}

}  // namespace

Result<Graph> pair_int8_products(const Graph& g) {
  Graph out = g;
  for (Node& n : out.mutable_nodes()) {
    if (n.kind == OpKind::kConvU8S8) {
      if (pairs_fit_conv(g, n)) std::get<ConvAttrs>(n.attrs).pairs = true;
      continue;
    }
    if (n.kind != OpKind::kMatMulU8S8 || !std::holds_alternative<NoAttrs>(n.attrs)) continue;
    const Value& a = g.value(n.inputs[0]);
    const Value& c = g.value(n.outputs[0]);
    const size_t rank = a.shape.size();
    if (a.dtype != DType::u8() || rank < 2 || a.shape[rank - 2] % 2 != 0 || a.shape.back() % 8 != 0 ||
        c.shape.back() % 2 != 0)
      continue;
    MatMulAttrs attrs;
    attrs.pairs = true;
    n.attrs = attrs;
  }
  return out;
}

}  // namespace tessera::graph
