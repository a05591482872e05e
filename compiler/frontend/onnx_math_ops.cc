// Converters of elementwise math, activations, comparison and logic, the
// Reduce family, arg-reductions and normalisations. Elementwise operators
// become kUnary / kBinary / kWhere nodes (they fuse like Add or Relu); the
// composite ones (LogSoftmax, ReduceLogSumExp, InstanceNormalization, ...)
// are written out as those primitives, as an exporter would.
#include <algorithm>
#include <map>

#include "compiler/frontend/onnx_context.h"

namespace tessera::frontend::detail {

using graph::OpKind;
using graph::ValueId;
using ops::BinaryFn;
using ops::UnaryFn;
using Node = onnx::NodeProto;

namespace {
// Adds fn(x) named `name`; the error names the operand type fn refuses.
Result<ValueId> add_unary(ImportContext& ctx, const std::string& name, UnaryFn fn, ValueId x,
                          ops::UnaryParams params = {}) {
  const auto v = ctx.value(x);
  if (!ops::unary_fn_accepts(fn, v.dtype))
    return invalid(std::string(ops::unary_fn_name(fn)) + " does not accept " + v.dtype.to_string() + " operands");
  return ctx.add(name, OpKind::kUnary, graph::UnaryAttrs{fn, params}, {x}, v.shape, ops::unary_fn_result(fn, v.dtype));
}

// Adds a binary node of `kind` (kAdd.. or kBinary with `attrs`) with broadcasting.
Result<ValueId> add_binary(ImportContext& ctx, const std::string& name, OpKind kind, graph::Attrs attrs, ValueId a,
                           ValueId b) {
  const auto va = ctx.value(a), vb = ctx.value(b);
  if (va.dtype != vb.dtype)
    return invalid("operand types differ: " + va.dtype.to_string() + " and " + vb.dtype.to_string());
  TESSERA_ASSIGN_OR_RETURN(auto shape, ops::broadcast_shape(va.shape, vb.shape));
  DType out = va.dtype;
  if (kind == OpKind::kBinary) {
    const BinaryFn fn = std::get<graph::BinaryAttrs>(attrs).fn;
    if (!ops::binary_fn_accepts(fn, va.dtype))
      return invalid(std::string(ops::binary_fn_name(fn)) + " does not accept " + va.dtype.to_string() + " operands");
    out = ops::binary_fn_result(fn, va.dtype);
  }
  return ctx.add(name, kind, std::move(attrs), {a, b}, shape, out);
}

Status convert_unary_fn(ImportContext& ctx, const Node& node) {
  static const std::map<std::string, UnaryFn> kFns = {
      {"Neg", UnaryFn::kNeg},           {"Abs", UnaryFn::kAbs},
      {"Sign", UnaryFn::kSign},         {"Reciprocal", UnaryFn::kReciprocal},
      {"Sqrt", UnaryFn::kSqrt},         {"Exp", UnaryFn::kExp},
      {"Log", UnaryFn::kLog},           {"Floor", UnaryFn::kFloor},
      {"Ceil", UnaryFn::kCeil},         {"Round", UnaryFn::kRound},
      {"Sin", UnaryFn::kSin},           {"Cos", UnaryFn::kCos},
      {"Tan", UnaryFn::kTan},           {"Asin", UnaryFn::kAsin},
      {"Acos", UnaryFn::kAcos},         {"Atan", UnaryFn::kAtan},
      {"Sinh", UnaryFn::kSinh},         {"Cosh", UnaryFn::kCosh},
      {"Asinh", UnaryFn::kAsinh},       {"Acosh", UnaryFn::kAcosh},
      {"Atanh", UnaryFn::kAtanh},       {"Not", UnaryFn::kNot},
      {"IsNaN", UnaryFn::kIsNaN},       {"IsInf", UnaryFn::kIsInf},
      {"Elu", UnaryFn::kElu},           {"Selu", UnaryFn::kSelu},
      {"Celu", UnaryFn::kCelu},         {"Softplus", UnaryFn::kSoftplus},
      {"Softsign", UnaryFn::kSoftsign}, {"ThresholdedRelu", UnaryFn::kThresholdedRelu},
      {"Shrink", UnaryFn::kShrink},     {"Mish", UnaryFn::kMish},
      {"Gelu", UnaryFn::kGelu}};
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const std::string& op = node.op_type();
  UnaryFn fn = kFns.at(op);
  ops::UnaryParams p;
  const DType t = ctx.value(x).dtype;
  if (op == "Abs" && t.is_uint() && !t.is_bool()) {  // |x| of an unsigned integer is x
    ctx.alias(node, x);
    return Status::ok();
  }
  if (op == "Elu" || op == "Celu" || op == "ThresholdedRelu") p.alpha = attr_float(node, "alpha", 1.0f);
  if (op == "Celu" && p.alpha == 0.0) return invalid("alpha must not be 0");
  if (op == "Selu") {
    p.alpha = attr_float(node, "alpha", 1.67326319217681884765625f);
    p.beta = attr_float(node, "gamma", 1.05070102214813232421875f);
  }
  if (op == "Shrink") {
    p.alpha = attr_float(node, "lambd", 0.5f);
    p.beta = attr_float(node, "bias", 0.0f);
    if (p.alpha < 0) return invalid("lambd must not be negative");
  }
  if (op == "IsInf") {
    p.alpha = attr_int(node, "detect_negative", 1) != 0;
    p.beta = attr_int(node, "detect_positive", 1) != 0;
  }
  if (op == "Gelu") {
    const std::string approximate = attr_string(node, "approximate", "none");
    if (approximate == "tanh")
      fn = UnaryFn::kGeluTanh;
    else if (approximate != "none")
      return invalid("approximate '" + approximate + "' is not one of none, tanh");
  }
  TESSERA_ASSIGN_OR_RETURN(ValueId y, add_unary(ctx, node.output(0), fn, x, p));
  ctx.alias(node, y);
  return Status::ok();
}

Status convert_binary_fn(ImportContext& ctx, const Node& node) {
  static const std::map<std::string, BinaryFn> kFns = {{"Equal", BinaryFn::kEqual},
                                                       {"Less", BinaryFn::kLess},
                                                       {"LessOrEqual", BinaryFn::kLessEqual},
                                                       {"Greater", BinaryFn::kGreater},
                                                       {"GreaterOrEqual", BinaryFn::kGreaterEqual},
                                                       {"And", BinaryFn::kAnd},
                                                       {"Or", BinaryFn::kOr},
                                                       {"Xor", BinaryFn::kXor},
                                                       {"PRelu", BinaryFn::kPRelu}};
  TESSERA_ASSIGN_OR_RETURN(ValueId a, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(ValueId b, ctx.input(node, 1));
  const std::string& op = node.op_type();
  BinaryFn fn = BinaryFn::kMod;
  if (op == "Mod") {
    const bool fmod = attr_int(node, "fmod", 0) != 0;
    if (!fmod && ctx.value(a).dtype.is_float()) return invalid("fmod=0 is not defined for floating-point operands");
    fn = fmod ? BinaryFn::kFmod : BinaryFn::kMod;
  } else if (op == "BitShift") {
    const std::string direction = attr_string(node, "direction", "");
    if (direction != "LEFT" && direction != "RIGHT") return invalid("direction must be LEFT or RIGHT");
    fn = direction == "LEFT" ? BinaryFn::kShiftLeft : BinaryFn::kShiftRight;
  } else {
    fn = kFns.at(op);
  }
  if (op == "PRelu") {
    // The slope broadcasts to X (unidirectionally).
    TESSERA_ASSIGN_OR_RETURN(auto shape, ops::broadcast_shape(ctx.value(a).shape, ctx.value(b).shape));
    if (shape != ctx.value(a).shape)
      return invalid("slope " + graph::shape_string(ctx.value(b).shape) + " does not broadcast to X " +
                     graph::shape_string(ctx.value(a).shape));
  }
  TESSERA_ASSIGN_OR_RETURN(ValueId y, add_binary(ctx, node.output(0), OpKind::kBinary, graph::BinaryAttrs{fn}, a, b));
  ctx.alias(node, y);
  return Status::ok();
}

Status convert_where(ImportContext& ctx, const Node& node) {
  std::vector<ValueId> in;
  for (int i = 0; i < 3; ++i) {
    TESSERA_ASSIGN_OR_RETURN(ValueId v, ctx.input(node, i));
    in.push_back(v);
  }
  const auto c = ctx.value(in[0]), a = ctx.value(in[1]), b = ctx.value(in[2]);
  if (!c.dtype.is_bool()) return invalid("the condition must be bool, not " + c.dtype.to_string());
  if (a.dtype != b.dtype)
    return invalid("operand types differ: " + a.dtype.to_string() + " and " + b.dtype.to_string());
  TESSERA_ASSIGN_OR_RETURN(auto ab, ops::broadcast_shape(a.shape, b.shape));
  TESSERA_ASSIGN_OR_RETURN(auto shape, ops::broadcast_shape(c.shape, ab));
  return ctx.emit(node, OpKind::kWhere, graph::NoAttrs{}, in, shape, a.dtype);
}

// Sum and Mean of any number of inputs: a chain of Adds (then a division).
Status convert_sum_mean(ImportContext& ctx, const Node& node) {
  const std::string name = base_name(node);
  TESSERA_ASSIGN_OR_RETURN(ValueId acc, ctx.input(node, 0));
  for (int i = 1; i < node.input_size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(ValueId v, ctx.input(node, i));
    TESSERA_ASSIGN_OR_RETURN(
        acc, add_binary(ctx, name + ".sum" + std::to_string(i), OpKind::kAdd, graph::NoAttrs{}, acc, v));
  }
  if (node.op_type() == "Mean") {
    const DType t = ctx.value(acc).dtype;
    if (!t.is_float()) return invalid("Mean needs floating-point inputs");
    const ValueId n = scalar_constant(ctx, name + ".count", t, node.input_size());
    TESSERA_ASSIGN_OR_RETURN(acc, add_binary(ctx, name + ".mean", OpKind::kDiv, graph::NoAttrs{}, acc, n));
  }
  ctx.alias(node, acc);
  return Status::ok();
}

// The axes a Reduce node covers and the shape it yields.
struct ReduceShape {
  std::vector<int64_t> axes;
  bool keepdims = true;
  std::vector<int64_t> kept;  ///< the input shape with reduced axes set to 1
  std::vector<int64_t> out;
  bool noop = false;  ///< noop_with_empty_axes with no axes: the identity
};

Result<ReduceShape> reduce_shape(ImportContext& ctx, const Node& node, const std::vector<int64_t>& xs) {
  ReduceShape r;
  bool given = false;
  TESSERA_ASSIGN_OR_RETURN(r.axes, ints_from(ctx, node, "axes", 1, &given));
  r.keepdims = attr_int(node, "keepdims", 1) != 0;
  if (!given || r.axes.empty()) {
    r.axes.clear();
    if (attr_int(node, "noop_with_empty_axes", 0)) {
      r.noop = true;
      r.kept = r.out = xs;
      return r;
    }
    for (size_t d = 0; d < xs.size(); ++d) r.axes.push_back(static_cast<int64_t>(d));
  }
  for (int64_t& a : r.axes) {
    TESSERA_ASSIGN_OR_RETURN(a, norm_axis(a, xs.size(), "axis"));
  }
  std::sort(r.axes.begin(), r.axes.end());
  if (std::adjacent_find(r.axes.begin(), r.axes.end()) != r.axes.end()) return invalid("an axis is listed twice");
  r.kept = xs;
  for (int64_t a : r.axes) r.kept[a] = 1;
  for (size_t d = 0; d < xs.size(); ++d) {
    const bool reduced = std::binary_search(r.axes.begin(), r.axes.end(), static_cast<int64_t>(d));
    if (!reduced || r.keepdims) r.out.push_back(reduced ? 1 : xs[d]);
  }
  return r;
}

// ReduceMean/Sum/Max/Min/Prod as one node; L1, L2, LogSum, LogSumExp and
// SumSquare as their definitions over ReduceSum (LogSumExp subtracts the
// maximum first so exp cannot overflow).
Status convert_reduce(ImportContext& ctx, const Node& node) {
  static const std::map<std::string, OpKind> kKinds = {{"ReduceMean", OpKind::kReduceMean},
                                                       {"ReduceSum", OpKind::kReduceSum},
                                                       {"ReduceMax", OpKind::kReduceMax},
                                                       {"ReduceMin", OpKind::kReduceMin},
                                                       {"ReduceProd", OpKind::kReduceProd}};
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto xs = ctx.value(x).shape;
  const DType t = ctx.value(x).dtype;
  const std::string& op = node.op_type();
  const std::string name = base_name(node);
  TESSERA_ASSIGN_OR_RETURN(ReduceShape r, reduce_shape(ctx, node, xs));
  for (int64_t a : r.axes)
    if (xs[a] == 0) return invalid("reducing an empty axis is not supported");
  if (r.noop && (kKinds.count(op) || op == "ReduceLogSumExp"))
    return ctx.emit(node, OpKind::kReshape, graph::NoAttrs{}, {x}, xs, t);
  if (kKinds.count(op)) {
    if (op == "ReduceMean" && !t.is_float()) return invalid("ReduceMean needs floating-point input");
    return ctx.emit(node, kKinds.at(op), graph::ReduceAttrs{r.axes, r.keepdims}, {x}, r.out, t);
  }
  auto reduce_sum = [&](ValueId v, const std::string& suffix, bool keep) -> Result<ValueId> {
    if (r.noop) return v;
    return ctx.add(name + suffix, OpKind::kReduceSum, graph::ReduceAttrs{r.axes, keep}, {v}, keep ? r.kept : r.out, t);
  };
  ValueId y = x;
  if (op == "ReduceL1") {
    TESSERA_ASSIGN_OR_RETURN(ValueId a, add_unary(ctx, name + ".abs", UnaryFn::kAbs, x));
    TESSERA_ASSIGN_OR_RETURN(y, reduce_sum(a, ".sum", r.keepdims));
  } else if (op == "ReduceL2" || op == "ReduceSumSquare") {
    TESSERA_ASSIGN_OR_RETURN(ValueId sq, add_binary(ctx, name + ".sq", OpKind::kMul, graph::NoAttrs{}, x, x));
    TESSERA_ASSIGN_OR_RETURN(y, reduce_sum(sq, ".sum", r.keepdims));
    if (op == "ReduceL2") {
      TESSERA_ASSIGN_OR_RETURN(y, add_unary(ctx, name + ".sqrt", UnaryFn::kSqrt, y));
    }
  } else if (op == "ReduceLogSum") {
    TESSERA_ASSIGN_OR_RETURN(ValueId s, reduce_sum(x, ".sum", r.keepdims));
    TESSERA_ASSIGN_OR_RETURN(y, add_unary(ctx, name + ".log", UnaryFn::kLog, s));
  } else {  // ReduceLogSumExp: log(sum(exp(x - max))) + max
    TESSERA_ASSIGN_OR_RETURN(
        ValueId m, ctx.add(name + ".max", OpKind::kReduceMax, graph::ReduceAttrs{r.axes, true}, {x}, r.kept, t));
    TESSERA_ASSIGN_OR_RETURN(ValueId d, add_binary(ctx, name + ".shifted", OpKind::kSub, graph::NoAttrs{}, x, m));
    TESSERA_ASSIGN_OR_RETURN(ValueId e, add_unary(ctx, name + ".exp", UnaryFn::kExp, d));
    TESSERA_ASSIGN_OR_RETURN(ValueId s, reduce_sum(e, ".sum", true));
    TESSERA_ASSIGN_OR_RETURN(ValueId l, add_unary(ctx, name + ".log", UnaryFn::kLog, s));
    TESSERA_ASSIGN_OR_RETURN(y, add_binary(ctx, name + ".lse", OpKind::kAdd, graph::NoAttrs{}, l, m));
    if (!r.keepdims) {
      TESSERA_ASSIGN_OR_RETURN(y, ctx.add(name + ".squeeze", OpKind::kReshape, graph::NoAttrs{}, {y}, r.out, t));
    }
  }
  ctx.alias(node, y);
  return Status::ok();
}

// An axis attribute for the softmax family: before opset 13 they flatten
// [axis, rank), which matches the per-axis form only for the last axis.
Result<int64_t> softmax_axis(const ImportContext& ctx, const Node& node, size_t rank) {
  TESSERA_ASSIGN_OR_RETURN(int64_t axis, norm_axis(attr_int(node, "axis", ctx.opset < 13 ? 1 : -1), rank, "axis"));
  if (ctx.opset < 13 && axis != static_cast<int64_t>(rank) - 1)
    return invalid("opset-" + std::to_string(ctx.opset) + " " + node.op_type() + " over axes [" + std::to_string(axis) +
                   ", rank) is not supported; only the last axis");
  return axis;
}

// LogSoftmax: (x - max) - log(sum(exp(x - max))).
Status convert_log_softmax(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto xs = ctx.value(x).shape;
  const DType t = ctx.value(x).dtype;
  if (!t.is_float()) return invalid("input must be floating point");
  TESSERA_ASSIGN_OR_RETURN(int64_t axis, softmax_axis(ctx, node, xs.size()));
  const std::string name = base_name(node);
  auto kept = xs;
  kept[axis] = 1;
  TESSERA_ASSIGN_OR_RETURN(ValueId m,
                           ctx.add(name + ".max", OpKind::kReduceMax, graph::ReduceAttrs{{axis}, true}, {x}, kept, t));
  TESSERA_ASSIGN_OR_RETURN(ValueId d, add_binary(ctx, name + ".shifted", OpKind::kSub, graph::NoAttrs{}, x, m));
  TESSERA_ASSIGN_OR_RETURN(ValueId e, add_unary(ctx, name + ".exp", UnaryFn::kExp, d));
  TESSERA_ASSIGN_OR_RETURN(ValueId s,
                           ctx.add(name + ".sum", OpKind::kReduceSum, graph::ReduceAttrs{{axis}, true}, {e}, kept, t));
  TESSERA_ASSIGN_OR_RETURN(ValueId l, add_unary(ctx, name + ".log", UnaryFn::kLog, s));
  TESSERA_ASSIGN_OR_RETURN(ValueId y, add_binary(ctx, node.output(0), OpKind::kSub, graph::NoAttrs{}, d, l));
  ctx.alias(node, y);
  return Status::ok();
}

// ArgMax/ArgMin: int64 positions along one axis.
Status convert_arg(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto xs = ctx.value(x).shape;
  if (xs.empty()) return invalid("input must have at least one dimension");
  graph::ArgAttrs a;
  TESSERA_ASSIGN_OR_RETURN(a.axis, norm_axis(attr_int(node, "axis", 0), xs.size(), "axis"));
  if (xs[a.axis] == 0) return invalid("the axis is empty");
  a.keepdims = attr_int(node, "keepdims", 1) != 0;
  a.select_last = attr_int(node, "select_last_index", 0) != 0;
  auto out = xs;
  if (a.keepdims)
    out[a.axis] = 1;
  else
    out.erase(out.begin() + a.axis);
  const OpKind kind = node.op_type() == "ArgMax" ? OpKind::kArgMax : OpKind::kArgMin;
  return ctx.emit(node, kind, a, {x}, out, DType::i64());
}

// Hardmax: 1 where the first maximum along the axis is, else 0: ArgMax
// compared with the positions along the axis.
Status convert_hardmax(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto xs = ctx.value(x).shape;
  const DType t = ctx.value(x).dtype;
  TESSERA_ASSIGN_OR_RETURN(int64_t axis, softmax_axis(ctx, node, xs.size()));
  const std::string name = base_name(node);
  auto kept = xs;
  kept[axis] = 1;
  graph::ArgAttrs a;
  a.axis = axis;
  TESSERA_ASSIGN_OR_RETURN(ValueId arg, ctx.add(name + ".argmax", OpKind::kArgMax, a, {x}, kept, DType::i64()));
  std::vector<int64_t> iota_shape(xs.size(), 1), iota(xs[axis]);
  iota_shape[axis] = xs[axis];
  for (int64_t i = 0; i < xs[axis]; ++i) iota[i] = i;
  const ValueId positions = ctx.g.add_constant(name + ".positions", graph::Constant::from_int64s(iota_shape, iota));
  TESSERA_ASSIGN_OR_RETURN(ValueId hit, add_binary(ctx, name + ".hit", OpKind::kBinary,
                                                   graph::BinaryAttrs{BinaryFn::kEqual}, positions, arg));
  return ctx.emit(node, OpKind::kCast, graph::CastAttrs{t}, {hit}, xs, t);
}

Status convert_cumsum(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto xs = ctx.value(x).shape;
  const auto* c = ctx.constant_input(node, 1);
  if (!c) return invalid("axis (input 1) is not a constant");
  if (c->num_elements() != 1) return invalid("axis must be a scalar");
  graph::ArgAttrs a;
  TESSERA_ASSIGN_OR_RETURN(a.axis, norm_axis(static_cast<int64_t>(c->at(0)), xs.size(), "axis"));
  a.exclusive = attr_int(node, "exclusive", 0) != 0;
  a.reverse = attr_int(node, "reverse", 0) != 0;
  if (xs[a.axis] == 0) return invalid("the axis is empty");
  return ctx.emit(node, OpKind::kCumSum, a, {x}, xs, ctx.value(x).dtype);
}

// x normalised over `axes` per the rest: (x - mean) / sqrt(var + eps).
Result<ValueId> add_standardize(ImportContext& ctx, const std::string& name, ValueId x,
                                const std::vector<int64_t>& axes, double eps) {
  const auto xs = ctx.value(x).shape;
  const DType t = ctx.value(x).dtype;
  auto kept = xs;
  for (int64_t a : axes) kept[a] = 1;
  TESSERA_ASSIGN_OR_RETURN(ValueId mean,
                           ctx.add(name + ".mean", OpKind::kReduceMean, graph::ReduceAttrs{axes, true}, {x}, kept, t));
  TESSERA_ASSIGN_OR_RETURN(ValueId dev, add_binary(ctx, name + ".dev", OpKind::kSub, graph::NoAttrs{}, x, mean));
  TESSERA_ASSIGN_OR_RETURN(ValueId sq, add_binary(ctx, name + ".sq", OpKind::kMul, graph::NoAttrs{}, dev, dev));
  TESSERA_ASSIGN_OR_RETURN(ValueId var,
                           ctx.add(name + ".var", OpKind::kReduceMean, graph::ReduceAttrs{axes, true}, {sq}, kept, t));
  TESSERA_ASSIGN_OR_RETURN(ValueId ve, add_binary(ctx, name + ".var_eps", OpKind::kAdd, graph::NoAttrs{}, var,
                                                  scalar_constant(ctx, name + ".eps", t, eps)));
  TESSERA_ASSIGN_OR_RETURN(ValueId sd, add_unary(ctx, name + ".std", UnaryFn::kSqrt, ve));
  return add_binary(ctx, name + ".normed", OpKind::kDiv, graph::NoAttrs{}, dev, sd);
}

// InstanceNormalization: per (n, c), over the spatial axes, then scale and
// bias per channel.
Status convert_instance_norm(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(ValueId scale, ctx.input(node, 1));
  TESSERA_ASSIGN_OR_RETURN(ValueId bias, ctx.input(node, 2));
  const auto xs = ctx.value(x).shape;
  const DType t = ctx.value(x).dtype;
  if (xs.size() < 3) return invalid("input must be N x C x D1 x ...");
  if (!t.is_float()) return invalid("input must be floating point");
  const std::vector<int64_t> channels{xs[1]};
  if (ctx.value(scale).shape != channels || ctx.value(bias).shape != channels)
    return invalid("scale and B must have shape [C]");
  const std::string name = base_name(node);
  std::vector<int64_t> axes, per_channel(xs.size() - 1, 1);
  for (size_t d = 2; d < xs.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  per_channel[0] = xs[1];
  TESSERA_ASSIGN_OR_RETURN(ValueId normed, add_standardize(ctx, name, x, axes, attr_float(node, "epsilon", 1e-5f)));
  TESSERA_ASSIGN_OR_RETURN(ValueId s,
                           ctx.add(name + ".scale_c", OpKind::kReshape, graph::NoAttrs{}, {scale}, per_channel, t));
  TESSERA_ASSIGN_OR_RETURN(ValueId b,
                           ctx.add(name + ".bias_c", OpKind::kReshape, graph::NoAttrs{}, {bias}, per_channel, t));
  TESSERA_ASSIGN_OR_RETURN(ValueId scaled,
                           add_binary(ctx, name + ".scaled", OpKind::kMul, graph::NoAttrs{}, normed, s));
  TESSERA_ASSIGN_OR_RETURN(ValueId y, add_binary(ctx, node.output(0), OpKind::kAdd, graph::NoAttrs{}, scaled, b));
  ctx.alias(node, y);
  return Status::ok();
}

// LpNormalization: x / ||x||_p along one axis, p in {1, 2}.
Status convert_lp_norm(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto xs = ctx.value(x).shape;
  const DType t = ctx.value(x).dtype;
  if (!t.is_float()) return invalid("input must be floating point");
  TESSERA_ASSIGN_OR_RETURN(int64_t axis, norm_axis(attr_int(node, "axis", -1), xs.size(), "axis"));
  const int64_t p = attr_int(node, "p", 2);
  if (p != 1 && p != 2) return invalid("p must be 1 or 2, not " + std::to_string(p));
  const std::string name = base_name(node);
  auto kept = xs;
  kept[axis] = 1;
  ValueId term = -1;
  if (p == 1) {
    TESSERA_ASSIGN_OR_RETURN(term, add_unary(ctx, name + ".abs", UnaryFn::kAbs, x));
  } else {
    TESSERA_ASSIGN_OR_RETURN(term, add_binary(ctx, name + ".sq", OpKind::kMul, graph::NoAttrs{}, x, x));
  }
  TESSERA_ASSIGN_OR_RETURN(
      ValueId norm, ctx.add(name + ".sum", OpKind::kReduceSum, graph::ReduceAttrs{{axis}, true}, {term}, kept, t));
  if (p == 2) {
    TESSERA_ASSIGN_OR_RETURN(norm, add_unary(ctx, name + ".norm", UnaryFn::kSqrt, norm));
  }
  TESSERA_ASSIGN_OR_RETURN(ValueId y, add_binary(ctx, node.output(0), OpKind::kDiv, graph::NoAttrs{}, x, norm));
  ctx.alias(node, y);
  return Status::ok();
}

// MeanVarianceNormalization: (x - mean) / sqrt(var) over `axes`, with
// ONNX's epsilon of 1e-9 under the root.
Status convert_mvn(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto xs = ctx.value(x).shape;
  if (!ctx.value(x).dtype.is_float()) return invalid("input must be floating point");
  auto axes = attr_ints(node, "axes", {0, 2, 3});
  for (int64_t& a : axes) {
    TESSERA_ASSIGN_OR_RETURN(a, norm_axis(a, xs.size(), "axis"));
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return invalid("an axis is listed twice");
  TESSERA_ASSIGN_OR_RETURN(ValueId y, add_standardize(ctx, base_name(node), x, axes, 1e-9));
  ctx.alias(node, y);
  return Status::ok();
}

// LRN: x / (bias + alpha / size * sum of x^2 over a window of `size`
// channels)^beta, the window from c - floor((size - 1) / 2) to
// c + ceil((size - 1) / 2): the squares padded along the channels and
// `size` shifted slices added up.
Status convert_lrn(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto xs = ctx.value(x).shape;
  const DType t = ctx.value(x).dtype;
  if (xs.size() < 3) return invalid("input must be N x C x D1 x ...");
  if (!t.is_float()) return invalid("input must be floating point");
  const int64_t size = attr_int(node, "size", 0);
  if (size < 1) return invalid("size must be positive");
  const double alpha = attr_float(node, "alpha", 1e-4f), beta = attr_float(node, "beta", 0.75f);
  const double bias = attr_float(node, "bias", 1.0f);
  const std::string name = base_name(node);
  TESSERA_ASSIGN_OR_RETURN(ValueId sq, add_binary(ctx, name + ".sq", OpKind::kMul, graph::NoAttrs{}, x, x));
  graph::PadAttrs pad;
  pad.before.assign(xs.size(), 0);
  pad.after.assign(xs.size(), 0);
  pad.before[1] = (size - 1) / 2;
  pad.after[1] = size - 1 - pad.before[1];
  auto padded_shape = xs;
  padded_shape[1] += size - 1;
  TESSERA_ASSIGN_OR_RETURN(ValueId padded, ctx.add(name + ".pad", OpKind::kPad, pad, {sq}, padded_shape, t));
  ValueId total = -1;
  for (int64_t i = 0; i < size; ++i) {
    graph::SliceAttrs s;
    s.starts.assign(xs.size(), 0);
    s.steps.assign(xs.size(), 1);
    s.starts[1] = i;
    TESSERA_ASSIGN_OR_RETURN(ValueId shifted,
                             ctx.add(name + ".shift" + std::to_string(i), OpKind::kSlice, s, {padded}, xs, t));
    if (total < 0) {
      total = shifted;
    } else {
      TESSERA_ASSIGN_OR_RETURN(
          total, add_binary(ctx, name + ".sum" + std::to_string(i), OpKind::kAdd, graph::NoAttrs{}, total, shifted));
    }
  }
  TESSERA_ASSIGN_OR_RETURN(ValueId scaled,
                           add_binary(ctx, name + ".scaled", OpKind::kMul, graph::NoAttrs{}, total,
                                      scalar_constant(ctx, name + ".alpha", t, alpha / static_cast<double>(size))));
  TESSERA_ASSIGN_OR_RETURN(ValueId based, add_binary(ctx, name + ".biased", OpKind::kAdd, graph::NoAttrs{}, scaled,
                                                     scalar_constant(ctx, name + ".bias", t, bias)));
  TESSERA_ASSIGN_OR_RETURN(ValueId denom, add_binary(ctx, name + ".denom", OpKind::kPow, graph::NoAttrs{}, based,
                                                     scalar_constant(ctx, name + ".beta", t, beta)));
  TESSERA_ASSIGN_OR_RETURN(ValueId y, add_binary(ctx, node.output(0), OpKind::kDiv, graph::NoAttrs{}, x, denom));
  ctx.alias(node, y);
  return Status::ok();
}

// GlobalMaxPool: the maximum over every spatial axis, kept as 1.
Status convert_global_max_pool(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  auto shape = ctx.value(x).shape;
  if (shape.size() < 3) return invalid("input must be N x C x D1 x ...");
  std::vector<int64_t> axes;
  for (size_t d = 2; d < shape.size(); ++d) {
    axes.push_back(static_cast<int64_t>(d));
    shape[d] = 1;
  }
  return ctx.emit(node, OpKind::kReduceMax, graph::ReduceAttrs{axes, true}, {x}, shape, ctx.value(x).dtype);
}

// NegativeLogLikelihoodLoss of log-probabilities `x` [N, C, d...] at
// `target` [N, d...]: loss = -x[n, target, d...] * weight[target], 0 where
// target == ignore_index; reduced by none, sum or mean (sum / sum of the
// weights). Written out as GatherElements, Gather and elementwise nodes.
Status emit_nll(ImportContext& ctx, const Node& node, ValueId x, ValueId target, ValueId weight) {
  const auto xs = ctx.value(x).shape, ts = ctx.value(target).shape;
  const DType t = ctx.value(x).dtype, it = ctx.value(target).dtype;
  if (!t.is_float()) return invalid("input must be floating point");
  if (it.is_float()) return invalid("target must be integers");
  if (xs.size() < 2 || ts.size() + 1 != xs.size() || ts[0] != xs[0] ||
      !std::equal(ts.begin() + 1, ts.end(), xs.begin() + 2))
    return invalid("target " + graph::shape_string(ts) + " does not match input " + graph::shape_string(xs));
  if (weight >= 0 && ctx.value(weight).shape != std::vector<int64_t>{xs[1]})
    return invalid("weight must have shape [C]");
  const std::string reduction = attr_string(node, "reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return invalid("reduction '" + reduction + "' is not one of none, sum, mean");
  const std::string name = base_name(node);
  ValueId safe = target, ignored = -1;
  if (find_attr(node, "ignore_index")) {
    // Ignored targets read class 0 (any valid one) and get weight 0.
    const ValueId ii =
        scalar_constant(ctx, name + ".ignore_index", it, static_cast<double>(attr_int(node, "ignore_index", 0)));
    TESSERA_ASSIGN_OR_RETURN(
        ignored, add_binary(ctx, name + ".ignored", OpKind::kBinary, graph::BinaryAttrs{BinaryFn::kEqual}, target, ii));
    TESSERA_ASSIGN_OR_RETURN(safe, ctx.add(name + ".safe_target", OpKind::kWhere, graph::NoAttrs{},
                                           {ignored, scalar_constant(ctx, name + ".class0", it, 0.0), target}, ts, it));
  }
  auto lifted = ts;
  lifted.insert(lifted.begin() + 1, 1);
  TESSERA_ASSIGN_OR_RETURN(ValueId col,
                           ctx.add(name + ".target_col", OpKind::kReshape, graph::NoAttrs{}, {safe}, lifted, it));
  TESSERA_ASSIGN_OR_RETURN(
      ValueId picked, ctx.add(name + ".picked", OpKind::kGatherElements, graph::AxisAttrs{1}, {x, col}, lifted, t));
  TESSERA_ASSIGN_OR_RETURN(ValueId flat,
                           ctx.add(name + ".picked_flat", OpKind::kReshape, graph::NoAttrs{}, {picked}, ts, t));
  TESSERA_ASSIGN_OR_RETURN(ValueId loss, add_unary(ctx, name + ".neg", UnaryFn::kNeg, flat));
  ValueId w = -1;  // the weight of each element, when not all 1
  if (weight >= 0) {
    TESSERA_ASSIGN_OR_RETURN(w, ctx.add(name + ".w", OpKind::kGather, graph::AxisAttrs{0}, {weight, safe}, ts, t));
  }
  if (ignored >= 0) {
    const ValueId zero = scalar_constant(ctx, name + ".zero", t, 0.0);
    const ValueId base = w >= 0 ? w : scalar_constant(ctx, name + ".one", t, 1.0);
    TESSERA_ASSIGN_OR_RETURN(w,
                             ctx.add(name + ".w_kept", OpKind::kWhere, graph::NoAttrs{}, {ignored, zero, base}, ts, t));
  }
  if (w >= 0) {
    TESSERA_ASSIGN_OR_RETURN(loss, add_binary(ctx, name + ".weighted", OpKind::kMul, graph::NoAttrs{}, loss, w));
  }
  if (reduction == "none") {
    ctx.alias(node, loss);
    return Status::ok();
  }
  std::vector<int64_t> all;
  for (size_t d = 0; d < ts.size(); ++d) all.push_back(static_cast<int64_t>(d));
  const bool mean_of_weights = reduction == "mean" && w >= 0;
  const OpKind kind = reduction == "sum" || mean_of_weights ? OpKind::kReduceSum : OpKind::kReduceMean;
  TESSERA_ASSIGN_OR_RETURN(ValueId total,
                           ctx.add(name + ".total", kind, graph::ReduceAttrs{all, false}, {loss}, {}, t));
  if (mean_of_weights) {
    TESSERA_ASSIGN_OR_RETURN(
        ValueId wsum, ctx.add(name + ".weight_sum", OpKind::kReduceSum, graph::ReduceAttrs{all, false}, {w}, {}, t));
    TESSERA_ASSIGN_OR_RETURN(total, add_binary(ctx, name + ".mean", OpKind::kDiv, graph::NoAttrs{}, total, wsum));
  }
  ctx.alias(node, total);
  return Status::ok();
}

Status convert_nll_loss(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(ValueId target, ctx.input(node, 1));
  ValueId weight = -1;
  if (ImportContext::has_input(node, 2)) {
    TESSERA_ASSIGN_OR_RETURN(weight, ctx.input(node, 2));
  }
  return emit_nll(ctx, node, x, target, weight);
}

// SoftmaxCrossEntropyLoss: NegativeLogLikelihoodLoss of LogSoftmax over
// axis 1; the optional second output is the log-probabilities.
Status convert_softmax_cross_entropy(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId scores, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(ValueId labels, ctx.input(node, 1));
  ValueId weight = -1;
  if (ImportContext::has_input(node, 2)) {
    TESSERA_ASSIGN_OR_RETURN(weight, ctx.input(node, 2));
  }
  if (ctx.value(scores).shape.size() < 2) return invalid("scores must be N x C x ...");
  Node log_softmax;
  log_softmax.set_op_type("LogSoftmax");
  log_softmax.set_name(base_name(node) + ".log_prob");
  log_softmax.add_input(node.input(0));
  const bool want_log_prob = node.output_size() > 1 && !node.output(1).empty();
  log_softmax.add_output(want_log_prob ? node.output(1) : base_name(node) + ".log_prob");
  auto* axis = log_softmax.add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  const int64_t opset = ctx.opset;
  ctx.opset = std::max<int64_t>(opset, 13);  // the per-axis LogSoftmax
  const Status st = convert_log_softmax(ctx, log_softmax);
  ctx.opset = opset;
  TESSERA_RETURN_IF_ERROR(st);
  return emit_nll(ctx, node, ctx.values.at(log_softmax.output(0)), labels, weight);
}

}  // namespace

void add_math_converters(std::map<std::string, Converter>& table) {
  for (const char* op :
       {"Neg",    "Abs",  "Sign",  "Reciprocal", "Sqrt", "Exp",  "Log",  "Floor",    "Ceil",     "Round",
        "Sin",    "Cos",  "Tan",   "Asin",       "Acos", "Atan", "Sinh", "Cosh",     "Asinh",    "Acosh",
        "Atanh",  "Not",  "IsNaN", "IsInf",      "Elu",  "Selu", "Celu", "Softplus", "Softsign", "ThresholdedRelu",
        "Shrink", "Mish", "Gelu"})
    table[op] = convert_unary_fn;
  for (const char* op :
       {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor", "Mod", "BitShift", "PRelu"})
    table[op] = convert_binary_fn;
  for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"})
    table[op] = convert_reduce;
  table["Where"] = convert_where;
  table["Sum"] = convert_sum_mean;
  table["Mean"] = convert_sum_mean;
  table["LogSoftmax"] = convert_log_softmax;
  table["ArgMax"] = convert_arg;
  table["ArgMin"] = convert_arg;
  table["Hardmax"] = convert_hardmax;
  table["CumSum"] = convert_cumsum;
  table["InstanceNormalization"] = convert_instance_norm;
  table["LpNormalization"] = convert_lp_norm;
  table["GlobalMaxPool"] = convert_global_max_pool;
  table["MeanVarianceNormalization"] = convert_mvn;
  table["LRN"] = convert_lrn;
  table["NegativeLogLikelihoodLoss"] = convert_nll_loss;
  table["SoftmaxCrossEntropyLoss"] = convert_softmax_cross_entropy;
}

}  // namespace tessera::frontend::detail
