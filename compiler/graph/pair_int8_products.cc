// On a target with an int8 matrix-multiply instruction (AArch64's USMMLA,
// +i8mm), an int8 product runs as 2 x 2 tiles over eight bytes of K, one
// instruction a tile (ops::matmul_u8s8_pairs), where the dot-product form
// takes four bytes of one row a lane: the instruction does twice the
// multiply-adds of a USDOT.
#include "compiler/graph/passes.h"

namespace tessera::graph {

Result<Graph> pair_int8_products(const Graph& g) {
  Graph out = g;
  for (Node& n : out.mutable_nodes()) {
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
