// convert_winograd: 3x3 convolutions by Winograd F(2x2, 3x3) (ops/winograd.h),
// their weights transformed once here, at compile time.
#include <cstring>

#include "compiler/graph/passes.h"
#include "compiler/ops/winograd.h"

namespace tessera::graph {

bool winograd_eligible(const Graph& g, const Node& n) {
  if (n.kind != OpKind::kConv) return false;
  const auto& a = std::get<ConvAttrs>(n.attrs);
  if (!a.nhwc || a.winograd || a.groups != 1 || a.stride_h != 1 || a.stride_w != 1 || a.dilation_h != 1 ||
      a.dilation_w != 1 || n.inputs.size() < 2 || !g.is_constant(n.inputs[1]))
    return false;
  const Value& w = g.value(n.inputs[1]);
  const Value& y = g.value(n.outputs[0]);
  return w.dtype == DType::f32() && w.shape.size() == 4 && w.shape[0] == 3 && w.shape[1] == 3 && y.shape.size() == 4 &&
         y.shape[1] % 2 == 0 && y.shape[2] % 2 == 0;
}

Result<Graph> convert_winograd(const Graph& g, const std::function<bool(const Node&)>& use) {
  Graph out = g;
  for (Node& n : out.mutable_nodes()) {
    if (!winograd_eligible(g, n) || !use(n)) continue;
    const Constant& hwio = g.constant(n.inputs[1]);
    const int64_t c = hwio.shape[2], k = hwio.shape[3];
    std::vector<float> w(static_cast<size_t>(hwio.num_elements()));
    std::memcpy(w.data(), hwio.bytes.data(), hwio.bytes.size());
    n.inputs[1] = out.add_constant(g.value(n.inputs[1]).name + ".winograd",
                                   Constant::from_floats({4, 4, c, k}, ops::winograd_f2x3_weights(w, c, k)));
    std::get<ConvAttrs>(n.attrs).winograd = true;
  }
  TESSERA_RETURN_IF_ERROR(out.validate());
  return eliminate_dead_nodes(out);
}

}  // namespace tessera::graph
