// The graph IR: a model as a list of operator nodes over values with static
// shapes and dtypes.
//
//   Graph g;
//   ValueId x = g.add_input("x", {1, 3, 8, 8}, DType::f32());
//   ValueId w = g.add_constant("w", Constant::from_floats({4, 3, 3, 3}, data));
//   ValueId y = g.add_op("conv0", OpKind::kConv, ConvAttrs{}, {x, w}, {1, 4, 6, 6}, DType::f32());
//   g.set_outputs({y});
//
// Invariants: nodes are in topological order (every input of a node is a graph
// input, a constant or the output of an earlier node); each value has at most
// one producer; values are identified by ValueId (an index), names are only
// for printing and for matching user bindings.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "compiler/ops/elementwise.h"
#include "compiler/te/tensor.h"

namespace tessera::graph {

/// Every operator kind, listed once, with what it is: X(enum name, printed
/// name, FusionRule, foldable, scalar function). The scalar function of an
/// elementwise kind is ops' (compiler/ops/elementwise.h): unary(F) or
/// binary(F) by name, attrs for kUnary and kBinary (their attributes name
/// it), none for every other kind. The row is the one place a kind's facts
/// live; op_traits reads them.
// clang-format off
#define TESSERA_GRAPH_OPS(X)                                                          \
  X(kConv,             "conv",             kComplex,     false, none)                 \
  X(kConvTranspose,    "conv_transpose",   kComplex,     false, none)                 \
  X(kGemm,             "gemm",             kComplex,     false, none)                 \
  X(kMatMul,           "matmul",           kComplex,     false, none)                 \
  X(kAdd,              "add",              kByShapes,    true,  binary(kAdd))         \
  X(kSub,              "sub",              kByShapes,    true,  binary(kSub))         \
  X(kMul,              "mul",              kByShapes,    true,  binary(kMul))         \
  X(kDiv,              "div",              kByShapes,    true,  binary(kDiv))         \
  X(kPow,              "pow",              kByShapes,    true,  binary(kPow))         \
  X(kMax,              "max",              kByShapes,    true,  binary(kMax))         \
  X(kMin,              "min",              kByShapes,    true,  binary(kMin))         \
  X(kRelu,             "relu",             kElementwise, true,  unary(kRelu))         \
  X(kLeakyRelu,        "leaky_relu",       kElementwise, true,  unary(kLeakyRelu))    \
  X(kSigmoid,          "sigmoid",          kElementwise, true,  unary(kSigmoid))      \
  X(kHardSigmoid,      "hard_sigmoid",     kElementwise, true,  unary(kHardSigmoid))  \
  X(kHardSwish,        "hardswish",        kElementwise, true,  unary(kHardSwish))    \
  X(kTanh,             "tanh",             kElementwise, true,  unary(kTanh))         \
  X(kClip,             "clip",             kElementwise, true,  unary(kClip))         \
  X(kErf,              "erf",              kElementwise, true,  unary(kErf))          \
  X(kBatchNorm,        "batch_norm",       kBroadcast,   false, none)                 \
  X(kMaxPool,          "max_pool",         kReduction,   false, none)                 \
  X(kAvgPool,          "avg_pool",         kReduction,   false, none)                 \
  X(kGlobalAvgPool,    "global_avg_pool",  kReduction,   false, none)                 \
  X(kReshape,          "reshape",          kInjective,   true,  none)                 \
  X(kTranspose,        "transpose",        kInjective,   true,  none)                 \
  X(kConcat,           "concat",           kInjective,   true,  none)                 \
  X(kSoftmax,          "softmax",          kReduction,   false, none)                 \
  X(kReduceMean,       "reduce_mean",      kReduction,   false, none)                 \
  X(kReduceSum,        "reduce_sum",       kReduction,   false, none)                 \
  X(kReduceMax,        "reduce_max",       kReduction,   false, none)                 \
  X(kLayerNorm,        "layer_norm",       kReduction,   false, none)                 \
  X(kPad,              "pad",              kInjective,   true,  none)                 \
  X(kSlice,            "slice",            kInjective,   true,  none)                 \
  X(kResize,           "resize",           kInjective,   false, none)                 \
  X(kShape,            "shape",            kInjective,   true,  none)                 \
  X(kGather,           "gather",           kInjective,   true,  none)                 \
  X(kCast,             "cast",             kElementwise, true,  none)                 \
  X(kUnary,            "unary",            kElementwise, true,  attrs)                \
  X(kBinary,           "binary",           kByShapes,    true,  attrs)                \
  X(kWhere,            "where",            kByShapes,    true,  none)                 \
  X(kReduceMin,        "reduce_min",       kReduction,   false, none)                 \
  X(kReduceBounds,     "reduce_bounds",    kReduction,   false, none)                 \
  X(kReduceProd,       "reduce_prod",      kReduction,   false, none)                 \
  X(kArgMax,           "arg_max",          kReduction,   false, none)                 \
  X(kArgMin,           "arg_min",          kReduction,   false, none)                 \
  X(kCumSum,           "cumsum",           kReduction,   false, none)                 \
  X(kGatherElements,   "gather_elements",  kInjective,   true,  none)                 \
  X(kExpand,           "expand",           kInjective,   true,  none)                 \
  X(kTile,             "tile",             kInjective,   true,  none)                 \
  X(kGatherND,         "gather_nd",        kInjective,   false, none)                 \
  X(kScatterElements,  "scatter_elements", kReduction,   false, none)                 \
  X(kScatterND,        "scatter_nd",       kReduction,   false, none)                 \
  X(kEinsum,           "einsum",           kByLetters,   false, none)                 \
  X(kGridSample,       "grid_sample",      kInjective,   false, none)                 \
  X(kQuantize,         "quantize",         kByShapes,    true,  none)                 \
  X(kDequantize,       "dequantize",       kByShapes,    true,  none)                 \
  X(kMatMulU8S8,       "matmul_u8s8",      kComplex,     false, none)                 \
  X(kConvU8S8,         "conv_u8s8",        kComplex,     false, none)                 \
  X(kMatMulBf16,       "matmul_bf16",      kComplex,     false, none)                 \
  X(kConvBf16,         "conv_bf16",        kComplex,     false, none)                 \
  X(kExternal,         "external",         kComplex,     false, none)                 \
  X(kIf,               "if",               kComplex,     false, none)                 \
  X(kLoop,             "loop",             kComplex,     false, none)
// clang-format on

/// The operator a node applies. Reshape also stands for Flatten, Squeeze and
/// Unsqueeze: its output value's shape says everything. kQuantize and
/// kDequantize take (x, scale, zero point), the last two shaped to broadcast
/// against x (ops/quantize.h). kMatMulU8S8 is ops::matmul_u8s8 of uint8
/// bytes [..., M, K] and int8 weights packed four to an int32 word
/// [K/4, N], to int32. kConvU8S8 is the convolution of uint8 X and int8
/// weights to int32 (ConvAttrs): NCHW with OIHW int8 weights as the
/// importer writes it, or NHWC with the weights packed four input channels
/// to an int32 word, R x S x C/(4 groups) x K (ops::conv2d_nhwc_u8s8), or
/// for a depthwise conv int8 weights R x S x 1 x K
/// (ops::depthwise_conv2d_nhwc_u8s8), both made by convert_layout_nhwc; the
/// padding reads ConvAttrs::pad_value.
/// kMatMulBf16 is ops::matmul_bf16 of bfloat16 (or float32) [..., M, K] and
/// bfloat16 weights packed in pairs along K [K/2, N, 2], to float32 (made by
/// convert_bf16). kConvBf16 is ops::conv2d_nhwc_bf16 of bfloat16 NHWC X and
/// weights R x S x C/2 x K x 2 with an optional float32 bias of K
/// (ConvAttrs, NHWC, groups 1; made by convert_bf16).
/// kExternal is a region
/// handed whole to an external backend (ExternalAttrs; made by partitioning,
/// never by the importer). kIf and kLoop are control flow the device runs
/// (ControlAttrs): made by the importer where a condition or a trip count
/// is known only from the data.
enum class OpKind : uint8_t {
#define TESSERA_GRAPH_OP_ENUM(e, ...) e,
  TESSERA_GRAPH_OPS(TESSERA_GRAPH_OP_ENUM)
#undef TESSERA_GRAPH_OP_ENUM
};

/// How a kind fuses: its OpPattern, or the rule that gives a node's.
enum class FusionRule : uint8_t {
  kComplex,      ///< conv, gemm, matmul and what runs as one (external, control flow)
  kReduction,    ///< pools, reductions, softmax, normalisations, scans, scatters
  kInjective,    ///< moves data: reshape, transpose, concat, gathers, pad, slice, resize
  kBroadcast,    ///< reads its parameters broadcast (batch norm)
  kElementwise,  ///< one element in, one out
  kByShapes,     ///< elementwise when every input has the output's shape, else broadcast
  kByLetters,    ///< einsum: complex when it sums over a letter, else injective or broadcast
};

/// Which of ops' scalar functions an elementwise kind applies: its kernel
/// (build_node) and its constant folding (evaluate_node) both take the one
/// definition there.
struct ScalarFn {
  enum class Of : uint8_t {
    kNone,    ///< not an elementwise function of its operands
    kUnary,   ///< `unary` of one operand
    kBinary,  ///< `binary` of two, broadcast
    kAttrs,   ///< named by the node's UnaryAttrs or BinaryAttrs
  };
  Of of = Of::kNone;
  ops::UnaryFn unary{};
  ops::BinaryFn binary{};
};

/// What an operator kind is, as data: its row of TESSERA_GRAPH_OPS.
struct OpTraits {
  const char* name;   ///< printed, e.g. "batch_norm"
  FusionRule fusion;  ///< node_pattern's rule
  bool foldable;      ///< evaluate_node computes it on constant inputs
  ScalarFn scalar;    ///< the function it applies elementwise, if it is one
};
const OpTraits& op_traits(OpKind kind);

/// The printed name of a kind, e.g. "batch_norm".
inline const char* op_kind_name(OpKind kind) {
  return op_traits(kind).name;
}

/// No attributes.
struct NoAttrs {};
/// Conv: NCHW input, OIHW weight, optional bias of K. ConvTranspose: the same
/// fields, weight C x K/groups x R x S; the output value's shape carries any
/// output_padding.
struct ConvAttrs {
  int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1, groups = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  /// Conv only: NHWC input and output, HWIO weight (R x S x C/groups x K);
  /// set by convert_layout_nhwc, never by the importer.
  bool nhwc = false;
  /// NHWC conv only: computed by Winograd F(2x2, 3x3), the weight given
  /// transformed (4 x 4 x C x K, ops/winograd.h); set by convert_winograd.
  bool winograd = false;
  /// kConvU8S8 only: the uint8 read outside the input (its zero point).
  int64_t pad_value = 0;
  /// NHWC kConvU8S8 with word weights and one group only: computed as
  /// ops::conv2d_nhwc_u8s8_pairs, in 2 x 2 tiles over eight bytes of C (set
  /// by pair_int8_products).
  bool pairs = false;
};
/// Gemm: alpha * op(A) * op(B) + beta * C.
struct GemmAttrs {
  double alpha = 1.0, beta = 1.0;
  bool trans_a = false, trans_b = false;
};
/// Max and average pooling over NCHW (floor mode).
struct PoolAttrs {
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  bool count_include_pad = false;
  /// MaxPool only: NHWC input and output; set by convert_layout_nhwc.
  bool nhwc = false;
  /// MaxPool only: the output is ONNX's Indices, not the values: the int64
  /// flat index into X (n, c, h, w row-major; with column_major, ONNX's
  /// storage_order 1, n, c, w, h) of each window's first maximum in
  /// row-major window order. Padding never counts.
  bool indices = false;
  bool column_major = false;
};
/// One scalar parameter: LeakyRelu's alpha, BatchNorm's epsilon.
struct ScalarAttrs {
  double value = 0.0;
};
/// HardSigmoid: max(0, min(1, alpha * x + beta)); Clip: min(max(x, lo), hi).
struct AffineAttrs {
  double alpha = 0.0, beta = 0.0;
};
/// An axis (non-negative): Concat, Softmax, Gather.
struct AxisAttrs {
  int64_t axis = 0;
};
/// Transpose's permutation: output dim d is input dim perm[d].
struct PermAttrs {
  std::vector<int64_t> perm;
};
/// LayerNorm over the axes [axis, rank) with epsilon.
struct NormAttrs {
  int64_t axis = -1;
  double epsilon = 1e-5;
  /// The normalized axes: [axis, rank) when 0, else `count` axes from
  /// `axis` (an instance norm over the time of a channels-last [N, W, C]).
  int64_t count = 0;
};
/// Padding: pads before and after each dimension, filled with `value`
/// (kConstant), the nearest edge element (kEdge) or the mirror image without
/// repeating the edge (kReflect; each pad < its dimension).
struct PadAttrs {
  enum class Mode : uint8_t { kConstant, kEdge, kReflect };
  std::vector<int64_t> before, after;
  double value = 0.0;
  Mode mode = Mode::kConstant;
};
/// The input index that padded position `i` (counted from the input's first
/// element, so negative before it) reads along a dimension of length `n`: `i`
/// itself for kConstant (outside [0, n) means the fill value), clamped for
/// kEdge, mirrored for kReflect.
inline int64_t pad_source_index(PadAttrs::Mode mode, int64_t i, int64_t n) {
  switch (mode) {
    case PadAttrs::Mode::kConstant: return i;
    case PadAttrs::Mode::kEdge: return i < 0 ? 0 : i >= n ? n - 1 : i;
    case PadAttrs::Mode::kReflect: return i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i;
  }
  return i;
}
/// Slice, one entry per input dimension: out[i] = in[start + i * step].
struct SliceAttrs {
  std::vector<int64_t> starts, steps;
};
/// Resize: how an output coordinate maps to an input one and how it samples.
struct ResizeAttrs {
  /// kCubic: Keys' cubic convolution with coefficient `cubic_a` over 4 taps
  /// (edge-clamped; with exclude_outside, taps outside the input get weight 0
  /// and the rest are renormalized).
  enum class Mode : uint8_t { kNearest, kLinear, kCubic };
  /// ONNX coordinate_transformation_mode.
  /// kTfCropAndResize samples the box `roi` (starts then ends, fractions of
  /// each dimension) and yields `extrapolation_value` outside the input.
  enum class Coord : uint8_t {
    kHalfPixel,
    kAsymmetric,
    kAlignCorners,
    kPytorchHalfPixel,
    kTfHalfPixelForNn,
    kTfCropAndResize
  };
  /// ONNX nearest_mode.
  enum class Round : uint8_t { kPreferFloor, kPreferCeil, kFloor, kCeil };
  Mode mode = Mode::kNearest;
  Coord coord = Coord::kHalfPixel;
  Round round = Round::kPreferFloor;
  std::vector<double> scales;  ///< output / input per dimension
  double cubic_a = -0.75;
  bool exclude_outside = false;
  std::vector<double> roi;  ///< kTfCropAndResize only: 2 * rank values
  double extrapolation_value = 0.0;
};
/// ReduceMean/Sum/Max: non-negative, sorted axes.
struct ReduceAttrs {
  std::vector<int64_t> axes;
  bool keepdims = true;
};
/// Cast's target type.
struct CastAttrs {
  DType to;
};
/// kUnary: one function of ops' TESSERA_UNARY_FNS with its parameters.
struct UnaryAttrs {
  ops::UnaryFn fn = ops::UnaryFn::kNeg;
  ops::UnaryParams params;
};
/// kBinary: one function of ops' TESSERA_BINARY_FNS (broadcasting operands).
struct BinaryAttrs {
  ops::BinaryFn fn = ops::BinaryFn::kEqual;
};
/// ArgMax/ArgMin over one (non-negative) axis; CumSum along it with
/// `exclusive` and `reverse` (keepdims and select_last unused).
struct ArgAttrs {
  int64_t axis = 0;
  bool keepdims = true;
  bool select_last = false;
  bool exclusive = false, reverse = false;
};
/// ScatterElements (along `axis`) and ScatterND (axis unused): how an
/// update combines with the value it lands on. GatherND: `axis` is
/// batch_dims.
struct ScatterAttrs {
  enum class Reduction : uint8_t { kNone, kAdd, kMul };
  int64_t axis = 0;
  Reduction reduction = Reduction::kNone;
};
/// Einsum: each operand's and the output's subscripts as letter numbers
/// (0..51); letters absent from the output are summed over. `extents` gives
/// each letter's extent.
struct EinsumAttrs {
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
  std::vector<int64_t> extents;
};
/// GridSample (NCHW input, grid N x Ho x Wo x 2 of (x, y) in [-1, 1]), with
/// PyTorch's grid_sample semantics: how a tap samples, how coordinates
/// outside the input map, and whether -1 and 1 are the corner pixels'
/// centres (else their outer edges).
struct GridSampleAttrs {
  enum class Mode : uint8_t { kBilinear, kNearest, kBicubic };
  enum class Padding : uint8_t { kZeros, kBorder, kReflection };
  Mode mode = Mode::kBilinear;
  Padding padding = Padding::kZeros;
  bool align_corners = false;
};
/// MatMul: an operand may be a view of another value, read through a linear
/// index map instead of a materialised Transpose or axis-splitting Reshape
/// (set by fold_matmul_views, never by the importer; NoAttrs reads both as
/// they are). For operand index i of the view's `shape`, the value is read
/// at source index j = sum over d of map[j][d] * i[d]. An empty map: the
/// operand as it is.
struct MatMulAttrs {
  struct View {
    std::vector<int64_t> shape;
    std::vector<std::vector<int64_t>> map;  ///< source rank x view rank
  };
  View a, b;
  /// kMatMulU8S8 only: computed as ops::matmul_u8s8_pairs, in 2 x 2 tiles over
  /// eight bytes of K (pair_int8_products).
  bool pairs = false;
};
class Graph;
/// kExternal: the region an external backend runs as one function. `body`
/// is the region as a graph of its own: its inputs are the node's inputs
/// (constants included), its outputs the node's outputs, in order.
struct ExternalAttrs {
  std::string backend;                ///< the backend's name, e.g. "cblas"
  std::shared_ptr<const Graph> body;  ///< never null on a valid node
};
/// kIf and kLoop: control flow run on the device, each branch or body a
/// graph of its own (planned and compiled as a model, run between the
/// package's control steps).
///   kIf: inputs {cond (a bool scalar), captured...}; bodies {then, else},
///   each taking the captured values as its inputs, in order, and giving
///   the node's outputs (the same shapes and types).
///   kLoop: inputs {go (a bool scalar: run the first iteration),
///   carried..., captured...}; one body taking {i (the iteration, an int64
///   scalar from 0), carried..., captured...} and giving {go (run another),
///   i + 1, carried next..., scan elements...}; outputs {carried...,
///   scans...}, scan j holding `scan_slots` slots of its element: the
///   iterations' elements in order (the loop must not run more).
struct ControlAttrs {
  std::vector<std::shared_ptr<const Graph>> bodies;
  int num_carried = 0;     ///< kLoop only
  int64_t scan_slots = 0;  ///< kLoop only
};
/// A node's attributes; which alternative goes with which kind is fixed by the
/// importer and checked where they are read.
using Attrs =
    std::variant<NoAttrs, ConvAttrs, GemmAttrs, PoolAttrs, ScalarAttrs, AffineAttrs, AxisAttrs, PermAttrs, ReduceAttrs,
                 CastAttrs, NormAttrs, PadAttrs, SliceAttrs, ResizeAttrs, UnaryAttrs, BinaryAttrs, ArgAttrs,
                 ScatterAttrs, EinsumAttrs, GridSampleAttrs, MatMulAttrs, ExternalAttrs, ControlAttrs>;
/// Whether a node of `kind` is a call of its own, never fused with another:
/// an external region or control flow.
inline bool runs_alone(OpKind kind) {
  return kind == OpKind::kExternal || kind == OpKind::kIf || kind == OpKind::kLoop;
}

/// Index of a value in its graph.
using ValueId = int32_t;

/// A tensor value: static shape, element type, name for printing.
struct Value {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype;
};

/// Constant data (a weight, a folded shape): row-major little-endian bytes.
struct Constant {
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  /// Product of the dims (1 for a scalar).
  int64_t num_elements() const;
  /// Element i converted to double (float16/32/64, bfloat16, int8/32/64,
  /// uint8, bool).
  double at(int64_t i) const;
  /// All elements as doubles.
  std::vector<double> to_doubles() const;
  /// All elements as int64, exactly for the integer types (INT64_MAX, an
  /// exporter's "to the end", is no double); floats truncated, saturated.
  std::vector<int64_t> to_int64s() const;
  /// A constant of `dtype` from doubles (converted element by element).
  static Constant from_doubles(DType dtype, std::vector<int64_t> shape, const std::vector<double>& values);
  static Constant from_floats(std::vector<int64_t> shape, const std::vector<float>& values);
  static Constant from_int64s(std::vector<int64_t> shape, const std::vector<int64_t>& values);
};

/// One operator application; outputs are produced by it alone.
struct Node {
  std::string name;
  OpKind kind = OpKind::kRelu;
  Attrs attrs;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
};

/// A model: values, constants, nodes in topological order, inputs, outputs.
class Graph {
 public:
  /// A new value with no producer yet.
  ValueId add_value(std::string name, std::vector<int64_t> shape, DType dtype);
  /// A graph input (fed at run time).
  ValueId add_input(std::string name, std::vector<int64_t> shape, DType dtype);
  /// A constant value holding `data`.
  ValueId add_constant(std::string name, Constant data);
  /// A constant value holding data another graph holds too (shared_constant).
  ValueId add_constant(std::string name, std::shared_ptr<const Constant> data);
  /// Appends `node`; its inputs must already be defined (topological order).
  void add_node(Node node);
  /// Appends a one-output node and returns its new output value.
  ValueId add_op(std::string name, OpKind kind, Attrs attrs, std::vector<ValueId> inputs,
                 std::vector<int64_t> out_shape, DType out_dtype);
  /// The graph outputs, in the caller's order; `names` (optional, one per
  /// output) are the names a caller knows them by when they differ from the
  /// values' (an ONNX output produced by Identity is its input's value).
  void set_outputs(std::vector<ValueId> outputs, std::vector<std::string> names = {});

  const std::vector<Value>& values() const { return values_; }
  const Value& value(ValueId id) const { return values_.at(static_cast<size_t>(id)); }
  const std::vector<Node>& nodes() const { return nodes_; }
  std::vector<Node>& mutable_nodes() { return nodes_; }
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  /// The name of output `i`: the one given to set_outputs, else its value's.
  const std::string& output_name(size_t i) const;
  /// Points output `i` at another value (keeping its name).
  void replace_output(size_t i, ValueId value);
  bool is_constant(ValueId id) const { return constants_.count(id) != 0; }
  /// The data of a constant value; the value must be constant.
  const Constant& constant(ValueId id) const { return *constants_.at(id); }
  /// The same data, shared: a copy of the graph, or another graph given it
  /// (add_constant), holds the bytes without copying them (a model's weights
  /// pass through every graph pass).
  const std::shared_ptr<const Constant>& shared_constant(ValueId id) const { return constants_.at(id); }
  const std::map<ValueId, std::shared_ptr<const Constant>>& constants() const { return constants_; }
  /// Turns an existing (produced) value into a constant; its producer must be
  /// removed by the caller.
  void make_constant(ValueId id, Constant data) { constants_[id] = std::make_shared<const Constant>(std::move(data)); }
  void erase_constant(ValueId id) { constants_.erase(id); }
  bool is_input(ValueId id) const;

  /// For each value, the index of its producing node or -1.
  std::vector<int> producers() const;
  /// For each value, how many node inputs and graph outputs read it.
  std::vector<int> use_counts() const;
  /// Checks the invariants (topological order, one producer, ids in range,
  /// constant sizes); kInternal naming the node when broken.
  Status validate() const;

 private:
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::map<ValueId, std::shared_ptr<const Constant>> constants_;  // never null; shared by copies, never changed
  std::vector<ValueId> inputs_, outputs_;
  std::vector<std::string> output_names_;  // empty, or one per output
};

/// Total elements of a shape (1 for a scalar); saturates at INT64_MAX.
int64_t shape_size(const std::vector<int64_t>& shape);
/// "[1, 3, 224, 224]".
std::string shape_string(const std::vector<int64_t>& shape);

/// A node's elementwise function with its parameters (ScalarFn): one of
/// ops' functions of one operand (`unary`, its alpha and beta from the
/// node's attributes) or of two (`binary`).
struct NodeScalarFn {
  bool is_binary = false;
  ops::UnaryFn unary{};
  ops::BinaryFn binary{};
  ops::UnaryParams params;
};
/// nullopt for a kind that is not such a function (its ScalarFn is kNone).
std::optional<NodeScalarFn> scalar_fn(const Node& n);

/// What a node computes, for fusion: its kind's FusionRule (op_traits), with
/// the node's shapes (kByShapes) or letters (kByLetters) where the rule
/// needs them.
OpPattern node_pattern(const Graph& g, const Node& n);

/// Text form, one line per input, constant and node:
///   %3:float32[1, 4, 6, 6] = conv "conv0" (%0, %1) {stride=1x1 pad=0,0,0,0 ...}
std::string graph_to_string(const Graph& g);

}  // namespace tessera::graph
