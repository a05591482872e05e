// Converters of ONNX's quantization operators: QuantizeLinear and
// DequantizeLinear (per tensor and per axis), DynamicQuantizeLinear, and the
// integer products MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv.
//
// Quantize and dequantize become graph nodes of their own (kQuantize,
// kDequantize), their parameters reshaped to broadcast along the axis. An
// integer product becomes its operands widened to int32 less their zero
// points, the product in int32 (exact, as ONNX Runtime's), and for the
// QLinear forms a requantization: the product times the float multiplier
// a_scale * b_scale / y_scale, rounded half to even, plus y's zero point,
// saturated — the order ONNX Runtime rounds in.
#include <algorithm>
#include <cmath>
#include <optional>

#include "compiler/frontend/onnx_context.h"
#include "compiler/graph/pack_words.h"
#include "compiler/ops/quantize.h"

namespace tessera::frontend::detail {

using graph::OpKind;
using graph::ValueId;
using Node = onnx::NodeProto;

namespace {

using ops::is_8_bit_integer;

// A zero point's type must be its tensor's.
Status check_zero_point_type(DType zero_point, DType want, const char* what) {
  if (zero_point != want)
    return invalid(std::string(what) + " zero point is " + zero_point.to_string() + ", its tensor " + want.to_string());
  return Status::ok();
}

// A scale known at import must be positive and finite: anything else has no
// quantized meaning (a run-time scale is the model's to get right).
Status check_scale(const ImportContext& ctx, ValueId scale, const char* what) {
  if (ctx.value(scale).dtype != DType::f32())
    return invalid(std::string(what) + " scale is " + ctx.value(scale).dtype.to_string() + ", not float32");
  if (!ctx.g.is_constant(scale)) return Status::ok();
  for (double s : ctx.g.constant(scale).to_doubles())
    if (!(s > 0) || !std::isfinite(s))
      return invalid(std::string(what) + " scale " + std::to_string(s) + " is not a positive finite number");
  return Status::ok();
}

// A scale or zero point of a tensor of shape `xs`: one value (a scalar or
// [1]) for the whole tensor, or one per index of `axis`, reshaped to
// [n, 1, ..., 1] so that it broadcasts along that axis.
Result<ValueId> along_axis(ImportContext& ctx, const std::string& name, ValueId param, const std::vector<int64_t>& xs,
                           int64_t axis, const char* what) {
  const auto ps = ctx.value(param).shape;
  const int64_t n = graph::shape_size(ps);
  if (ps.size() > 1) return invalid(std::string(what) + " must be a scalar or 1-D, not " + graph::shape_string(ps));
  if (ps.empty() || (n == 1 && (xs.empty() || xs[static_cast<size_t>(axis)] != 1))) return param;
  if (xs.empty() || n != xs[static_cast<size_t>(axis)])
    return invalid(std::string(what) + " has " + std::to_string(n) + " values, but axis " + std::to_string(axis) +
                   " of the input " + graph::shape_string(xs) + " has " +
                   (xs.empty() ? std::string("no such axis") : std::to_string(xs[static_cast<size_t>(axis)])));
  std::vector<int64_t> shape(xs.size() - static_cast<size_t>(axis), 1);
  shape[0] = n;
  return ctx.add(name, OpKind::kReshape, graph::NoAttrs{}, {param}, shape, ctx.value(param).dtype);
}

// Input `i` of `node`, or a scalar zero of `dtype` when it is absent.
Result<ValueId> zero_point_or_zero(ImportContext& ctx, const Node& node, int i, DType dtype, const char* what) {
  if (!ImportContext::has_input(node, i)) return scalar_constant(ctx, base_name(node) + "." + what, dtype, 0.0);
  return ctx.input(node, i);
}

bool is_zero_constant(const ImportContext& ctx, ValueId v) {
  if (!ctx.g.is_constant(v)) return false;
  for (double z : ctx.g.constant(v).to_doubles())
    if (z != 0) return false;
  return true;
}

// Shared by QuantizeLinear and DequantizeLinear: the axis, checked scale and
// zero point shaped along it.
struct QuantParams {
  ValueId x, scale, zero_point;
};

Result<QuantParams> quant_params(ImportContext& ctx, const Node& node, DType zero_point_default) {
  if (attr_int(node, "block_size", 0) != 0) return invalid("blocked quantization (block_size) is not supported");
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(ValueId scale, ctx.input(node, 1));
  TESSERA_ASSIGN_OR_RETURN(ValueId zp, zero_point_or_zero(ctx, node, 2, zero_point_default, "zero_point"));
  TESSERA_RETURN_IF_ERROR(check_scale(ctx, scale, "the"));
  const auto xs = ctx.value(x).shape;
  int64_t axis = 0;  // read only for per-axis parameters: ONNX ignores it otherwise
  if (graph::shape_size(ctx.value(scale).shape) != 1) {
    TESSERA_ASSIGN_OR_RETURN(axis, norm_axis(attr_int(node, "axis", 1), xs.size(), "axis"));
  }
  if (ctx.value(zp).shape != ctx.value(scale).shape && graph::shape_size(ctx.value(zp).shape) != 1)
    return invalid("the zero point " + graph::shape_string(ctx.value(zp).shape) + " and the scale " +
                   graph::shape_string(ctx.value(scale).shape) + " differ in shape");
  const std::string name = base_name(node);
  TESSERA_ASSIGN_OR_RETURN(scale, along_axis(ctx, name + ".scale", scale, xs, axis, "the scale"));
  TESSERA_ASSIGN_OR_RETURN(zp, along_axis(ctx, name + ".zero_point", zp, xs, axis, "the zero point"));
  return QuantParams{x, scale, zp};
}

Status convert_quantize_linear(ImportContext& ctx, const Node& node) {
  DType to = DType::u8();
  if (const auto* a = find_attr(node, "output_dtype"); a && a->i() != 0) {
    TESSERA_ASSIGN_OR_RETURN(to, dtype_of_onnx(static_cast<int32_t>(a->i())));
  }
  TESSERA_ASSIGN_OR_RETURN(QuantParams p, quant_params(ctx, node, to));
  const DType t = ctx.value(p.zero_point).dtype;
  if (!is_8_bit_integer(t)) return invalid("quantizing to " + t.to_string() + " is not supported (int8 and uint8 are)");
  if (ctx.value(p.x).dtype != DType::f32())
    return invalid("quantizing " + ctx.value(p.x).dtype.to_string() + " is not supported (float32 is)");
  return ctx.emit(node, OpKind::kQuantize, graph::NoAttrs{}, {p.x, p.scale, p.zero_point}, ctx.value(p.x).shape, t);
}

Status convert_dequantize_linear(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x0, ctx.input(node, 0));
  const DType t = ctx.value(x0).dtype;
  if (!is_8_bit_integer(t) && t != DType::i32())
    return invalid("dequantizing " + t.to_string() + " is not supported (int8, uint8 and int32 are)");
  TESSERA_ASSIGN_OR_RETURN(QuantParams p, quant_params(ctx, node, t));
  TESSERA_RETURN_IF_ERROR(check_zero_point_type(ctx.value(p.zero_point).dtype, t, "the"));
  TESSERA_RETURN_IF_ERROR(ctx.emit(node, OpKind::kDequantize, graph::NoAttrs{}, {p.x, p.scale, p.zero_point},
                                   ctx.value(p.x).shape, DType::f32()));
  ctx.dequantized[ctx.values.at(node.output(0))] = {p.x, p.scale, p.zero_point};
  return Status::ok();
}

// uint8 with the tensor's own range (widened to hold 0): scale =
// (max - min) / 255, or 1 where max = min (as ONNX Runtime), zero point =
// saturate(round(-min / scale)).
Status convert_dynamic_quantize_linear(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto xs = ctx.value(x).shape;
  const DType f = DType::f32(), u8 = DType::u8();
  if (ctx.value(x).dtype != f) return invalid("the input must be float32, not " + ctx.value(x).dtype.to_string());
  if (graph::shape_size(xs) == 0) return invalid("the input is empty");
  const std::string name = base_name(node);
  const graph::NoAttrs none;
  const ValueId zero = scalar_constant(ctx, name + ".zero", f, 0.0);
  // The minimum and the maximum in one pass over x: [-min, max].
  ValueId bounds;
  if (xs.empty()) {
    TESSERA_ASSIGN_OR_RETURN(ValueId one, ctx.add(name + ".flat", OpKind::kReshape, none, {x}, {1}, f));
    TESSERA_ASSIGN_OR_RETURN(bounds, ctx.add(name + ".bounds", OpKind::kReduceBounds, none, {one}, {2}, f));
  } else {
    TESSERA_ASSIGN_OR_RETURN(bounds, ctx.add(name + ".bounds", OpKind::kReduceBounds, none, {x}, {2}, f));
  }
  auto bound = [&](int64_t i, const char* what) -> Result<ValueId> {
    TESSERA_ASSIGN_OR_RETURN(
        ValueId one, ctx.add(name + "." + what + "1", OpKind::kSlice, graph::SliceAttrs{{i}, {1}}, {bounds}, {1}, f));
    return ctx.add(name + "." + what, OpKind::kReshape, none, {one}, {}, f);
  };
  TESSERA_ASSIGN_OR_RETURN(ValueId neg_min, bound(0, "neg_min_x"));
  TESSERA_ASSIGN_OR_RETURN(ValueId hi, bound(1, "max"));
  TESSERA_ASSIGN_OR_RETURN(ValueId lo, ctx.add(name + ".min", OpKind::kSub, none, {zero, neg_min}, {}, f));
  TESSERA_ASSIGN_OR_RETURN(lo, ctx.add(name + ".min0", OpKind::kMin, none, {lo, zero}, {}, f));
  TESSERA_ASSIGN_OR_RETURN(hi, ctx.add(name + ".max0", OpKind::kMax, none, {hi, zero}, {}, f));
  TESSERA_ASSIGN_OR_RETURN(ValueId range, ctx.add(name + ".range", OpKind::kSub, none, {hi, lo}, {}, f));
  TESSERA_ASSIGN_OR_RETURN(ValueId scale, ctx.add(name + ".scale_raw", OpKind::kDiv, none,
                                                  {range, scalar_constant(ctx, name + ".levels", f, 255.0)}, {}, f));
  TESSERA_ASSIGN_OR_RETURN(
      ValueId flat, ctx.add(name + ".flat", OpKind::kBinary, graph::BinaryAttrs{ops::BinaryFn::kEqual}, {range, zero},
                            {}, DType::boolean()));
  TESSERA_ASSIGN_OR_RETURN(scale, ctx.add(name + ".scale", OpKind::kWhere, none,
                                          {flat, scalar_constant(ctx, name + ".one", f, 1.0), scale}, {}, f));
  TESSERA_ASSIGN_OR_RETURN(ValueId neg_lo, ctx.add(name + ".neg_min", OpKind::kSub, none, {zero, lo}, {}, f));
  TESSERA_ASSIGN_OR_RETURN(ValueId zp, ctx.add(name + ".zero_point", OpKind::kQuantize, none,
                                               {neg_lo, scale, scalar_constant(ctx, name + ".zp0", u8, 0.0)}, {}, u8));
  TESSERA_RETURN_IF_ERROR(ctx.emit(node, OpKind::kQuantize, none, {x, scale, zp}, xs, u8));
  if (node.output_size() > 1 && !node.output(1).empty()) ctx.values[node.output(1)] = scale;
  if (node.output_size() > 2 && !node.output(2).empty()) ctx.values[node.output(2)] = zp;
  return Status::ok();
}

// `x` widened to int32 less its zero point (already shaped to broadcast);
// no subtraction for a zero point known to be 0.
Result<ValueId> widen(ImportContext& ctx, const std::string& name, ValueId x, ValueId zero_point) {
  const DType i32 = DType::i32();
  const auto xs = ctx.value(x).shape;
  TESSERA_ASSIGN_OR_RETURN(ValueId wide, ctx.add(name + ".i32", OpKind::kCast, graph::CastAttrs{i32}, {x}, xs, i32));
  if (is_zero_constant(ctx, zero_point)) return wide;
  const auto zs = ctx.value(zero_point).shape;
  TESSERA_ASSIGN_OR_RETURN(ValueId z,
                           ctx.add(name + ".zp_i32", OpKind::kCast, graph::CastAttrs{i32}, {zero_point}, zs, i32));
  return ctx.add(name + ".centered", OpKind::kSub, graph::NoAttrs{}, {wide, z}, xs, i32);
}

// An 8-bit operand and its zero point (input `zp_index`, optional), widened;
// the zero point one value or one per index of `axis` (-1: none allowed).
Result<ValueId> integer_operand(ImportContext& ctx, const Node& node, int index, int zp_index, int64_t axis,
                                const char* what) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, index));
  const DType t = ctx.value(x).dtype;
  if (!is_8_bit_integer(t)) return invalid(std::string(what) + " is " + t.to_string() + ", not int8 or uint8");
  TESSERA_ASSIGN_OR_RETURN(ValueId zp, zero_point_or_zero(ctx, node, zp_index, t, (std::string(what) + "_zp").c_str()));
  TESSERA_RETURN_IF_ERROR(check_zero_point_type(ctx.value(zp).dtype, t, what));
  const auto xs = ctx.value(x).shape;
  const std::string name = base_name(node) + "." + what;
  if (axis < 0) {
    if (graph::shape_size(ctx.value(zp).shape) != 1)
      return invalid(std::string(what) + " takes one zero point, not " + graph::shape_string(ctx.value(zp).shape));
  } else {
    TESSERA_ASSIGN_OR_RETURN(zp,
                             along_axis(ctx, name + ".zp", zp, xs, axis, (std::string(what) + " zero point").c_str()));
  }
  return widen(ctx, name, x, zp);
}

// Runs the converter of `op_type` on `node`'s attributes with `inputs`
// bound to fresh names and its output named `output`.
Result<ValueId> convert_as(ImportContext& ctx, const Node& node, const std::string& op_type,
                           const std::vector<ValueId>& inputs, const std::string& output) {
  Node inner;
  inner.set_op_type(op_type);
  inner.set_name(output);
  *inner.mutable_attribute() = node.attribute();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string in = output + ".in" + std::to_string(i);
    ctx.values[in] = inputs[i];
    inner.add_input(in);
  }
  inner.add_output(output);
  TESSERA_RETURN_IF_ERROR(convert_node(ctx, inner));
  return ctx.values.at(output);
}

// B's int8 values packed four rows of K to an int32 word (K/4 x N), as
// ops::matmul_u8s8 reads them, and its column sums (N).
struct PackedWeights {
  graph::Constant words, column_sums;
};

Result<PackedWeights> pack_weights(const graph::Constant& b) {
  TESSERA_ASSIGN_OR_RETURN(graph::Constant words, graph::pack_int8_words(b, 0));
  const int64_t n = b.shape[1];
  const std::vector<double> v = b.to_doubles();
  std::vector<double> sums(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) sums[i % static_cast<size_t>(n)] += v[i];
  return PackedWeights{std::move(words), graph::Constant::from_doubles(DType::i32(), {n}, sums)};
}

// uint8 x [..., K] times constant int8 w [K, N] on the dot-product path, in
// int32: sum (x - xz) w = sum x w - xz * (column sums of w), the correction
// an epilogue over N (xz: x's zero point, or -1 for none).
Result<ValueId> matmul_on_words(ImportContext& ctx, const std::string& name, const std::string& output, ValueId x,
                                ValueId xz, const graph::Constant& w) {
  TESSERA_ASSIGN_OR_RETURN(PackedWeights packed, pack_weights(w));
  const ValueId words = ctx.g.add_constant(name + ".b_words", std::move(packed.words));
  const auto xs = ctx.value(x).shape;
  std::vector<int64_t> shape(xs.begin(), xs.end() - 1);
  shape.push_back(w.shape[1]);
  const DType i32 = DType::i32();
  if (xz < 0) return ctx.add(output, OpKind::kMatMulU8S8, graph::NoAttrs{}, {x, words}, shape, i32);
  // The correction first: the subtraction then follows the product at once
  // and fuses into its kernel as an epilogue.
  const ValueId sums = ctx.g.add_constant(name + ".b_column_sums", std::move(packed.column_sums));
  TESSERA_ASSIGN_OR_RETURN(
      ValueId z, ctx.add(name + ".a_zp_i32", OpKind::kCast, graph::CastAttrs{i32}, {xz}, ctx.value(xz).shape, i32));
  TESSERA_ASSIGN_OR_RETURN(ValueId correction, ctx.add(name + ".zp_correction", OpKind::kMul, graph::NoAttrs{},
                                                       {z, sums}, {w.shape[1]}, i32));
  TESSERA_ASSIGN_OR_RETURN(ValueId product,
                           ctx.add(name + ".dot", OpKind::kMatMulU8S8, graph::NoAttrs{}, {x, words}, shape, i32));
  return ctx.add(output, OpKind::kSub, graph::NoAttrs{}, {product, correction}, shape, i32);
}

// The product on the dot-product path, where it applies: uint8 A with one
// zero point, constant int8 B (K a multiple of 4) whose zero point is 0.
// Nothing (nullopt) where it does not apply.
Result<std::optional<ValueId>> dot_product_matmul(ImportContext& ctx, const Node& node, int a, int a_zp, int b,
                                                  int b_zp, const std::string& output) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, a));
  TESSERA_ASSIGN_OR_RETURN(ValueId w, ctx.input(node, b));
  const auto xs = ctx.value(x).shape, ws = ctx.value(w).shape;
  if (ctx.value(x).dtype != DType::u8() || xs.size() < 2 || ctx.value(w).dtype != DType::i8() || ws.size() != 2 ||
      !ctx.g.is_constant(w) || ws[0] % 4 != 0 || xs.back() != ws[0])
    return std::optional<ValueId>();
  if (ImportContext::has_input(node, b_zp)) {
    TESSERA_ASSIGN_OR_RETURN(ValueId wz, ctx.input(node, b_zp));
    if (!is_zero_constant(ctx, wz)) return std::optional<ValueId>();
  }
  ValueId xz = -1;
  if (ImportContext::has_input(node, a_zp)) {
    TESSERA_ASSIGN_OR_RETURN(ValueId z, ctx.input(node, a_zp));
    if (graph::shape_size(ctx.value(z).shape) != 1) return std::optional<ValueId>();
    TESSERA_RETURN_IF_ERROR(check_zero_point_type(ctx.value(z).dtype, DType::u8(), "a"));
    if (!is_zero_constant(ctx, z)) xz = z;
  }
  TESSERA_ASSIGN_OR_RETURN(ValueId y, matmul_on_words(ctx, base_name(node), output, x, xz, ctx.g.constant(w)));
  return std::optional<ValueId>(y);
}

// The int32 product of MatMulInteger and QLinearMatMul: a's zero point one
// value or one per row, b's one value or one per column.
Result<ValueId> integer_matmul(ImportContext& ctx, const Node& node, int a, int a_zp, int b, int b_zp,
                               const std::string& output) {
  TESSERA_ASSIGN_OR_RETURN(std::optional<ValueId> fast, dot_product_matmul(ctx, node, a, a_zp, b, b_zp, output));
  if (fast) return *fast;
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, a));
  TESSERA_ASSIGN_OR_RETURN(ValueId y, ctx.input(node, b));
  const int64_t row_axis = static_cast<int64_t>(ctx.value(x).shape.size()) - 2;
  const int64_t column_axis = static_cast<int64_t>(ctx.value(y).shape.size()) - 1;
  if (row_axis < 0 || column_axis < 1) return invalid("1-D operands are not supported");
  TESSERA_ASSIGN_OR_RETURN(ValueId wa, integer_operand(ctx, node, a, a_zp, row_axis, "a"));
  TESSERA_ASSIGN_OR_RETURN(ValueId wb, integer_operand(ctx, node, b, b_zp, column_axis, "b"));
  return convert_as(ctx, node, "MatMul", {wa, wb}, output);
}

// OIHW int8 weights with `extra` input channels of zeros.
graph::Constant pad_input_channels(const graph::Constant& w, int64_t extra) {
  const int64_t k = w.shape[0], c = w.shape[1], window = w.shape[2] * w.shape[3];
  graph::Constant out{w.dtype, {k, c + extra, w.shape[2], w.shape[3]}, {}};
  out.bytes.assign(static_cast<size_t>(k * (c + extra) * window), 0);
  for (int64_t o = 0; o < k; ++o)
    std::copy_n(w.bytes.begin() + o * c * window, c * window, out.bytes.begin() + o * (c + extra) * window);
  return out;
}

// int8 `x` as the uint8 x + 128 (through int32; an elementwise chain that
// fuses into x's producer): the same differences from a zero point + 128.
Result<ValueId> shifted_to_unsigned(ImportContext& ctx, const std::string& name, ValueId x) {
  const auto xs = ctx.value(x).shape;
  const DType i32 = DType::i32(), u8 = DType::u8();
  TESSERA_ASSIGN_OR_RETURN(ValueId wide, ctx.add(name + ".i32", OpKind::kCast, graph::CastAttrs{i32}, {x}, xs, i32));
  TESSERA_ASSIGN_OR_RETURN(wide, ctx.add(name + ".plus_128", OpKind::kAdd, graph::NoAttrs{},
                                         {wide, scalar_constant(ctx, name + ".128", i32, 128.0)}, xs, i32));
  return ctx.add(name + ".u8", OpKind::kCast, graph::CastAttrs{u8}, {wide}, xs, u8);
}

// The int32 convolution on the dot-product path, where it applies: uint8 x
// (int8 x shifted to uint8, its zero point known) with one zero point,
// constant int8 w (zero points 0); one group, groups of a multiple of 4
// input channels, or depthwise (which multiplies in vectors of channels
// rather than dot products, ops::depthwise_conv2d_nhwc_u8s8). sum (x -
// xz) w = sum x w - xz * (each output channel's weight sum) where the padding
// reads xz: the correction is an epilogue along K. Input channels not a
// multiple of 4 (an image's 3) are padded to one, by xz with zero weights. A
// zero point known only at run time serves an unpadded conv alone. Nothing
// (nullopt) where it does not apply.
Result<std::optional<ValueId>> dot_product_conv(ImportContext& ctx, const std::string& output, ValueId x, ValueId xz,
                                                ValueId w, graph::ConvAttrs a, const std::vector<int64_t>& shape) {
  // xz: x's zero point, or -1 for none (0).
  const auto xs = ctx.value(x).shape, ws = ctx.value(w).shape;
  if (!is_8_bit_integer(ctx.value(x).dtype) || ctx.value(w).dtype != DType::i8() || !ctx.g.is_constant(w) ||
      xs.size() != 4 || ws.size() != 4)
    return std::optional<ValueId>();
  // Groups of whole words, or one channel a group (depthwise).
  if (a.groups != 1 && ws[1] % 4 != 0 && !(ws[1] == 1 && a.groups == xs[1])) return std::optional<ValueId>();
  if (ctx.value(x).dtype == DType::i8()) {
    if (xz >= 0 &&
        (!ctx.g.is_constant(xz) || graph::shape_size(ctx.value(xz).shape) != 1 || ctx.value(xz).dtype != DType::i8()))
      return std::optional<ValueId>();
    const double z = xz >= 0 ? ctx.g.constant(xz).at(0) : 0.0;
    TESSERA_ASSIGN_OR_RETURN(x, shifted_to_unsigned(ctx, output + ".x", x));
    xz = scalar_constant(ctx, output + ".x_zp_u8", DType::u8(), z + 128.0);
  }
  const int64_t extra_channels = a.groups == 1 ? (4 - xs[1] % 4) % 4 : 0;
  // A zero point known only at run time: the padding reads it (the extra
  // channels' value is any, as their weights are 0).
  std::vector<ValueId> inputs = {x, w};
  if (xz >= 0) {
    if (graph::shape_size(ctx.value(xz).shape) != 1 || ctx.value(xz).dtype != DType::u8())
      return std::optional<ValueId>();
    const bool padded = a.pad_top || a.pad_left || a.pad_bottom || a.pad_right;
    if (ctx.g.is_constant(xz))
      a.pad_value = static_cast<int64_t>(ctx.g.constant(xz).at(0));
    else if (padded)
      inputs.push_back(xz);
    if (is_zero_constant(ctx, xz)) xz = -1;
  }
  if (extra_channels) {
    graph::PadAttrs pad;
    pad.before = {0, 0, 0, 0};
    pad.after = {0, extra_channels, 0, 0};
    pad.value = static_cast<double>(a.pad_value);
    TESSERA_ASSIGN_OR_RETURN(x, ctx.add(output + ".x_channels", OpKind::kPad, pad, {x},
                                        {xs[0], xs[1] + extra_channels, xs[2], xs[3]}, DType::u8()));
    inputs[1] = ctx.g.add_constant(output + ".w_channels", pad_input_channels(ctx.g.constant(w), extra_channels));
    inputs[0] = x;
  }
  const DType i32 = DType::i32();
  std::optional<ValueId> correction;
  if (xz >= 0) {
    // The correction first: the subtraction then follows the product at once
    // and fuses into its kernel as an epilogue.
    const std::vector<double> v = ctx.g.constant(w).to_doubles();
    const size_t per_channel = v.size() / static_cast<size_t>(ws[0]);
    std::vector<double> sums(static_cast<size_t>(ws[0]));
    for (size_t i = 0; i < v.size(); ++i) sums[i / per_channel] += v[i];
    const ValueId sum = ctx.g.add_constant(output + ".w_sums", graph::Constant::from_doubles(i32, {ws[0], 1, 1}, sums));
    TESSERA_ASSIGN_OR_RETURN(
        ValueId z, ctx.add(output + ".x_zp_i32", OpKind::kCast, graph::CastAttrs{i32}, {xz}, ctx.value(xz).shape, i32));
    TESSERA_ASSIGN_OR_RETURN(
        correction, ctx.add(output + ".zp_correction", OpKind::kMul, graph::NoAttrs{}, {z, sum}, {ws[0], 1, 1}, i32));
  }
  TESSERA_ASSIGN_OR_RETURN(ValueId acc,
                           ctx.add(correction ? output + ".dot" : output, OpKind::kConvU8S8, a, inputs, shape, i32));
  if (!correction) return std::optional<ValueId>(acc);
  TESSERA_ASSIGN_OR_RETURN(ValueId c, ctx.add(output, OpKind::kSub, graph::NoAttrs{}, {acc, *correction}, shape, i32));
  return std::optional<ValueId>(c);
}

// `v` (one value per output channel, or one) as [K, 1, 1], to broadcast
// along the channels of an NCHW output.
Result<ValueId> per_output_channel(ImportContext& ctx, const std::string& name, ValueId v, int64_t k) {
  if (graph::shape_size(ctx.value(v).shape) == 1) return v;
  if (graph::shape_size(ctx.value(v).shape) != k)
    return invalid("expected one value or " + std::to_string(k) + " (one per output channel), not " +
                   graph::shape_string(ctx.value(v).shape));
  return ctx.add(name, OpKind::kReshape, graph::NoAttrs{}, {v}, {k, 1, 1}, ctx.value(v).dtype);
}

// ConvInteger's and QLinearConv's product on the dot-product path (w's zero
// point absent or 0), its int32 bias added; nullopt where it does not apply.
Result<std::optional<ValueId>> dot_product_integer_conv(ImportContext& ctx, const Node& node, int x, int x_zp, int w,
                                                        int w_zp, int bias, const std::string& output) {
  TESSERA_ASSIGN_OR_RETURN(ValueId xq, ctx.input(node, x));
  TESSERA_ASSIGN_OR_RETURN(ValueId wq, ctx.input(node, w));
  if (ImportContext::has_input(node, w_zp)) {
    TESSERA_ASSIGN_OR_RETURN(ValueId wz, ctx.input(node, w_zp));
    if (!is_zero_constant(ctx, wz)) return std::optional<ValueId>();
  }
  std::optional<ValueId> xz;
  if (ImportContext::has_input(node, x_zp)) {
    TESSERA_ASSIGN_OR_RETURN(xz, ctx.input(node, x_zp));
  }
  const auto xs = ctx.value(xq).shape, ws = ctx.value(wq).shape;
  if (xs.size() != 4 || ws.size() != 4) return std::optional<ValueId>();
  TESSERA_ASSIGN_OR_RETURN(ConvGeometry geometry, conv_geometry(node, xs, ws));
  const bool biased = bias >= 0 && ImportContext::has_input(node, bias);
  TESSERA_ASSIGN_OR_RETURN(std::optional<ValueId> acc,
                           dot_product_conv(ctx, biased ? output + ".acc" : output, xq, xz.value_or(-1), wq,
                                            geometry.attrs, geometry.shape));
  if (!acc || !biased) return acc;
  TESSERA_ASSIGN_OR_RETURN(ValueId b, ctx.input(node, bias));
  if (ctx.value(b).dtype != DType::i32())
    return invalid("the bias is " + ctx.value(b).dtype.to_string() + ", not int32");
  TESSERA_ASSIGN_OR_RETURN(b, per_output_channel(ctx, output + ".bias", b, ws[0]));
  TESSERA_ASSIGN_OR_RETURN(ValueId y,
                           ctx.add(output, OpKind::kAdd, graph::NoAttrs{}, {*acc, b}, geometry.shape, DType::i32()));
  return std::optional<ValueId>(y);
}

// The int32 convolution of ConvInteger and QLinearConv: x's zero point one
// value, w's one value or one per output channel; an int32 bias.
Result<ValueId> integer_conv(ImportContext& ctx, const Node& node, int x, int x_zp, int w, int w_zp, int bias,
                             const std::string& output) {
  TESSERA_ASSIGN_OR_RETURN(std::optional<ValueId> fast,
                           dot_product_integer_conv(ctx, node, x, x_zp, w, w_zp, bias, output));
  if (fast) return *fast;
  TESSERA_ASSIGN_OR_RETURN(ValueId wx, integer_operand(ctx, node, x, x_zp, -1, "x"));
  TESSERA_ASSIGN_OR_RETURN(ValueId ww, integer_operand(ctx, node, w, w_zp, 0, "w"));
  std::vector<ValueId> inputs = {wx, ww};
  if (bias >= 0 && ImportContext::has_input(node, bias)) {
    TESSERA_ASSIGN_OR_RETURN(ValueId b, ctx.input(node, bias));
    if (ctx.value(b).dtype != DType::i32())
      return invalid("the bias is " + ctx.value(b).dtype.to_string() + ", not int32");
    inputs.push_back(b);
  }
  return convert_as(ctx, node, "Conv", inputs, output);
}

Status convert_matmul_integer(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId y, integer_matmul(ctx, node, 0, 2, 1, 3, base_name(node) + ".product"));
  ctx.alias(node, y);
  return Status::ok();
}

Status convert_conv_integer(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId y, integer_conv(ctx, node, 0, 2, 1, 3, -1, base_name(node) + ".conv"));
  ctx.alias(node, y);
  return Status::ok();
}

// y = saturate(round(float(acc) * a_scale * b_scale / y_scale) + y_zp); the
// scales' product lies along `axis` of acc (per output channel or column).
Status requantize(ImportContext& ctx, const Node& node, ValueId acc, int a_scale, int b_scale, int y_scale, int y_zp,
                  int64_t axis) {
  const std::string name = base_name(node);
  const DType f = DType::f32();
  const auto shape = ctx.value(acc).shape;
  TESSERA_ASSIGN_OR_RETURN(ValueId as, ctx.input(node, a_scale));
  TESSERA_ASSIGN_OR_RETURN(ValueId bs, ctx.input(node, b_scale));
  TESSERA_ASSIGN_OR_RETURN(ValueId ys, ctx.input(node, y_scale));
  TESSERA_ASSIGN_OR_RETURN(ValueId yzp, ctx.input(node, y_zp));
  TESSERA_RETURN_IF_ERROR(check_scale(ctx, as, "a"));
  TESSERA_RETURN_IF_ERROR(check_scale(ctx, bs, "b"));
  TESSERA_RETURN_IF_ERROR(check_scale(ctx, ys, "y"));
  const DType t = ctx.value(yzp).dtype;
  if (!is_8_bit_integer(t)) return invalid("the output zero point is " + t.to_string() + ", not int8 or uint8");
  if (graph::shape_size(ctx.value(as).shape) != 1 || graph::shape_size(ctx.value(ys).shape) != 1 ||
      graph::shape_size(ctx.value(yzp).shape) != 1)
    return invalid("the input's and the output's scale and zero point must be one value each");
  TESSERA_ASSIGN_OR_RETURN(bs, along_axis(ctx, name + ".b_scale", bs, shape, axis, "the weight scale"));
  const auto bs_shape = ctx.value(bs).shape;
  TESSERA_ASSIGN_OR_RETURN(ValueId ab,
                           ctx.add(name + ".ab_scale", OpKind::kMul, graph::NoAttrs{}, {bs, as}, bs_shape, f));
  TESSERA_ASSIGN_OR_RETURN(ValueId multiplier,
                           ctx.add(name + ".multiplier", OpKind::kDiv, graph::NoAttrs{}, {ab, ys}, bs_shape, f));
  TESSERA_ASSIGN_OR_RETURN(ValueId real, ctx.add(name + ".f32", OpKind::kCast, graph::CastAttrs{f}, {acc}, shape, f));
  TESSERA_ASSIGN_OR_RETURN(real,
                           ctx.add(name + ".scaled", OpKind::kMul, graph::NoAttrs{}, {real, multiplier}, shape, f));
  const ValueId one = scalar_constant(ctx, name + ".unit_scale", f, 1.0);
  return ctx.emit(node, OpKind::kQuantize, graph::NoAttrs{}, {real, one, yzp}, shape, t);
}

// QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp).
Status convert_qlinear_matmul(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId acc, integer_matmul(ctx, node, 0, 2, 3, 5, base_name(node) + ".product"));
  const int64_t columns = static_cast<int64_t>(ctx.value(acc).shape.size()) - 1;
  return requantize(ctx, node, acc, 1, 4, 6, 7, columns);
}

// QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, bias).
Status convert_qlinear_conv(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId acc, integer_conv(ctx, node, 0, 2, 3, 5, 8, base_name(node) + ".conv"));
  return requantize(ctx, node, acc, 1, 4, 6, 7, 1);
}

// `node`'s output y = float(acc) * (x_scale * w_scale[c]) (+ bias): the
// product of dequantized operands, with the integers summed exactly first.
// The n scales (one w_scale, or one a channel) are shaped `scale_shape` to
// broadcast along acc's channels; `bias` (or -1) is already shaped so.
Status emit_rescaled(ImportContext& ctx, const Node& node, ValueId acc, const ImportContext::Dequantized& xq,
                     const ImportContext::Dequantized& wq, int64_t n, const std::vector<int64_t>& scale_shape,
                     ValueId bias) {
  const std::string name = base_name(node);
  const float x_scale = static_cast<float>(ctx.g.constant(xq.scale).at(0));
  const std::vector<double> w_scale = ctx.g.constant(wq.scale).to_doubles();
  std::vector<float> scales(static_cast<size_t>(n));
  for (int64_t c = 0; c < n; ++c)
    scales[static_cast<size_t>(c)] = x_scale * static_cast<float>(w_scale[w_scale.size() == 1 ? 0 : c]);
  const ValueId scale = ctx.g.add_constant(name + ".scale", graph::Constant::from_floats(scale_shape, scales));
  const DType f = DType::f32();
  const auto shape = ctx.value(acc).shape;
  TESSERA_ASSIGN_OR_RETURN(ValueId real, ctx.add(name + ".f32", OpKind::kCast, graph::CastAttrs{f}, {acc}, shape, f));
  if (bias < 0) return ctx.emit(node, OpKind::kMul, graph::NoAttrs{}, {real, scale}, shape, f);
  TESSERA_ASSIGN_OR_RETURN(ValueId scaled,
                           ctx.add(name + ".scaled", OpKind::kMul, graph::NoAttrs{}, {real, scale}, shape, f));
  return ctx.emit(node, OpKind::kAdd, graph::NoAttrs{}, {scaled, bias}, shape, f);
}

}  // namespace

Result<bool> convert_dequantized_conv(ImportContext& ctx, const Node& node, const ConvGeometry& geometry) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(ValueId w, ctx.input(node, 1));
  const auto xd = ctx.dequantized.find(x), wd = ctx.dequantized.find(w);
  if (xd == ctx.dequantized.end() || wd == ctx.dequantized.end()) return false;
  const ImportContext::Dequantized xq = xd->second, wq = wd->second;
  const auto& g = ctx.g;
  const int64_t k = geometry.shape[1];
  // One constant scale for x (its zero point is dot_product_conv's to
  // check), constant scales for w and zero points of 0.
  if (!g.is_constant(xq.scale) || graph::shape_size(ctx.value(xq.scale).shape) != 1 || !g.is_constant(wq.scale) ||
      !is_zero_constant(ctx, wq.zero_point) || ctx.value(wq.x).dtype != DType::i8())
    return false;
  const int64_t w_scales = graph::shape_size(ctx.value(wq.scale).shape);
  if (w_scales != 1 && w_scales != k) return false;
  const std::string name = base_name(node);
  TESSERA_ASSIGN_OR_RETURN(std::optional<ValueId> acc, dot_product_conv(ctx, name + ".acc", xq.x, xq.zero_point, wq.x,
                                                                        geometry.attrs, geometry.shape));
  if (!acc) return false;
  ValueId bias = -1;
  if (ImportContext::has_input(node, 2)) {
    TESSERA_ASSIGN_OR_RETURN(bias, ctx.input(node, 2));
    TESSERA_ASSIGN_OR_RETURN(bias, per_output_channel(ctx, name + ".bias", bias, k));
  }
  TESSERA_RETURN_IF_ERROR(emit_rescaled(ctx, node, *acc, xq, wq, k, {k, 1, 1}, bias));
  return true;
}

Result<bool> convert_dequantized_matmul(ImportContext& ctx, const Node& node, bool trans_b) {
  TESSERA_ASSIGN_OR_RETURN(ValueId a, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(ValueId b, ctx.input(node, 1));
  const auto ad = ctx.dequantized.find(a), bd = ctx.dequantized.find(b);
  if (ad == ctx.dequantized.end() || bd == ctx.dequantized.end()) return false;
  const ImportContext::Dequantized xq = ad->second, wq = bd->second;
  const auto& g = ctx.g;
  // One constant scale and zero point for x; constant int8 weights of zero
  // points 0, scaled as a whole or per output column.
  const auto xs = ctx.value(xq.x).shape, ws = ctx.value(wq.x).shape;
  if (!g.is_constant(xq.scale) || graph::shape_size(ctx.value(xq.scale).shape) != 1 || !g.is_constant(xq.zero_point) ||
      graph::shape_size(ctx.value(xq.zero_point).shape) != 1 || !is_8_bit_integer(ctx.value(xq.x).dtype) ||
      xs.size() < 2 || !g.is_constant(wq.x) || ctx.value(wq.x).dtype != DType::i8() || ws.size() != 2 ||
      !g.is_constant(wq.scale) || !is_zero_constant(ctx, wq.zero_point))
    return false;
  const int64_t k = trans_b ? ws[1] : ws[0], n = trans_b ? ws[0] : ws[1];
  const auto scale_shape = ctx.value(wq.scale).shape;
  const bool per_column = graph::shape_size(scale_shape) == n && n > 1;
  // A per-column scale lies along N: [N, 1] of [N, K], [N] of [K, N].
  if (per_column && scale_shape != (trans_b ? std::vector<int64_t>{n, 1} : std::vector<int64_t>{n})) return false;
  if (!per_column && graph::shape_size(scale_shape) != 1) return false;
  if (k % 4 != 0 || xs.back() != k) return false;
  const std::string name = base_name(node);
  ValueId x = xq.x;
  double zero_point = g.constant(xq.zero_point).at(0);
  if (ctx.value(x).dtype == DType::i8()) {
    TESSERA_ASSIGN_OR_RETURN(x, shifted_to_unsigned(ctx, name + ".a", x));
    zero_point += 128.0;
  }
  const ValueId xz = zero_point == 0 ? -1 : scalar_constant(ctx, name + ".a_zp_u8", DType::u8(), zero_point);
  graph::Constant w = g.constant(wq.x);
  if (trans_b) {
    graph::Constant t{w.dtype, {k, n}, std::vector<uint8_t>(w.bytes.size())};
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < k; ++c) t.bytes[static_cast<size_t>(c * n + r)] = w.bytes[static_cast<size_t>(r * k + c)];
    w = std::move(t);
  }
  TESSERA_ASSIGN_OR_RETURN(ValueId acc, matmul_on_words(ctx, name, name + ".acc", x, xz, w));
  ValueId bias = -1;
  if (node.op_type() == "Gemm" && ImportContext::has_input(node, 2)) {
    TESSERA_ASSIGN_OR_RETURN(bias, ctx.input(node, 2));
  }
  TESSERA_RETURN_IF_ERROR(emit_rescaled(ctx, node, acc, xq, wq, n, {n}, bias));
  return true;
}

void add_quant_converters(std::map<std::string, Converter>& table) {
  table["QuantizeLinear"] = convert_quantize_linear;
  table["DequantizeLinear"] = convert_dequantize_linear;
  table["DynamicQuantizeLinear"] = convert_dynamic_quantize_linear;
  table["MatMulInteger"] = convert_matmul_integer;
  table["ConvInteger"] = convert_conv_integer;
  table["QLinearMatMul"] = convert_qlinear_matmul;
  table["QLinearConv"] = convert_qlinear_conv;
}

}  // namespace tessera::frontend::detail
