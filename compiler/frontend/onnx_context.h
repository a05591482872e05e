// Internal to the ONNX importer: the state shared by the driver
// (onnx_import.cc) and the operator converters (onnx_ops.cc).
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/graph/graph.h"

namespace tessera::frontend::detail {

/// A sequence or an optional whose structure (a sequence's length, an
/// optional's presence) is known at import: these exist in the importer
/// only. Its tensors are graph values; a graph takes and gives them as
/// tensors (onnx_sequence_ops.cc).
struct Composite {
  enum class Kind : uint8_t { kSequence, kOptional };
  Kind kind = Kind::kSequence;
  /// A sequence's tensors in order; an optional's content, none when empty
  /// (a tensor, or a sequence: a composite id).
  std::vector<graph::ValueId> elements;
  /// The element type, for an empty sequence or optional (SequenceEmpty's
  /// dtype): the computed type, as graph values have.
  DType dtype = DType::f32();
};

/// The graph being built and the ONNX names bound to its values. A name may
/// also be bound to a Composite: its id is negative (is_composite), so that
/// what only passes values on (an If folded to its branch, an unrolled
/// Loop's carried values, Identity) carries sequences unchanged.
struct ImportContext {
  graph::Graph g;
  std::map<std::string, graph::ValueId> values;
  std::vector<Composite> composites;  ///< composite id -1 - k is composites[k]
  int64_t opset = 0;
  /// How DequantizeLinear made a value (folded at once or not): its
  /// integer input, and its scale and zero point shaped to broadcast
  /// against it. Converters that can run their operator on the integers
  /// (an integer Conv) look here.
  struct Dequantized {
    graph::ValueId x, scale, zero_point;
  };
  std::map<graph::ValueId, Dequantized> dequantized;

  /// Input i of `node`, or kInvalidArgument when it is missing or undefined,
  /// or a sequence or optional (where a tensor is expected).
  Result<graph::ValueId> input(const onnx::NodeProto& node, int i) const;
  /// Input i of `node` as a tensor or a composite, unchecked.
  Result<graph::ValueId> any_input(const onnx::NodeProto& node, int i) const;
  /// Binds a composite; returns its id.
  graph::ValueId add_composite(Composite c);
  static bool is_composite(graph::ValueId id) { return id < 0; }
  const Composite& composite(graph::ValueId id) const { return composites.at(static_cast<size_t>(-1 - id)); }
  /// "a sequence of 3 float32", "an empty optional", "a tensor", for errors.
  std::string describe(graph::ValueId id) const;
  /// Whether input i is given (present and non-empty).
  static bool has_input(const onnx::NodeProto& node, int i);
  /// The constant data of input i, or nullptr when it is not a constant.
  const graph::Constant* constant_input(const onnx::NodeProto& node, int i) const;
  /// The value `id`. The reference dies when a value is added (add, emit,
  /// add_constant): converters copy what they keep.
  const graph::Value& value(graph::ValueId id) const { return g.value(id); }

  /// Adds a one-output node named `name`, folding it at once when its inputs
  /// are all constant and it is foldable; returns its output value.
  Result<graph::ValueId> add(const std::string& name, graph::OpKind kind, graph::Attrs attrs,
                             std::vector<graph::ValueId> inputs, std::vector<int64_t> shape, DType dtype);
  /// add() named after `node`, binding output 0 of `node` to the result.
  Status emit(const onnx::NodeProto& node, graph::OpKind kind, graph::Attrs attrs, std::vector<graph::ValueId> inputs,
              std::vector<int64_t> shape, DType dtype);
  /// Binds output 0 of `node` to an existing value (Identity, Dropout).
  void alias(const onnx::NodeProto& node, graph::ValueId id) { values[node.output(0)] = id; }
};

/// Attribute readers with ONNX defaults.
int64_t attr_int(const onnx::NodeProto& node, const std::string& name, int64_t fallback);
float attr_float(const onnx::NodeProto& node, const std::string& name, float fallback);
std::string attr_string(const onnx::NodeProto& node, const std::string& name, const std::string& fallback);
std::vector<int64_t> attr_ints(const onnx::NodeProto& node, const std::string& name,
                               const std::vector<int64_t>& fallback = {});
const onnx::AttributeProto* find_attr(const onnx::NodeProto& node, const std::string& name);

/// ONNX element type -> DType; kInvalidArgument for types Tessera lacks.
Result<DType> dtype_of_onnx(int32_t elem_type);
/// The type a model's value of `model_type` has in the graph. float16 and
/// bfloat16 values compute in float32, as ONNX Runtime's CPU provider runs
/// most operators of a float16 model on x86: the model's precision is kept
/// where it rounds (its Casts to them, its inputs and outputs), not between.
DType computed_type(DType model_type);
/// dtype_of_onnx, then computed_type: for converters' "dtype" attributes.
Result<DType> computed_type_of_onnx(int32_t elem_type);
/// `c` in its computed_type (float16 and bfloat16 data widened to float32).
graph::Constant widened(const graph::Constant& c);
/// A TensorProto (raw or typed fields) as a constant in its computed_type;
/// external data is an error.
Result<graph::Constant> constant_of_tensor(const onnx::TensorProto& t);
/// The same in the tensor's own type (float16 stays float16): data to feed
/// a model or compare its outputs with.
Result<graph::Constant> tensor_data_of(const onnx::TensorProto& t);

/// An axis in [-rank, rank) as a position in [0, rank); `what` names it in errors.
Result<int64_t> norm_axis(int64_t axis, size_t rank, const char* what);
/// Ints given by attribute `name` (older opsets) or by constant input
/// `index` (newer ones); *given is false when neither is present.
Result<std::vector<int64_t>> ints_from(const ImportContext& ctx, const onnx::NodeProto& node, const std::string& name,
                                       int index, bool* given);

/// Converters of data-movement and shape operators (onnx_shape_ops.cc).
Status convert_reshape(ImportContext& ctx, const onnx::NodeProto& node);  ///< also Flatten, Squeeze, Unsqueeze
Status convert_transpose(ImportContext& ctx, const onnx::NodeProto& node);
Status convert_concat(ImportContext& ctx, const onnx::NodeProto& node);
Status convert_slice(ImportContext& ctx, const onnx::NodeProto& node);
Status convert_split(ImportContext& ctx, const onnx::NodeProto& node);  ///< one slice per output
Status convert_pad(ImportContext& ctx, const onnx::NodeProto& node);
Status convert_constant(ImportContext& ctx, const onnx::NodeProto& node);
Status convert_shape(ImportContext& ctx, const onnx::NodeProto& node);
Status convert_gather(ImportContext& ctx, const onnx::NodeProto& node);
Status convert_cast(ImportContext& ctx, const onnx::NodeProto& node);
Status convert_identity(ImportContext& ctx, const onnx::NodeProto& node);  ///< also Dropout

/// A 2-D Conv's attributes (strides, dilations, pads from `pads` or
/// auto_pad, group) checked against input `xs` and weight `ws`, and its
/// output shape.
struct ConvGeometry {
  graph::ConvAttrs attrs;
  std::vector<int64_t> shape;
};
Result<ConvGeometry> conv_geometry(const onnx::NodeProto& node, const std::vector<int64_t>& xs,
                                   const std::vector<int64_t>& ws);
/// A 2-D Conv of dequantized uint8 X (one scale and zero point) and
/// dequantized constant int8 weights (zero points 0) run on the integers
/// (onnx_quant_ops.cc): the int32 convolution, then its scales and bias as
/// an epilogue. False, with nothing emitted, where that does not apply.
Result<bool> convert_dequantized_conv(ImportContext& ctx, const onnx::NodeProto& node, const ConvGeometry& geometry);
/// A MatMul (or Gemm, its B transposed when `trans_b`) of dequantized
/// uint8 or int8 A (one scale and zero point) and dequantized constant int8
/// B (zero points 0, scaled as a whole or per output column) run on the
/// integers (onnx_quant_ops.cc): the int32 product on packed words, then
/// its scales and a Gemm's bias as an epilogue. False, with nothing
/// emitted, where that does not apply.
Result<bool> convert_dequantized_matmul(ImportContext& ctx, const onnx::NodeProto& node, bool trans_b);

/// 3-D Conv and ConvTranspose (rank-5 input), as 2-D convolutions
/// (onnx_conv3d.cc); convert_conv and convert_conv_transpose dispatch here.
Status convert_conv_3d(ImportContext& ctx, const onnx::NodeProto& node);
Status convert_conv_transpose_3d(ImportContext& ctx, const onnx::NodeProto& node);

/// Whether `op_type` had the opset < 7 `broadcast` and `axis` attributes
/// (or, PRelu, a per-channel slope).
bool has_legacy_broadcast(const std::string& op_type);
/// `node` (an opset < 7 binary operator) with today's broadcasting meaning
/// the same: B reshaped to align at `axis` (onnx_legacy.cc). Errors: shapes
/// that differ without broadcast=1, a B that does not fit A.
Result<onnx::NodeProto> legacy_broadcast(ImportContext& ctx, const onnx::NodeProto& node);

/// kInvalidArgument with `why`: how a converter refuses a node.
inline Status invalid(const std::string& why) {
  return Status(ErrorCode::kInvalidArgument, why);
}

/// A converter: validates `node` and emits its graph nodes into `ctx`.
using Converter = Status (*)(ImportContext& ctx, const onnx::NodeProto& node);
/// Adds the converters of elementwise math, activations, comparison and
/// logic, reductions and normalisations (onnx_math_ops.cc).
void add_math_converters(std::map<std::string, Converter>& table);
/// Adds the converters of constant-producing and data-movement operators
/// (onnx_data_ops.cc).
void add_data_converters(std::map<std::string, Converter>& table);

/// Adds the converters of the quantization operators: Quantize/Dequantize-
/// Linear, DynamicQuantizeLinear and the integer products
/// (onnx_quant_ops.cc).
void add_quant_converters(std::map<std::string, Converter>& table);

/// "node 'NAME' (OP)" for errors; a node without a name by its index in its
/// graph, "#3".
std::string node_label(const onnx::NodeProto& node, int index);
/// The name a converter gives the extra nodes of `node`: its name, or its
/// first output's when it has none.
std::string base_name(const onnx::NodeProto& node);
/// A scalar (0-d) constant of `dtype` named `name`.
graph::ValueId scalar_constant(ImportContext& ctx, const std::string& name, DType dtype, double value);

/// Adds the converters of sequences and optionals of a structure known at
/// import (onnx_sequence_ops.cc).
void add_sequence_converters(std::map<std::string, Converter>& table);
/// The tensors of `id` in order: itself, or a composite's (an optional's
/// sequence's) elements.
std::vector<graph::ValueId> flatten_value(const ImportContext& ctx, graph::ValueId id);
/// Whether `a` in `ca` and `b` in `cb` have one structure: both tensors,
/// or composites of the same kind, length and presence, nested alike.
bool same_structure(const ImportContext& ca, graph::ValueId a, const ImportContext& cb, graph::ValueId b);
/// A value of `like`'s structure (in `like_ctx`) bound in `ctx`, its
/// tensors taken in order from `tensors` at `*next`.
graph::ValueId rebuild_value(ImportContext& ctx, const ImportContext& like_ctx, graph::ValueId like,
                             const std::vector<graph::ValueId>& tensors, size_t* next);

/// Adds LSTM, GRU and RNN, unrolled over their static sequence length
/// (onnx_recurrent.cc).
void add_recurrent_converters(std::map<std::string, Converter>& table);
/// Adds the converters of control flow resolved at compile time (If with a
/// known condition; onnx_control_flow.cc).
void add_control_flow_converters(std::map<std::string, Converter>& table);
/// Converts the nodes of `graph` (an If branch: no inputs; its initializers
/// become constants; outer values read by name) in dependency order;
/// errors name `where` and the node.
Status convert_subgraph(ImportContext& ctx, const onnx::GraphProto& graph, const std::string& where);

/// One unrolled copy (number `k`) of `body` (a Loop's, a Scan's, a
/// SequenceMap's) converted into `ctx`: its inputs bound to `inputs`, every
/// name local to it suffixed with "@base.k" so that copies do not collide;
/// its outputs.
Result<std::vector<graph::ValueId>> unroll_body(ImportContext& ctx, const onnx::GraphProto& body,
                                                const std::vector<graph::ValueId>& inputs, const std::string& base,
                                                int64_t k);

/// Converts the initializers and nodes of `graph` (its inputs already
/// bound in `ctx`) in dependency order; errors name `where` and the node.
Status convert_body_nodes(ImportContext& ctx, const onnx::GraphProto& graph, const std::string& where);
/// An If whose condition `cond` is known only at run time, as a kIf node
/// whose branches are graphs of their own (onnx_control_bodies.cc).
Status convert_if_at_run_time(ImportContext& ctx, const onnx::NodeProto& node, graph::ValueId cond);
/// A Loop whose trip count or condition is known only at run time, or too
/// long to unroll, as a kLoop node (`trips`: its trip count where constant).
Status convert_loop_at_run_time(ImportContext& ctx, const onnx::NodeProto& node, std::optional<double> trips);
/// Names `graph` reads that none of its inputs, initializers or nodes
/// define: what it reads from enclosing scopes (onnx_graph_order.cc).
std::set<std::string> free_names(const onnx::GraphProto& graph);

/// The nodes of `graph` in an order where each comes after the producers of
/// what it reads, its subgraphs' reads from enclosing scopes included
/// (onnx_graph_order.cc): the file's order where that is one. A cycle is
/// kInvalidArgument naming the nodes on it.
Result<std::vector<int>> topological_order(const onnx::GraphProto& graph);
/// What `node` reads: its inputs and the names its subgraphs read from
/// enclosing scopes.
std::set<std::string> node_reads(const onnx::NodeProto& node);

/// Converts one node; the error says why (the driver adds name and type).
Status convert_node(ImportContext& ctx, const onnx::NodeProto& node);
/// Whether convert_node knows `op_type`.
bool is_supported_op(const std::string& op_type);
/// Sorted list of the operator types convert_node knows.
std::vector<std::string> supported_ops();

}  // namespace tessera::frontend::detail
