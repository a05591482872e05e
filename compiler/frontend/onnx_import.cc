#include "compiler/frontend/onnx_import.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "compiler/frontend/onnx_context.h"
#include "compiler/graph/passes.h"

namespace tessera::frontend {

using detail::ImportContext;
using detail::node_label;
using graph::ValueId;

namespace {

Status error_list(const std::string& origin, const std::vector<std::string>& errors) {
  std::string msg = origin + ": " + std::to_string(errors.size()) + (errors.size() == 1 ? " problem" : " problems");
  for (const std::string& e : errors) msg += "\n  " + e;
  return Status(ErrorCode::kInvalidArgument, msg);
}

int64_t default_opset(const onnx::ModelProto& model) {
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  return 0;
}

// The static shape of a graph input after bindings; appends one error per
// problem. A dim is dynamic when it has a dim_param or no value.
std::vector<int64_t> input_shape(const onnx::ValueInfoProto& in, const InputShapes& bindings,
                                 const std::vector<std::string>& readers, std::vector<std::string>& errors) {
  std::vector<int64_t> shape;
  std::vector<std::string> dynamic;
  if (!in.type().tensor_type().has_shape() && !bindings.count(in.name())) {
    errors.push_back("input '" + in.name() + "' declares no shape; bind it with --input-shape " + in.name() +
                     ":d0,d1,...");
    return shape;
  }
  const auto& dims = in.type().tensor_type().shape().dim();
  for (int d = 0; d < dims.size(); ++d) {
    if (dims[d].has_dim_value() && dims[d].dim_value() >= 0) {
      shape.push_back(dims[d].dim_value());  // 0 is legal: an empty tensor
    } else if (dims[d].has_dim_value()) {
      errors.push_back("input '" + in.name() + "': dimension " + std::to_string(d) + " is " +
                       std::to_string(dims[d].dim_value()));
      shape.push_back(1);
    } else {
      shape.push_back(-1);
      dynamic.push_back(dims[d].has_dim_param() ? dims[d].dim_param() : "dim " + std::to_string(d));
    }
  }
  auto bound = bindings.find(in.name());
  std::string who = "input '" + in.name() + "'";
  std::string read_by;
  for (const std::string& r : readers) read_by += "\n    read by " + r;
  if (bound != bindings.end()) {
    if (in.type().tensor_type().has_shape() && bound->second.size() != shape.size()) {
      errors.push_back(who + ": --input-shape gives rank " + std::to_string(bound->second.size()) +
                       " but the model's rank is " + std::to_string(shape.size()));
      return shape;
    }
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] > 0 && bound->second[d] != shape[d]) {
        errors.push_back(who + ": --input-shape dim " + std::to_string(d) + " is " + std::to_string(bound->second[d]) +
                         " but the model fixes it to " + std::to_string(shape[d]));
      }
    }
    return bound->second;
  }
  if (!dynamic.empty()) {
    std::string names;
    for (const std::string& n : dynamic) names += (names.empty() ? "" : ", ") + n;
    errors.push_back(who + " has unbound dynamic dimensions (" + names + "); bind them with --input-shape " +
                     in.name() + ":d0,d1,..." + read_by);
  }
  return shape;
}

// The constant a scalar input bound to `value` is: of the input's type,
// shaped as it declares (every dim 1; a dynamic one taken as 1).
Result<graph::Constant> input_value_constant(const onnx::ValueInfoProto& in, double value, bool shape_bound) {
  if (shape_bound) return Status(ErrorCode::kInvalidArgument, "the input also has an --input-shape");
  TESSERA_ASSIGN_OR_RETURN(DType dtype, detail::dtype_of_onnx(in.type().tensor_type().elem_type()));
  std::vector<int64_t> shape;
  for (const auto& d : in.type().tensor_type().shape().dim()) {
    if (d.has_dim_value() && d.dim_value() != 1)
      return Status(ErrorCode::kInvalidArgument, "the input is not a scalar (a dimension of " +
                                                     std::to_string(d.dim_value()) + "); only scalars bind to a value");
    shape.push_back(1);
  }
  const bool integral = dtype.is_int() || dtype.is_uint() || dtype == DType::boolean();
  if (integral && value != std::floor(value))
    return Status(ErrorCode::kInvalidArgument,
                  std::to_string(value) + " is not an integer, the input is " + dtype.to_string());
  if (dtype == DType::boolean() && value != 0 && value != 1)
    return Status(ErrorCode::kInvalidArgument, "a bool input takes 0 or 1");
  return detail::widened(graph::Constant::from_doubles(dtype, shape, {value}));
}

// Nodes that read `name`, for error messages.
std::vector<std::string> readers_of(const onnx::GraphProto& gp, const std::string& name) {
  std::vector<std::string> out;
  for (int i = 0; i < gp.node_size(); ++i)
    for (const std::string& in : gp.node(i).input())
      if (in == name) {
        out.push_back(node_label(gp.node(i), i));
        break;
      }
  return out;
}

// Every node of `g` and of its subgraphs (both branches of an If, a Loop's
// body: each is reported, with its path from the top).
void check_graph_ops(const onnx::GraphProto& g, const std::string& path, std::vector<std::string>& errors) {
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& node = g.node(i);
    const std::string label = path + node_label(node, i);
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      errors.push_back(label + ": unsupported operator domain '" + node.domain() + "'");
    else if (!detail::is_supported_op(node.op_type()))
      errors.push_back(label + ": unsupported operator");
    for (const auto& a : node.attribute()) {
      if (a.type() == onnx::AttributeProto::GRAPH) check_graph_ops(a.g(), label + " " + a.name() + " > ", errors);
      for (const auto& sub : a.graphs()) check_graph_ops(sub, label + " " + a.name() + " > ", errors);
    }
  }
}

Status check_supported(const onnx::ModelProto& model, const std::string& origin) {
  std::vector<std::string> errors;
  const int64_t opset = default_opset(model);
  // Opsets 11-17 are the target. A file that declares an older opset (ONNX's
  // own node tests declare the version where each operator last changed) is
  // read with current semantics; converters reject the legacy attributes
  // whose meaning differs. Only a model without the default domain fails here.
  if (opset <= 0) errors.push_back("model: no opset of the default domain is imported");
  // Newer than the ONNX library knows: its operators may mean what no schema
  // here says, and shape inference cannot check them.
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  if (auto range = ranges.find(""); range != ranges.end() && opset > range->second.second)
    errors.push_back("model: opset " + std::to_string(opset) + " of the default domain is not supported (supported: " +
                     std::to_string(range->second.first) + "-" + std::to_string(range->second.second) + ")");
  check_graph_ops(model.graph(), "", errors);
  if (!errors.empty()) return error_list(origin, errors);
  return Status::ok();
}

// A node given two types where ONNX requires one (a float16 input beside a
// float32 one: the importer computes both in float32 and would hide it),
// named by ONNX's own type check. Its other inference errors are advisory
// here, as in cross_check_shapes.
Status check_types(const onnx::ModelProto& original, const std::string& origin) {
  onnx::ModelProto model = original;
  try {
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(/*check_type=*/true, /*error_mode=*/1));
  } catch (const std::exception& e) {
    const std::string what = e.what();
    if (what.find("inconsistent type") != std::string::npos ||
        what.find("bound to different types") != std::string::npos)
      return Status(ErrorCode::kInvalidArgument,
                    origin + ": " + what + " (ONNX requires these inputs to share one type: add a Cast)");
  }
  return Status::ok();
}

// Cross-checks the importer's shapes against ONNX's own shape inference run on
// the model with the bound input shapes: a disagreement is an importer bug or
// an inconsistent model, reported per value. Inference failing is not an error
// (it is advisory, and older opsets may lack schemas).
Status cross_check_shapes(const onnx::ModelProto& original, const ImportContext& ctx, const std::string& origin) {
  onnx::ModelProto model = original;
  for (auto& in : *model.mutable_graph()->mutable_input()) {
    auto it = ctx.values.find(in.name());
    if (it == ctx.values.end() || ImportContext::is_composite(it->second) || ctx.g.is_constant(it->second)) continue;
    auto* shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->clear_dim();
    for (int64_t d : ctx.value(it->second).shape) shape->add_dim()->set_dim_value(d);
  }
  try {
    onnx::shape_inference::InferShapes(model);
  } catch (const std::exception&) {
    return Status::ok();
  }
  std::vector<std::string> errors;
  auto check = [&](const onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
    std::vector<int64_t> onnx_shape;
    for (const auto& d : v.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return;  // not fully known: nothing to compare
      onnx_shape.push_back(d.dim_value());
    }
    auto it = ctx.values.find(v.name());
    if (it == ctx.values.end() || ImportContext::is_composite(it->second)) return;
    const auto& ours = ctx.value(it->second).shape;
    if (ours != onnx_shape)
      errors.push_back("value '" + v.name() + "': ONNX shape inference gives " + graph::shape_string(onnx_shape) +
                       ", the importer " + graph::shape_string(ours));
  };
  for (const auto& v : model.graph().value_info()) check(v);
  for (const auto& v : model.graph().output()) check(v);
  if (!errors.empty()) return error_list(origin, errors);
  return Status::ok();
}

// A tensor input of the graph named as `in`, computing in float32 where
// it is float16; nullopt (and the reason in `errors`) when its type is
// not one Tessera has.
std::optional<ValueId> bind_tensor_input(ImportContext& ctx, const onnx::ValueInfoProto& in,
                                         const ImportOptions& options, const std::vector<std::string>& readers,
                                         std::vector<std::string>& errors) {
  auto dtype = detail::dtype_of_onnx(in.type().tensor_type().elem_type());
  if (!dtype.is_ok()) {
    errors.push_back("input '" + in.name() + "': " + dtype.status().message());
    return std::nullopt;
  }
  auto shape = input_shape(in, options.input_shapes, readers, errors);
  ValueId v = ctx.g.add_input(in.name(), shape, *dtype);
  if (detail::computed_type(*dtype) != *dtype) {  // a float16 input computes in float32
    auto wide =
        ctx.add(in.name() + ".float32", graph::OpKind::kCast, graph::CastAttrs{DType::f32()}, {v}, shape, DType::f32());
    if (!wide.is_ok()) {
      errors.push_back("input '" + in.name() + "': " + wide.status().message());
      return std::nullopt;
    }
    v = *wide;
  }
  return v;
}

// The tensor type a sequence or optional holds (an optional's sequence's),
// or nullptr when it holds something else (a map, a sequence of sequences).
const onnx::TypeProto::Tensor* held_tensor_type(const onnx::TypeProto& type) {
  const onnx::TypeProto* t = &type;
  if (t->has_optional_type()) t = &t->optional_type().elem_type();
  if (t->has_sequence_type()) t = &t->sequence_type().elem_type();
  return t->has_tensor_type() ? &t->tensor_type() : nullptr;
}

// Whether a graph input of `type` holds a sequence (itself or as an optional's content).
bool holds_sequence(const onnx::TypeProto& type) {
  return type.has_sequence_type() || (type.has_optional_type() && type.optional_type().elem_type().has_sequence_type());
}

// "x[3]": the name of element i of sequence `name`, as a package's input or output.
std::string element_name(const std::string& name, size_t i) {
  return name + "[" + std::to_string(i) + "]";
}

// A sequence input's length: given, or as many elements as --input-shape binds.
std::optional<int64_t> sequence_length(const std::string& name, const ImportOptions& options) {
  if (auto it = options.sequence_lengths.find(name); it != options.sequence_lengths.end()) return it->second;
  int64_t n = 0;
  while (options.input_shapes.count(element_name(name, static_cast<size_t>(n)))) ++n;
  return n > 0 ? std::optional<int64_t>(n) : std::nullopt;
}

// A graph input that is a sequence or an optional (of a tensor or a
// sequence): its tensors become inputs of their own
// (ImportOptions::sequence_lengths, absent_inputs); each mistake into `errors`.
void bind_composite_input(ImportContext& ctx, const onnx::GraphProto& gp, const onnx::ValueInfoProto& in,
                          const ImportOptions& options, std::vector<std::string>& errors) {
  const std::string who = "input '" + in.name() + "'";
  const bool optional = in.type().has_optional_type();
  const onnx::TypeProto& content = optional ? in.type().optional_type().elem_type() : in.type();
  const onnx::TypeProto::Tensor* tensor = held_tensor_type(in.type());
  if (!tensor || content.has_optional_type()) {
    errors.push_back(who + " is not a tensor, a sequence of tensors, or an optional of either");
    return;
  }
  auto dtype = detail::computed_type_of_onnx(tensor->elem_type());
  if (!dtype.is_ok()) {
    errors.push_back(who + ": " + dtype.status().message());
    return;
  }
  using detail::Composite;
  if (optional && options.absent_inputs.count(in.name())) {
    ctx.values[in.name()] = ctx.add_composite({Composite::Kind::kOptional, {}, *dtype});
    return;
  }
  const std::vector<std::string> readers = readers_of(gp, in.name());
  auto element = [&](const std::string& name) {
    onnx::ValueInfoProto v;
    v.set_name(name);
    *v.mutable_type()->mutable_tensor_type() = *tensor;
    return bind_tensor_input(ctx, v, options, readers, errors);
  };
  ValueId held;
  if (content.has_tensor_type()) {
    auto v = element(in.name());
    if (!v) return;
    held = *v;
  } else {
    const std::optional<int64_t> n = sequence_length(in.name(), options);
    if (!n || *n < 0) {
      errors.push_back(who + " is a sequence of " + dtype->to_string() + ": a package takes its elements as inputs " +
                       element_name(in.name(), 0) + ", " + element_name(in.name(), 1) +
                       ", ...; bind each one's shape with --input-shape '" + element_name(in.name(), 0) +
                       ":d0,d1,...'");
      return;
    }
    std::vector<ValueId> elements;
    for (int64_t i = 0; i < *n; ++i) {
      auto v = element(element_name(in.name(), static_cast<size_t>(i)));
      if (!v) return;
      elements.push_back(*v);
    }
    held = ctx.add_composite({Composite::Kind::kSequence, std::move(elements), *dtype});
  }
  ctx.values[in.name()] = optional ? ctx.add_composite({Composite::Kind::kOptional, {held}, *dtype}) : held;
}

// The constants given for inputs (the options' constant_inputs and
// input_values), bound before the graph's own inputs; each mistake into
// `errors`.
void bind_given_inputs(ImportContext& ctx, const onnx::GraphProto& gp, const ImportOptions& options,
                       std::vector<std::string>& errors) {
  for (const auto& [name, data] : options.constant_inputs) {
    bool found = false;
    for (const auto& in : gp.input()) {
      if (in.name() != name) continue;
      found = true;
      auto dtype = detail::dtype_of_onnx(in.type().tensor_type().elem_type());
      const auto& dims = in.type().tensor_type().shape().dim();
      bool shape_ok = dims.size() == static_cast<int>(data.shape.size());
      for (int d = 0; shape_ok && d < dims.size(); ++d)
        shape_ok = !dims[d].has_dim_value() || dims[d].dim_value() == data.shape[d];
      if (!dtype.is_ok() || *dtype != data.dtype || !shape_ok)
        errors.push_back("constant input '" + name + "' does not match the model's type or shape");
    }
    if (!found)
      errors.push_back("a constant is given for '" + name + "', which is not a model input");
    else if (!ctx.values.count(name))
      ctx.values[name] = ctx.g.add_constant(name, detail::widened(data));
  }
  for (const auto& [name, value] : options.input_values) {
    const onnx::ValueInfoProto* in = nullptr;
    for (const auto& i : gp.input()) in = i.name() == name ? &i : in;
    if (!in) {
      errors.push_back("--input-value names '" + name + "', which is not a model input");
      continue;
    }
    auto c = input_value_constant(*in, value, options.input_shapes.count(name) != 0);
    if (!c.is_ok())
      errors.push_back("--input-value " + name + ": " + c.status().message());
    else if (!ctx.values.count(name))
      ctx.values[name] = ctx.g.add_constant(name, std::move(c).value());
  }
  for (const auto& name_shape : options.input_shapes) {
    bool found = false;
    for (const auto& in : gp.input()) {
      found |= in.name() == name_shape.first;
      // A sequence's element i, "x[i]".
      const std::string& n = name_shape.first;
      if (holds_sequence(in.type()))
        found |= n.size() > in.name().size() + 2 && n.compare(0, in.name().size() + 1, in.name() + "[") == 0 &&
                 n.back() == ']';
    }
    if (!found) errors.push_back("--input-shape names '" + name_shape.first + "', which is not a model input");
  }
  for (const auto& name : options.absent_inputs) {
    bool optional = false;
    for (const auto& in : gp.input()) optional |= in.name() == name && in.type().has_optional_type();
    if (!optional) errors.push_back("'" + name + "' is given as absent, but it is not an optional input of the model");
  }
  for (const auto& name_length : options.sequence_lengths) {
    bool sequence = false;
    for (const auto& in : gp.input())
      sequence |= in.name() == name_length.first && held_tensor_type(in.type()) && holds_sequence(in.type());
    if (!sequence)
      errors.push_back("a length is given for '" + name_length.first + "', which is not a sequence input of the model");
  }
}

// What a node may read before any node runs: the initializers, the given
// constants and the graph's inputs (a float16 input cast to the float32 it
// computes in).
void bind_values_before_nodes(ImportContext& ctx, const onnx::GraphProto& gp, const ImportOptions& options,
                              std::vector<std::string>& errors) {
  for (const auto& init : gp.initializer()) {
    auto c = detail::constant_of_tensor(init);
    if (!c.is_ok()) {
      errors.push_back("initializer '" + init.name() + "': " + c.status().message());
      continue;
    }
    ctx.values[init.name()] = ctx.g.add_constant(init.name(), std::move(c).value());
  }
  bind_given_inputs(ctx, gp, options, errors);
  for (const auto& in : gp.input()) {
    if (ctx.values.count(in.name())) continue;  // an initializer listed as an input (IR version < 4)
    if (in.type().has_sequence_type() || in.type().has_optional_type()) {
      bind_composite_input(ctx, gp, in, options, errors);
      continue;
    }
    if (auto v = bind_tensor_input(ctx, in, options, readers_of(gp, in.name()), errors)) ctx.values[in.name()] = *v;
  }
}

// Converts the nodes in dependency order (the file's where it is one); a
// node that fails poisons its outputs, and nodes that read poisoned values
// are skipped so one cause gives one message.
void convert_nodes(ImportContext& ctx, const onnx::GraphProto& gp, std::vector<std::string>& errors) {
  auto order = detail::topological_order(gp);
  if (!order.is_ok()) {
    errors.push_back(order.status().message());
    return;
  }
  std::set<std::string> poisoned;
  for (int i : *order) {
    const auto& node = gp.node(i);
    bool skip = false;
    for (const std::string& in : detail::node_reads(node)) skip |= poisoned.count(in) != 0;
    Status st = skip ? Status(ErrorCode::kInvalidArgument, "") : detail::convert_node(ctx, node);
    if (st.is_ok()) continue;
    if (!skip) errors.push_back(node_label(node, i) + ": " + st.message());
    for (const std::string& out : node.output()) poisoned.insert(out);
  }
}

// The graph's outputs and their names, a float16 one cast back from the
// float32 it was computed in. A sequence or an optional gives its tensors:
// a sequence's element i named "NAME[i]", an optional's tensor NAME, an
// empty optional nothing.
struct BoundOutputs {
  std::vector<ValueId> values;
  std::vector<std::string> names;
};

BoundOutputs bind_outputs(ImportContext& ctx, const onnx::GraphProto& gp, std::vector<std::string>& errors) {
  BoundOutputs bound;
  for (const auto& out : gp.output()) {
    auto it = ctx.values.find(out.name());
    if (it == ctx.values.end()) {
      errors.push_back("output '" + out.name() + "' is never computed");
      continue;
    }
    const std::vector<ValueId> tensors = detail::flatten_value(ctx, it->second);
    ValueId whole = it->second;
    if (ImportContext::is_composite(whole) && ctx.composite(whole).kind == detail::Composite::Kind::kOptional &&
        !ctx.composite(whole).elements.empty())
      whole = ctx.composite(whole).elements[0];
    const onnx::TypeProto::Tensor* type = held_tensor_type(out.type());
    for (size_t k = 0; k < tensors.size(); ++k) {
      const std::string name = ImportContext::is_composite(whole) ? element_name(out.name(), k) : out.name();
      const ValueId v = tensors[k];
      auto declared = detail::dtype_of_onnx(type ? type->elem_type() : 0);
      ValueId given = v;
      if (declared.is_ok() && detail::computed_type(*declared) != *declared &&
          ctx.value(v).dtype == detail::computed_type(*declared)) {
        auto narrow = ctx.add(name + "." + declared->to_string(), graph::OpKind::kCast, graph::CastAttrs{*declared},
                              {v}, ctx.value(v).shape, *declared);
        if (!narrow.is_ok()) {
          errors.push_back("output '" + name + "': " + narrow.status().message());
          continue;
        }
        given = *narrow;
      }
      bound.values.push_back(given);
      bound.names.push_back(name);
    }
  }
  return bound;
}

Result<graph::Graph> import_model(const onnx::ModelProto& model, const ImportOptions& options,
                                  const std::string& origin) {
  TESSERA_RETURN_IF_ERROR(check_supported(model, origin));
  const auto& gp = model.graph();
  ImportContext ctx;
  ctx.opset = default_opset(model);
  std::vector<std::string> errors;
  bind_values_before_nodes(ctx, gp, options, errors);
  if (!errors.empty()) return error_list(origin, errors);
  convert_nodes(ctx, gp, errors);
  if (!errors.empty()) return error_list(origin, errors);
  BoundOutputs outputs = bind_outputs(ctx, gp, errors);
  if (!errors.empty()) return error_list(origin, errors);
  // ONNX's inference runs only on what the converters accepted: on a zero
  // stride its Conv shape inference divides by zero.
  TESSERA_RETURN_IF_ERROR(check_types(model, origin));
  TESSERA_RETURN_IF_ERROR(cross_check_shapes(model, ctx, origin));
  ctx.g.set_outputs(std::move(outputs.values), std::move(outputs.names));
  TESSERA_RETURN_IF_ERROR(ctx.g.validate());
  return graph::eliminate_dead_nodes(ctx.g);
}

}  // namespace

Result<InputShapes> parse_input_shapes(const std::vector<std::string>& specs) {
  InputShapes out;
  for (const std::string& spec : specs) {
    // name:d0,d1 (a name may hold colons: the last one separates), or
    // name=d0,d1; the dimensions may be bracketed as tvmc writes them
    // (x:[1,3,224,224]).
    auto colon = spec.rfind(':');
    if (colon == std::string::npos) colon = spec.rfind('=');
    auto bad = [&](const std::string& why) {
      return Status(ErrorCode::kInvalidArgument, "--input-shape '" + spec + "': " + why + " (expected name:d0,d1,...)");
    };
    if (colon == std::string::npos || colon == 0) return bad("no input name");
    std::string list = spec.substr(colon + 1);
    if (list.size() >= 2 && list.front() == '[' && list.back() == ']') list = list.substr(1, list.size() - 2);
    std::vector<int64_t> dims;
    std::stringstream ss(list);
    std::string item;
    while (std::getline(ss, item, ',')) {
      char* end = nullptr;
      const long long v = std::strtoll(item.c_str(), &end, 10);
      if (item.empty() || *end != '\0' || v <= 0) return bad("'" + item + "' is not a positive integer");
      dims.push_back(v);
    }
    if (dims.empty()) return bad("no dimensions");
    const std::string name = spec.substr(0, colon);
    if (out.count(name)) return bad("input bound twice");
    out[name] = dims;
  }
  return out;
}

Result<std::map<std::string, double>> parse_input_values(const std::vector<std::string>& specs) {
  std::map<std::string, double> out;
  for (const std::string& spec : specs) {
    auto bad = [&](const std::string& why) {
      return Status(ErrorCode::kInvalidArgument, "--input-value '" + spec + "': " + why + " (expected name=value)");
    };
    const auto eq = spec.rfind('=');
    if (eq == std::string::npos || eq == 0) return bad("no input name");
    const std::string text = spec.substr(eq + 1);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !std::isfinite(v)) return bad("'" + text + "' is not a number");
    const std::string name = spec.substr(0, eq);
    if (out.count(name)) return bad("input bound twice");
    out[name] = v;
  }
  return out;
}

Result<graph::Graph> import_onnx_bytes(const std::string& bytes, const ImportOptions& options,
                                       const std::string& origin) {
  onnx::ModelProto model;
  if (bytes.empty()) return Status(ErrorCode::kParseError, origin + ": empty file, not an ONNX model");
  if (!model.ParseFromString(bytes))
    return Status(ErrorCode::kParseError, origin + ": not a valid ONNX model (malformed or truncated protobuf)");
  if (!model.has_graph() || model.graph().node_size() == 0)
    return Status(ErrorCode::kParseError, origin + ": the ONNX model has no graph nodes (truncated or not a model)");
  return import_model(model, options, origin);
}

namespace {
std::atomic<int64_t> files_read{0};
}  // namespace

int64_t onnx_files_read() {
  return files_read.load(std::memory_order_relaxed);
}

Result<graph::Graph> import_onnx_file(const std::string& path, const ImportOptions& options) {
  files_read.fetch_add(1, std::memory_order_relaxed);
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(ErrorCode::kNotFound, path + ": cannot open: " + std::strerror(errno));
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return Status(ErrorCode::kIOError, path + ": read failed");
  return import_onnx_bytes(buffer.str(), options, path);
}

std::vector<std::string> supported_onnx_ops() {
  return detail::supported_ops();
}

std::string supported_onnx_ops_markdown() {
  const std::vector<std::string> ops = supported_onnx_ops();
  std::string md =
      "# ONNX operators\n\n"
      "<!-- Generated by `tessera compile --list-ops --markdown` from the importer's converter table\n"
      "     (compiler/frontend); the test `docs_operators_md` fails when this file differs. -->\n\n"
      "The " +
      std::to_string(ops.size()) +
      " operators of the default ONNX domain that `tessera compile` imports (opsets 11-17).\n"
      "Each converter checks its attributes and shapes; an attribute value or a shape it does not\n"
      "support fails the import with an error that names the node. compiler/frontend/README.md says\n"
      "what each supports. Window operators (Conv, ConvTranspose, MaxPool, AveragePool) take 1-D,\n"
      "2-D and 3-D inputs; a dimension of 0 (an empty tensor) is legal; older opsets are read with\n"
      "current semantics, and binary operators of opsets before 7 with their `broadcast` and `axis`.\n\n"
      "Control flow resolves at compile time: an If whose condition is known then (constants, static\n"
      "shapes, inputs bound with --input-value) becomes the branch it takes; a Loop whose trip count and\n"
      "conditions are known is unrolled, as are Scan (opset 8, each batch element on its own, and\n"
      "later), LSTM, GRU and RNN over their static length. The rest runs on the device (control steps,\n"
      "docs/package.md): an If on data runs the branch its condition names, each branch compiled with\n"
      "its own kernels; a Loop whose trip count or condition comes from the data, or that is too long\n"
      "to unroll (over 4,096 iterations or 200,000 nodes unrolled), runs its body as often as they say,\n"
      "with its carried values in place. Such a loop keeps its carried shapes, and may have scan outputs\n"
      "only when the number of its iterations is known (a constant trip count, conditions that never\n"
      "turn false); otherwise it is refused, saying what to bind. A loop whose condition stays true and\n"
      "that has no trip count is refused. A Slice whose start is known only at run time (a loop body's\n"
      "`x[i:i+1]`: `Slice(x, Unsqueeze(i), Unsqueeze(i + 1))`) runs as a Gather of a static number of\n"
      "rows when its end is its start plus a constant, on one axis with step 1; a start that would run\n"
      "past the axis is moved back to fit.\n\n"
      "Sequences and optionals resolve at compile time too: their structure (a sequence's length, an\n"
      "optional's presence) must follow from the model and its bindings, as a scripted list that a\n"
      "Loop which unrolls appends to and ConcatFromSequence stacks; positions (SequenceAt,\n"
      "SequenceInsert, SequenceErase) and SplitToSequence's split are constants. A package takes and\n"
      "gives tensors: a sequence input or output NAME is its elements NAME[0], NAME[1], ... (an input's\n"
      "length bound by binding their shapes, --input-shape 'NAME[0]:d0,d1,...'), an optional one its\n"
      "tensor or nothing. An If on data whose branches give sequences of different lengths or\n"
      "optionals of different presence, and a Loop run on the device that carries a sequence, are\n"
      "refused. Out of scope, refused as `unsupported operator` (inside subgraphs too, each with its\n"
      "path): training operators (gradients, optimizers), map and string operators, random\n"
      "generators and signal processing (DFT, STFT, window functions).\n\n"
      "Element types: float32 and float64, int8 to int64, uint8, bool, and float16 and bfloat16.\n"
      "A float16 or bfloat16 model computes in float32 between its Casts (as ONNX Runtime's CPU\n"
      "provider runs most of its operators on x86) and rounds where it casts to them; its float16\n"
      "inputs and outputs stay float16.\n\n"
      "| | | | |\n|---|---|---|---|\n";
  const size_t columns = 4, rows = (ops.size() + columns - 1) / columns;
  for (size_t r = 0; r < rows; ++r) {
    md += "|";
    for (size_t c = 0; c < columns; ++c) {
      const size_t i = c * rows + r;
      md += " " + (i < ops.size() ? ops[i] : std::string()) + " |";
    }
    md += "\n";
  }
  return md;
}

}  // namespace tessera::frontend
