// ONNX converters of data-movement and shape operators: Reshape, Flatten,
// Squeeze, Unsqueeze, Transpose, Concat, Slice, Pad, Constant, Shape, Gather,
// Cast, Identity, Dropout. (Math and NN operators are in onnx_ops.cc.)
#include <algorithm>
#include <map>
#include <optional>

#include "compiler/frontend/onnx_context.h"
#include "compiler/frontend/onnx_emitter.h"

namespace tessera::frontend::detail {

using graph::OpKind;
using graph::ValueId;
using Node = onnx::NodeProto;

namespace {
Status reshape_to(ImportContext& ctx, const Node& node, ValueId x, std::vector<int64_t> shape) {
  if (graph::shape_size(shape) != graph::shape_size(ctx.value(x).shape))
    return invalid("cannot reshape " + graph::shape_string(ctx.value(x).shape) + " to " + graph::shape_string(shape));
  return ctx.emit(node, OpKind::kReshape, graph::NoAttrs{}, {x}, std::move(shape), ctx.value(x).dtype);
}

}  // namespace

Status convert_reshape(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto xs = ctx.value(x).shape;
  const std::string& op = node.op_type();
  if (op == "Flatten") {
    // Flatten's axis lies in [-rank, rank]; a negative one counts from rank.
    const auto rank = static_cast<int64_t>(xs.size());
    int64_t axis = attr_int(node, "axis", 1);
    if (axis < -rank || axis > rank) return invalid("axis " + std::to_string(axis) + " is out of range");
    if (axis < 0) axis += rank;
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= xs[d];
    return reshape_to(ctx, node, x, {outer, graph::shape_size(xs) / outer});
  }
  bool given = false;
  if (op == "Reshape") {
    const auto* c = ctx.constant_input(node, 1);
    if (!c) return invalid("the target shape is not static (input 1 does not fold to a constant)");
    std::vector<int64_t> shape;
    int infer = -1;
    for (int64_t i = 0; i < c->num_elements(); ++i) {
      int64_t v = static_cast<int64_t>(c->at(i));
      if (v == 0 && !attr_int(node, "allowzero", 0)) {
        if (static_cast<size_t>(i) >= xs.size()) return invalid("0 in the shape copies a dimension the input lacks");
        v = xs[i];
      }
      if (v == -1) {
        if (infer >= 0) return invalid("more than one -1 in the target shape");
        infer = static_cast<int>(i);
        v = 1;
      }
      shape.push_back(v);
    }
    if (infer >= 0) shape[infer] = graph::shape_size(xs) / std::max<int64_t>(1, graph::shape_size(shape));
    return reshape_to(ctx, node, x, shape);
  }
  TESSERA_ASSIGN_OR_RETURN(auto axes, ints_from(ctx, node, "axes", 1, &given));
  std::vector<int64_t> shape;
  if (op == "Unsqueeze") {
    const size_t rank = xs.size() + axes.size();
    std::vector<bool> inserted(rank, false);
    for (int64_t a : axes) {
      TESSERA_ASSIGN_OR_RETURN(int64_t n, norm_axis(a, rank, "axis"));
      inserted[static_cast<size_t>(n)] = true;
    }
    for (size_t d = 0, j = 0; d < rank; ++d) shape.push_back(inserted[d] ? 1 : xs[j++]);
  } else {  // Squeeze
    std::vector<bool> drop(xs.size(), !given);
    if (!given)
      for (size_t d = 0; d < xs.size(); ++d) drop[d] = xs[d] == 1;
    for (int64_t a : axes) {
      TESSERA_ASSIGN_OR_RETURN(int64_t n, norm_axis(a, xs.size(), "axis"));
      if (xs[n] != 1)
        return invalid("cannot squeeze axis " + std::to_string(n) + " of extent " + std::to_string(xs[n]));
      drop[static_cast<size_t>(n)] = true;
    }
    for (size_t d = 0; d < xs.size(); ++d)
      if (!drop[d]) shape.push_back(xs[d]);
  }
  return reshape_to(ctx, node, x, shape);
}

Status convert_transpose(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto xs = ctx.value(x).shape;
  std::vector<int64_t> perm = attr_ints(node, "perm");
  if (perm.empty())
    for (size_t d = xs.size(); d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  std::vector<int64_t> sorted = perm, shape;
  std::sort(sorted.begin(), sorted.end());
  for (size_t d = 0; d < sorted.size(); ++d)
    if (sorted[d] != static_cast<int64_t>(d) || sorted.size() != xs.size())
      return invalid("perm is not a permutation of the input's axes");
  for (int64_t p : perm) shape.push_back(xs[p]);
  return ctx.emit(node, OpKind::kTranspose, graph::PermAttrs{perm}, {x}, shape, ctx.value(x).dtype);
}

Status convert_concat(ImportContext& ctx, const Node& node) {
  std::vector<ValueId> inputs;
  for (int i = 0; i < node.input_size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(ValueId v, ctx.input(node, i));
    inputs.push_back(v);
  }
  if (inputs.empty()) return invalid("no inputs");
  const std::vector<ValueId> all = inputs;
  std::vector<int64_t> shape = ctx.value(inputs[0]).shape;
  TESSERA_ASSIGN_OR_RETURN(int64_t axis, norm_axis(attr_int(node, "axis", 0), shape.size(), "axis"));
  for (size_t i = 1; i < inputs.size(); ++i) {
    const auto s = ctx.value(inputs[i]).shape;
    if (s.size() != shape.size() || ctx.value(inputs[i]).dtype != ctx.value(inputs[0]).dtype)
      return invalid("inputs differ in rank or type");
    for (size_t d = 0; d < s.size(); ++d)
      if (static_cast<int64_t>(d) != axis && s[d] != shape[d]) return invalid("inputs differ outside the axis");
    shape[axis] += s[axis];
  }
  // Empty inputs add nothing: dropped, so that no kernel reads them.
  inputs.clear();
  for (ValueId v : all)
    if (graph::shape_size(ctx.value(v).shape) > 0) inputs.push_back(v);
  if (inputs.empty()) inputs.push_back(all[0]);  // the output is empty too
  if (inputs.size() == 1 && ctx.value(inputs[0]).shape == shape) {
    ctx.alias(node, inputs[0]);
    return Status::ok();
  }
  return ctx.emit(node, OpKind::kConcat, graph::AxisAttrs{axis}, inputs, shape, ctx.value(inputs[0]).dtype);
}

namespace {

// `v` as base + offset: through reshapes of one element (Unsqueeze,
// Squeeze) and additions or subtractions of a constant scalar, back to the
// value they start from. A loop body's `i` and `i + 1` have one base.
std::pair<ValueId, int64_t> base_and_offset(const ImportContext& ctx, ValueId v) {
  const std::vector<int> producer = ctx.g.producers();
  int64_t offset = 0;
  for (int depth = 0; depth < 16; ++depth) {
    const int p = producer[static_cast<size_t>(v)];
    if (p < 0) break;
    const graph::Node& n = ctx.g.nodes()[static_cast<size_t>(p)];
    const auto constant = [&](ValueId c) -> std::optional<int64_t> {
      if (!ctx.g.is_constant(c) || graph::shape_size(ctx.value(c).shape) != 1) return std::nullopt;
      return ctx.g.constant(c).to_int64s()[0];
    };
    if (n.kind == OpKind::kReshape && graph::shape_size(ctx.value(n.inputs[0]).shape) == 1) {
      v = n.inputs[0];
    } else if ((n.kind == OpKind::kAdd || n.kind == OpKind::kSub) && n.inputs.size() == 2 && constant(n.inputs[1])) {
      offset += (n.kind == OpKind::kAdd ? 1 : -1) * *constant(n.inputs[1]);
      v = n.inputs[0];
    } else if (n.kind == OpKind::kAdd && n.inputs.size() == 2 && constant(n.inputs[0])) {
      offset += *constant(n.inputs[0]);
      v = n.inputs[1];
    } else {
      break;
    }
  }
  return {v, offset};
}

// A Slice whose start is known only at run time (a loop body's x[i:i+1])
// and whose end is that start plus a constant: a Gather of the rows from
// the start on, of a static length. One axis, step 1. A start from the end
// (negative) counts back from the axis' extent; a start whose rows would
// run past the axis is moved back to fit (where ONNX would give fewer rows).
Status convert_slice_at_offset(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto xs = ctx.value(x).shape;
  TESSERA_ASSIGN_OR_RETURN(ValueId starts, ctx.input(node, 1));
  TESSERA_ASSIGN_OR_RETURN(ValueId ends, ctx.input(node, 2));
  if (graph::shape_size(ctx.value(starts).shape) != 1 || graph::shape_size(ctx.value(ends).shape) != 1)
    return invalid("'starts' (input 1) is known only at run time: a Slice at a run-time offset takes one axis");
  bool given = false;
  TESSERA_ASSIGN_OR_RETURN(auto axes, ints_from(ctx, node, "axes", 3, &given));
  if (!given) axes = {0};
  TESSERA_ASSIGN_OR_RETURN(auto steps, ints_from(ctx, node, "steps", 4, &given));
  if (given && (steps.size() != 1 || steps[0] != 1))
    return invalid("'starts' (input 1) is known only at run time: a Slice at a run-time offset takes steps of 1");
  TESSERA_ASSIGN_OR_RETURN(int64_t axis, norm_axis(axes.at(0), xs.size(), "axis"));
  const auto [start_base, start_offset] = base_and_offset(ctx, starts);
  const auto [end_base, end_offset] = base_and_offset(ctx, ends);
  const int64_t length = end_offset - start_offset;
  if (start_base != end_base || length <= 0 || length > xs[static_cast<size_t>(axis)])
    return invalid(
        "'starts' (input 1) is known only at run time, and 'ends' is not 'starts' plus a constant "
        "count: the slice's length would be known only at run time");
  const int64_t dim = xs[static_cast<size_t>(axis)];
  Emitter e(ctx, base_name(node));
  TESSERA_ASSIGN_OR_RETURN(ValueId start, e.op("Reshape", {starts, e.ints({})}));
  if (ctx.value(start).dtype != DType::i64()) {
    TESSERA_ASSIGN_OR_RETURN(start, e.op("Cast", {start}, {int_attr("to", onnx::TensorProto::INT64)}));
  }
  // From the end when negative, then within [0, dim - length].
  TESSERA_ASSIGN_OR_RETURN(ValueId negative, e.op("Less", {start, e.index(0)}));
  TESSERA_ASSIGN_OR_RETURN(ValueId wrapped, e.op("Add", {start, e.index(dim)}));
  TESSERA_ASSIGN_OR_RETURN(start, e.op("Where", {negative, wrapped, start}));
  TESSERA_ASSIGN_OR_RETURN(start, e.op("Max", {start, e.index(0)}));
  TESSERA_ASSIGN_OR_RETURN(start, e.op("Min", {start, e.index(dim - length)}));
  std::vector<int64_t> rows(static_cast<size_t>(length));
  for (int64_t r = 0; r < length; ++r) rows[static_cast<size_t>(r)] = r;
  TESSERA_ASSIGN_OR_RETURN(ValueId indices, e.op("Add", {start, e.ints(rows)}));
  TESSERA_ASSIGN_OR_RETURN(ValueId out, e.op("Gather", {x, indices}, {int_attr("axis", axis)}));
  ctx.values[node.output(0)] = out;
  return Status::ok();
}

}  // namespace

Status convert_slice(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto xs = ctx.value(x).shape;
  if (ctx.opset >= 10 && ImportContext::has_input(node, 1) && !ctx.constant_input(node, 1))
    return convert_slice_at_offset(ctx, node);
  bool given = false;
  TESSERA_ASSIGN_OR_RETURN(auto starts, ints_from(ctx, node, "starts", 1, &given));
  TESSERA_ASSIGN_OR_RETURN(auto ends, ints_from(ctx, node, "ends", 2, &given));
  TESSERA_ASSIGN_OR_RETURN(auto axes, ints_from(ctx, node, "axes", 3, &given));
  if (!given)
    for (size_t d = 0; d < starts.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  TESSERA_ASSIGN_OR_RETURN(auto steps, ints_from(ctx, node, "steps", 4, &given));
  if (!given) steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return invalid("starts, ends, axes and steps differ in length");
  graph::SliceAttrs a{std::vector<int64_t>(xs.size(), 0), std::vector<int64_t>(xs.size(), 1)};
  std::vector<int64_t> shape = xs;
  for (size_t i = 0; i < axes.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(int64_t d, norm_axis(axes[i], xs.size(), "axis"));
    const int64_t dim = xs[d], step = steps[i];
    if (step == 0) return invalid("a step is 0");
    int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
    start = step > 0 ? std::clamp<int64_t>(start, 0, dim) : std::clamp<int64_t>(start, 0, dim - 1);
    end = step > 0 ? std::clamp<int64_t>(end, 0, dim) : std::clamp<int64_t>(end, -1, dim - 1);
    const int64_t count = step > 0 ? (end - start + step - 1) / step : (start - end + (-step) - 1) / (-step);
    a.starts[d] = count > 0 ? start : 0;
    a.steps[d] = step;
    shape[d] = std::max<int64_t>(count, 0);  // empty: an empty constant (ImportContext::add)
  }
  return ctx.emit(node, OpKind::kSlice, a, {x}, shape, ctx.value(x).dtype);
}

Status convert_split(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto xs = ctx.value(x).shape;
  TESSERA_ASSIGN_OR_RETURN(int64_t axis, norm_axis(attr_int(node, "axis", 0), xs.size(), "axis"));
  bool given = false;
  TESSERA_ASSIGN_OR_RETURN(auto sizes, ints_from(ctx, node, "split", 1, &given));
  const int64_t parts = node.output_size();
  if (!given) {
    if (xs[axis] % parts != 0)
      return invalid("axis extent " + std::to_string(xs[axis]) + " does not split into " + std::to_string(parts) +
                     " equal parts");
    sizes.assign(static_cast<size_t>(parts), xs[axis] / parts);
  }
  int64_t total = 0;
  for (int64_t v : sizes) total += v;
  if (static_cast<int64_t>(sizes.size()) != parts || total != xs[axis])
    return invalid("split sizes do not add up to the axis extent " + std::to_string(xs[axis]));
  // One slice per output: Split has several outputs, and graph nodes that
  // fusion and kernels see have one each.
  int64_t start = 0;
  for (int64_t i = 0; i < parts; ++i) {
    if (sizes[i] < 0) return invalid("a split size is negative");
    graph::SliceAttrs a{std::vector<int64_t>(xs.size(), 0), std::vector<int64_t>(xs.size(), 1)};
    a.starts[axis] = start;
    std::vector<int64_t> shape = xs;
    shape[axis] = sizes[i];
    start += sizes[i];
    if (node.output(static_cast<int>(i)).empty()) continue;
    const std::string name = (node.name().empty() ? node.output(0) : node.name()) + "." + std::to_string(i);
    TESSERA_ASSIGN_OR_RETURN(ValueId out, ctx.add(name, OpKind::kSlice, a, {x}, shape, ctx.value(x).dtype));
    ctx.values[node.output(static_cast<int>(i))] = out;
  }
  return Status::ok();
}

Status convert_pad(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto xs = ctx.value(x).shape;
  const std::string mode = attr_string(node, "mode", "constant");
  static const std::map<std::string, graph::PadAttrs::Mode> kModes = {{"constant", graph::PadAttrs::Mode::kConstant},
                                                                      {"edge", graph::PadAttrs::Mode::kEdge},
                                                                      {"reflect", graph::PadAttrs::Mode::kReflect}};
  if (!kModes.count(mode)) return invalid("mode '" + mode + "' is not supported (constant, edge, reflect)");
  if (ImportContext::has_input(node, 3)) return invalid("the axes input (opset 18) is not supported");
  bool given = false;
  TESSERA_ASSIGN_OR_RETURN(auto pads, ints_from(ctx, node, "pads", 1, &given));
  if (pads.size() != 2 * xs.size()) return invalid("pads must have 2 * rank values");
  double value = attr_float(node, "value", 0.0f);
  if (ImportContext::has_input(node, 2)) {
    const auto* c = ctx.constant_input(node, 2);
    if (!c || c->num_elements() != 1) return invalid("constant_value is not a constant scalar");
    value = c->at(0);
  }
  graph::PadAttrs a{std::vector<int64_t>(pads.begin(), pads.begin() + xs.size()),
                    std::vector<int64_t>(pads.begin() + xs.size(), pads.end()), value, kModes.at(mode)};
  std::vector<int64_t> shape = xs;
  bool any = false;
  for (size_t d = 0; d < xs.size(); ++d) {
    if (a.before[d] < 0 || a.after[d] < 0) return invalid("negative pads (cropping) are not supported");
    if (a.mode == graph::PadAttrs::Mode::kReflect && (a.before[d] >= xs[d] || a.after[d] >= xs[d]))
      return invalid("reflect pads of dimension " + std::to_string(d) + " must be smaller than its size " +
                     std::to_string(xs[d]));
    shape[d] += a.before[d] + a.after[d];
    any = any || a.before[d] || a.after[d];
  }
  if (!any) {
    ctx.alias(node, x);
    return Status::ok();
  }
  return ctx.emit(node, OpKind::kPad, a, {x}, shape, ctx.value(x).dtype);
}

Status convert_constant(ImportContext& ctx, const Node& node) {
  graph::Constant c;
  if (const auto* a = find_attr(node, "value")) {
    TESSERA_ASSIGN_OR_RETURN(c, constant_of_tensor(a->t()));
  } else if (const auto* f = find_attr(node, "value_float")) {
    c = graph::Constant::from_floats({}, {f->f()});
  } else if (const auto* fs = find_attr(node, "value_floats")) {
    c = graph::Constant::from_floats({fs->floats_size()}, std::vector<float>(fs->floats().begin(), fs->floats().end()));
  } else if (const auto* i = find_attr(node, "value_int")) {
    c = graph::Constant::from_int64s({}, {i->i()});
  } else if (const auto* is = find_attr(node, "value_ints")) {
    c = graph::Constant::from_int64s({is->ints_size()}, std::vector<int64_t>(is->ints().begin(), is->ints().end()));
  } else {
    return invalid("only value, value_float(s) and value_int(s) constants are supported");
  }
  ctx.values[node.output(0)] = ctx.g.add_constant(node.output(0), std::move(c));
  return Status::ok();
}

Status convert_shape(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto rank = static_cast<int64_t>(ctx.value(x).shape.size());
  int64_t start = attr_int(node, "start", 0), end = attr_int(node, "end", rank);
  start = std::clamp(start < 0 ? start + rank : start, int64_t{0}, rank);
  end = std::clamp(end < 0 ? end + rank : end, int64_t{0}, rank);
  if (start != 0 || end != rank) {
    std::vector<int64_t> dims(ctx.value(x).shape.begin() + start, ctx.value(x).shape.begin() + std::max(start, end));
    ctx.values[node.output(0)] =
        ctx.g.add_constant(node.output(0), graph::Constant::from_int64s({static_cast<int64_t>(dims.size())}, dims));
    return Status::ok();
  }
  return ctx.emit(node, OpKind::kShape, graph::NoAttrs{}, {x}, {rank}, DType::i64());
}

Status convert_gather(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId data, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(ValueId idx, ctx.input(node, 1));
  const auto ds = ctx.value(data).shape, is = ctx.value(idx).shape;
  if (!ctx.value(idx).dtype.is_int()) return invalid("indices must be int32 or int64");
  TESSERA_ASSIGN_OR_RETURN(int64_t axis, norm_axis(attr_int(node, "axis", 0), ds.size(), "axis"));
  std::vector<int64_t> shape(ds.begin(), ds.begin() + axis);
  shape.insert(shape.end(), is.begin(), is.end());
  shape.insert(shape.end(), ds.begin() + axis + 1, ds.end());
  return ctx.emit(node, OpKind::kGather, graph::AxisAttrs{axis}, {data, idx}, shape, ctx.value(data).dtype);
}

Status convert_cast(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(DType to, dtype_of_onnx(static_cast<int32_t>(attr_int(node, "to", 0))));
  const std::vector<int64_t> shape = ctx.value(x).shape;
  if (computed_type(to) != to) {
    // To float16 or bfloat16: rounded to it, and computed on in float32.
    TESSERA_ASSIGN_OR_RETURN(
        x, ctx.add(base_name(node) + "." + to.to_string(), OpKind::kCast, graph::CastAttrs{to}, {x}, shape, to));
    to = computed_type(to);
  }
  if (to == ctx.value(x).dtype) {
    ctx.alias(node, x);
    return Status::ok();
  }
  return ctx.emit(node, OpKind::kCast, graph::CastAttrs{to}, {x}, shape, to);
}

Status convert_identity(ImportContext& ctx, const Node& node) {
  if (node.op_type() == "Identity") {  // of a sequence or optional too
    TESSERA_ASSIGN_OR_RETURN(ValueId any, ctx.any_input(node, 0));
    if (ImportContext::is_composite(any)) {
      ctx.alias(node, any);
      return Status::ok();
    }
  }
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));

  if (node.op_type() == "Dropout" && ImportContext::has_input(node, 2)) {
    // Training mode drops at random unless the ratio is 0, where it is the
    // identity with a mask of ones, as in inference.
    const auto* training = ctx.constant_input(node, 2);
    if (!training) return invalid("training_mode (input 2) is not a constant");
    if (training->at(0) != 0.0) {
      const auto* ratio = ImportContext::has_input(node, 1) ? ctx.constant_input(node, 1) : nullptr;
      if (!ratio || ratio->at(0) != 0.0)
        return invalid("training mode with a ratio other than a constant 0 (random dropping) is not supported");
    }
  }
  if (node.op_type() == "Dropout" && node.output_size() > 1 && !node.output(1).empty()) {
    // In inference the mask keeps everything.
    const auto shape = ctx.value(x).shape;
    ctx.values[node.output(1)] = ctx.g.add_constant(
        node.output(1),
        graph::Constant::from_doubles(DType::boolean(), shape, std::vector<double>(graph::shape_size(shape), 1.0)));
  }
  ctx.alias(node, x);
  return Status::ok();
}

}  // namespace tessera::frontend::detail
