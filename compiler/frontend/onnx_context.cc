#include "compiler/frontend/onnx_context.h"

#include <cstring>

#include "compiler/graph/passes.h"

namespace tessera::frontend::detail {

using graph::Constant;
using graph::ValueId;
using Node = onnx::NodeProto;

Result<ValueId> ImportContext::any_input(const onnx::NodeProto& node, int i) const {
  if (!has_input(node, i)) return invalid("input " + std::to_string(i) + " is missing");
  auto it = values.find(node.input(i));
  if (it == values.end()) return invalid("input '" + node.input(i) + "' is not defined before this node");
  return it->second;
}

Result<ValueId> ImportContext::input(const onnx::NodeProto& node, int i) const {
  TESSERA_ASSIGN_OR_RETURN(ValueId v, any_input(node, i));
  if (is_composite(v))
    return invalid("input '" + node.input(i) + "' is " + describe(v) + ", where a tensor is expected");
  return v;
}

ValueId ImportContext::add_composite(Composite c) {
  composites.push_back(std::move(c));
  return -static_cast<ValueId>(composites.size());
}

std::string ImportContext::describe(ValueId id) const {
  if (!is_composite(id)) return "a tensor";
  const Composite& c = composite(id);
  if (c.kind == Composite::Kind::kOptional)
    return c.elements.empty() ? "an empty optional" : "an optional holding " + describe(c.elements[0]);
  return "a sequence of " + std::to_string(c.elements.size()) + " " + c.dtype.to_string();
}

bool ImportContext::has_input(const onnx::NodeProto& node, int i) {
  return i < node.input_size() && !node.input(i).empty();
}

const Constant* ImportContext::constant_input(const onnx::NodeProto& node, int i) const {
  if (!has_input(node, i)) return nullptr;
  auto it = values.find(node.input(i));
  if (it == values.end() || is_composite(it->second) || !g.is_constant(it->second)) return nullptr;
  return &g.constant(it->second);
}

std::string node_label(const onnx::NodeProto& node, int index) {
  const std::string name = node.name().empty() ? "#" + std::to_string(index) : node.name();
  return "node '" + name + "' (" + node.op_type() + ")";
}

Result<ValueId> ImportContext::add(const std::string& name, graph::OpKind kind, graph::Attrs attrs,
                                   std::vector<ValueId> inputs, std::vector<int64_t> shape, DType dtype) {
  for (int64_t d : shape)
    if (d < 0) return invalid("output shape " + graph::shape_string(shape) + " is not static");
  // Empty tensors (a dimension of 0) are never computed: an empty output is
  // an empty constant, so no kernel, buffer or loop of extent 0 exists. A
  // node that makes a non-empty value from an empty one (a reduction over an
  // empty axis) would need its identity; converters drop empty inputs where
  // ONNX allows (Concat) and the rest is refused here.
  if (graph::shape_size(shape) == 0) return g.add_constant(name, graph::Constant{dtype, std::move(shape), {}});
  for (ValueId v : inputs)
    if (kind != graph::OpKind::kShape && graph::shape_size(g.value(v).shape) == 0)
      return invalid("input " + graph::shape_string(g.value(v).shape) + " is empty but the output " +
                     graph::shape_string(shape) + " is not: not supported for " + graph::op_kind_name(kind));
  bool all_constant = true;
  for (ValueId v : inputs) all_constant &= g.is_constant(v);
  const ValueId out = g.add_op(name, kind, std::move(attrs), std::move(inputs), std::move(shape), dtype);
  if (kind == graph::OpKind::kShape || (all_constant && graph::is_foldable(kind))) {
    const graph::Node n = g.nodes().back();
    std::vector<const Constant*> data;
    for (ValueId v : n.inputs) data.push_back(g.is_constant(v) ? &g.constant(v) : nullptr);
    TESSERA_ASSIGN_OR_RETURN(Constant c, graph::evaluate_node(g, n, data));
    g.mutable_nodes().pop_back();
    g.make_constant(out, std::move(c));
  }
  return out;
}

Status ImportContext::emit(const onnx::NodeProto& node, graph::OpKind kind, graph::Attrs attrs,
                           std::vector<ValueId> inputs, std::vector<int64_t> shape, DType dtype) {
  if (node.output_size() < 1 || node.output(0).empty()) return invalid("the node has no output");
  const std::string name = node.name().empty() ? node.output(0) : node.name();
  TESSERA_ASSIGN_OR_RETURN(ValueId out, add(name, kind, std::move(attrs), std::move(inputs), std::move(shape), dtype));
  values[node.output(0)] = out;
  return Status::ok();
}

Result<int64_t> norm_axis(int64_t axis, size_t rank, const char* what) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    return invalid(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  return axis < 0 ? axis + r : axis;
}

// Ints given by attribute `name` (older opsets) or by constant input `index`.
Result<std::vector<int64_t>> ints_from(const ImportContext& ctx, const Node& node, const std::string& name, int index,
                                       bool* given) {
  *given = true;
  if (find_attr(node, name)) return attr_ints(node, name);
  if (ImportContext::has_input(node, index)) {
    const auto* c = ctx.constant_input(node, index);
    if (!c) return invalid("'" + name + "' (input " + std::to_string(index) + ") is not a constant");
    return c->to_int64s();
  }
  *given = false;
  return std::vector<int64_t>{};
}

const onnx::AttributeProto* find_attr(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t attr_int(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  const auto* a = find_attr(node, name);
  return a ? a->i() : fallback;
}

float attr_float(const onnx::NodeProto& node, const std::string& name, float fallback) {
  const auto* a = find_attr(node, name);
  return a ? a->f() : fallback;
}

std::string attr_string(const onnx::NodeProto& node, const std::string& name, const std::string& fallback) {
  const auto* a = find_attr(node, name);
  return a ? a->s() : fallback;
}

std::vector<int64_t> attr_ints(const onnx::NodeProto& node, const std::string& name,
                               const std::vector<int64_t>& fallback) {
  const auto* a = find_attr(node, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : fallback;
}

Result<DType> dtype_of_onnx(int32_t elem_type) {
  switch (elem_type) {
    case onnx::TensorProto::FLOAT: return DType::f32();
    case onnx::TensorProto::DOUBLE: return DType::f64();
    case onnx::TensorProto::INT64: return DType::i64();
    case onnx::TensorProto::INT32: return DType::i32();
    case onnx::TensorProto::INT8: return DType::i8();
    case onnx::TensorProto::UINT8: return DType::u8();
    case onnx::TensorProto::BOOL: return DType::boolean();
    case onnx::TensorProto::FLOAT16: return DType::f16();
    case onnx::TensorProto::BFLOAT16: return DType::bf16();
    default: return invalid("element type " + std::to_string(elem_type) + " is not supported");
  }
}

DType computed_type(DType model_type) {
  return model_type == DType::f16() || model_type == DType::bf16() ? DType::f32(model_type.lanes) : model_type;
}

Result<DType> computed_type_of_onnx(int32_t elem_type) {
  TESSERA_ASSIGN_OR_RETURN(DType t, dtype_of_onnx(elem_type));
  return computed_type(t);
}

Constant widened(const Constant& c) {
  if (computed_type(c.dtype) == c.dtype) return c;
  return Constant::from_doubles(computed_type(c.dtype), c.shape, c.to_doubles());
}

Result<Constant> constant_of_tensor(const onnx::TensorProto& t) {
  TESSERA_ASSIGN_OR_RETURN(Constant c, tensor_data_of(t));
  return widened(c);
}

Result<Constant> tensor_data_of(const onnx::TensorProto& t) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return invalid("external tensor data is not supported");
  TESSERA_ASSIGN_OR_RETURN(DType dtype, dtype_of_onnx(t.data_type()));
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  for (int64_t d : shape)
    if (d < 0) return invalid("negative dimension in a tensor");
  const int64_t n = graph::shape_size(shape);
  if (n > (int64_t{1} << 40)) return invalid("tensor of " + graph::shape_string(shape) + " is too large");
  const auto bytes = static_cast<size_t>(n * dtype.storage_bytes());
  if (t.has_raw_data()) {
    if (t.raw_data().size() != bytes)
      return invalid("raw data holds " + std::to_string(t.raw_data().size()) + " bytes, the shape needs " +
                     std::to_string(bytes));
    Constant c{dtype, shape, std::vector<uint8_t>(bytes)};
    if (bytes > 0) std::memcpy(c.bytes.data(), t.raw_data().data(), bytes);
    return c;
  }
  if (dtype.bits == 16 && dtype.is_float()) {
    // float16 and bfloat16 live in int32_data, one 16-bit pattern each.
    if (t.int32_data_size() != n)
      return invalid("tensor holds " + std::to_string(t.int32_data_size()) + " values, the shape needs " +
                     std::to_string(n));
    Constant c{dtype, shape, std::vector<uint8_t>(bytes)};
    for (int64_t i = 0; i < n; ++i) {
      const auto bits = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
      std::memcpy(c.bytes.data() + 2 * i, &bits, 2);
    }
    return c;
  }
  std::vector<double> v;
  if (dtype == DType::f32())
    v.assign(t.float_data().begin(), t.float_data().end());
  else if (dtype == DType::f64())
    v.assign(t.double_data().begin(), t.double_data().end());
  else if (dtype == DType::i64())
    v.assign(t.int64_data().begin(), t.int64_data().end());
  else
    v.assign(t.int32_data().begin(), t.int32_data().end());  // int32, int8, uint8 and bool live here
  if (static_cast<int64_t>(v.size()) != n)
    return invalid("tensor holds " + std::to_string(v.size()) + " values, the shape needs " + std::to_string(n));
  return Constant::from_doubles(dtype, shape, v);
}

}  // namespace tessera::frontend::detail
