// Opset < 7 binary operators: without broadcast=1 both operands have one
// shape; with it, B's shape is aligned to A's at `axis` (or at A's trailing
// dimensions when there is no axis) and B is broadcast over the rest. The
// rewrite reshapes B so that today's NumPy broadcasting means the same. A
// dimension of 1 in B broadcasts too: that is what exporters of those
// opsets (PyTorch's) wrote and what runtimes did. PRelu before opset 7 took
// a slope of one value per channel (dimension 1 of X).
#include <set>

#include "compiler/frontend/onnx_context.h"

namespace tessera::frontend::detail {

using graph::ValueId;
using Node = onnx::NodeProto;

bool has_legacy_broadcast(const std::string& op_type) {
  static const std::set<std::string> kOps = {"Add", "Sub", "Mul",   "Div",  "Pow",     "And",
                                             "Or",  "Xor", "Equal", "Less", "Greater", "PRelu"};
  return kOps.count(op_type) != 0;
}

Result<Node> legacy_broadcast(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId a, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(ValueId b, ctx.input(node, 1));
  const auto as = ctx.value(a).shape, bs = ctx.value(b).shape;
  const bool enabled = attr_int(node, "broadcast", 0) != 0;
  const onnx::AttributeProto* axis_attr = find_attr(node, "axis");
  Node out = node;
  out.clear_attribute();
  for (const auto& attr : node.attribute())
    if (attr.name() != "broadcast" && attr.name() != "axis") *out.add_attribute() = attr;
  const std::string shapes = graph::shape_string(as) + " and " + graph::shape_string(bs);
  auto reshape_b = [&](const std::vector<int64_t>& shape) -> Result<Node> {
    if (shape == bs) return out;
    const std::string name = base_name(node) + ".legacy_b";
    TESSERA_ASSIGN_OR_RETURN(ValueId r,
                             ctx.add(name, graph::OpKind::kReshape, graph::NoAttrs{}, {b}, shape, ctx.value(b).dtype));
    ctx.values[name] = r;
    out.set_input(1, name);
    return out;
  };
  if (node.op_type() == "PRelu") {
    if (bs.size() != 1 || bs[0] == 1 || as.size() < 2) return out;  // a scalar slope, or today's broadcasting
    if (bs[0] != as[1])
      return invalid("the slope " + graph::shape_string(bs) + " has not one value per channel of " +
                     graph::shape_string(as));
    std::vector<int64_t> shape(as.size() - 1, 1);
    shape[0] = bs[0];
    return reshape_b(shape);
  }
  if (!enabled) {
    if (as != bs)
      return invalid("operands of " + shapes + " differ, and broadcast=0 (opset < 7) needs one shape; set broadcast=1");
    if (axis_attr) return invalid("axis is given without broadcast=1");
    return out;
  }
  std::vector<int64_t> shape;  // B's shape aligned to A's rank
  if (graph::shape_size(bs) == 1 && !axis_attr) {
    shape.assign(as.size(), 1);  // a scalar B
  } else {
    if (bs.size() > as.size()) return invalid("broadcast=1 with B of higher rank than A: " + shapes);
    int64_t axis = static_cast<int64_t>(as.size() - bs.size());
    if (axis_attr) {
      TESSERA_ASSIGN_OR_RETURN(axis, norm_axis(axis_attr->i(), as.size(), "axis"));
    }
    if (axis + static_cast<int64_t>(bs.size()) > static_cast<int64_t>(as.size()))
      return invalid("B " + graph::shape_string(bs) + " does not fit in A " + graph::shape_string(as) + " at axis " +
                     std::to_string(axis));
    shape.assign(as.size(), 1);
    for (size_t i = 0; i < bs.size(); ++i) {
      if (bs[i] != as[static_cast<size_t>(axis) + i] && bs[i] != 1)
        return invalid("broadcast=1: B " + graph::shape_string(bs) + " does not match A " + graph::shape_string(as) +
                       " at axis " + std::to_string(axis));
      shape[static_cast<size_t>(axis) + i] = bs[i];
    }
  }
  return reshape_b(shape);
}

}  // namespace tessera::frontend::detail
