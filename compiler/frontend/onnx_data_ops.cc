// Converters of operators that make constants from static shapes
// (ConstantOfShape, Size, EyeLike, Range) and of data movement (Expand, Tile,
// GatherElements, Trilu, DepthToSpace, SpaceToDepth, OneHot, CastLike).
#include <algorithm>
#include <cmath>
#include <map>

#include "compiler/frontend/onnx_context.h"

namespace tessera::frontend::detail {

using graph::OpKind;
using graph::ValueId;
using Node = onnx::NodeProto;

namespace {
Status bind_constant(ImportContext& ctx, const Node& node, graph::Constant c) {
  ctx.values[node.output(0)] = ctx.g.add_constant(node.output(0), std::move(c));
  return Status::ok();
}

// The data of constant input i, or an error naming it.
Result<std::vector<double>> constant_values(const ImportContext& ctx, const Node& node, int i, const char* what) {
  const auto* c = ctx.constant_input(node, i);
  if (!c) return invalid(std::string(what) + " (input " + std::to_string(i) + ") is not a constant");
  return c->to_doubles();
}

Status convert_constant_of_shape(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(auto dims, constant_values(ctx, node, 0, "shape"));
  std::vector<int64_t> shape;
  for (double d : dims) {
    if (d < 0) return invalid("negative dimension in shape");
    shape.push_back(static_cast<int64_t>(d));
  }
  graph::Constant fill = graph::Constant::from_floats({}, {0.0f});
  if (const auto* a = find_attr(node, "value")) {
    TESSERA_ASSIGN_OR_RETURN(fill, constant_of_tensor(a->t()));
    if (fill.num_elements() != 1) return invalid("value must hold one element");
  }
  if (graph::shape_size(shape) > (int64_t{1} << 28)) return invalid("the constant is too large to fold");
  return bind_constant(
      ctx, node,
      graph::Constant::from_doubles(fill.dtype, shape, std::vector<double>(graph::shape_size(shape), fill.at(0))));
}

Status convert_size(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  return bind_constant(ctx, node, graph::Constant::from_int64s({}, {graph::shape_size(ctx.value(x).shape)}));
}

Status convert_eye_like(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto xs = ctx.value(x).shape;
  if (xs.size() != 2) return invalid("input must be 2-D");
  DType t = ctx.value(x).dtype;
  if (find_attr(node, "dtype")) {
    TESSERA_ASSIGN_OR_RETURN(t, computed_type_of_onnx(static_cast<int32_t>(attr_int(node, "dtype", 1))));
  }
  const int64_t k = attr_int(node, "k", 0);
  std::vector<double> v(graph::shape_size(xs), 0.0);
  for (int64_t i = 0; i < xs[0]; ++i)
    if (i + k >= 0 && i + k < xs[1]) v[i * xs[1] + i + k] = 1.0;
  return bind_constant(ctx, node, graph::Constant::from_doubles(t, xs, v));
}

Status convert_range(ImportContext& ctx, const Node& node) {
  double v[3];
  for (int i = 0; i < 3; ++i) {
    TESSERA_ASSIGN_OR_RETURN(auto c, constant_values(ctx, node, i, i == 0 ? "start" : i == 1 ? "limit" : "delta"));
    if (c.size() != 1) return invalid("start, limit and delta must be scalars");
    v[i] = c[0];
  }
  if (v[2] == 0) return invalid("delta must not be 0");
  const auto n = static_cast<int64_t>(std::max(0.0, std::ceil((v[1] - v[0]) / v[2])));
  if (n > (int64_t{1} << 28)) return invalid("the range is too long to fold");
  std::vector<double> out(n);
  for (int64_t i = 0; i < n; ++i) out[i] = v[0] + static_cast<double>(i) * v[2];
  return bind_constant(ctx, node, graph::Constant::from_doubles(ctx.constant_input(node, 0)->dtype, {n}, out));
}

Status convert_expand(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(auto dims, constant_values(ctx, node, 1, "shape"));
  std::vector<int64_t> shape;
  for (double d : dims) shape.push_back(static_cast<int64_t>(d));
  TESSERA_ASSIGN_OR_RETURN(auto out, ops::broadcast_shape(ctx.value(x).shape, shape));
  return ctx.emit(node, OpKind::kExpand, graph::NoAttrs{}, {x}, out, ctx.value(x).dtype);
}

Status convert_tile(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(auto repeats, constant_values(ctx, node, 1, "repeats"));
  auto shape = ctx.value(x).shape;
  if (repeats.size() != shape.size()) return invalid("repeats needs one value per input dimension");
  for (size_t d = 0; d < shape.size(); ++d) {
    if (repeats[d] < 0) return invalid("repeats must not be negative");
    shape[d] *= static_cast<int64_t>(repeats[d]);
  }
  return ctx.emit(node, OpKind::kTile, graph::NoAttrs{}, {x}, shape, ctx.value(x).dtype);
}

Status convert_gather_elements(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId data, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(ValueId indices, ctx.input(node, 1));
  const auto ds = ctx.value(data).shape, is = ctx.value(indices).shape;
  if (ds.size() != is.size() || ds.empty()) return invalid("data and indices must have one rank, at least 1");
  TESSERA_ASSIGN_OR_RETURN(int64_t axis, norm_axis(attr_int(node, "axis", 0), ds.size(), "axis"));
  for (size_t d = 0; d < ds.size(); ++d)
    if (static_cast<int64_t>(d) != axis && is[d] > ds[d])
      return invalid("indices " + graph::shape_string(is) + " exceed data " + graph::shape_string(ds) +
                     " off the axis");
  if (ctx.value(indices).dtype.is_float()) return invalid("indices must be integers");
  if (const auto* c = ctx.constant_input(node, 1))
    for (double j : c->to_doubles())
      if (j < -ds[axis] || j >= ds[axis])
        return invalid("index " + std::to_string(static_cast<int64_t>(j)) + " is out of range");
  return ctx.emit(node, OpKind::kGatherElements, graph::AxisAttrs{axis}, {data, indices}, is, ctx.value(data).dtype);
}

// Trilu: x where the constant mask of the kept triangle is true, else 0.
Status convert_trilu(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto xs = ctx.value(x).shape;
  const DType t = ctx.value(x).dtype;
  if (xs.size() < 2) return invalid("input must have rank 2 or more");
  int64_t k = 0;
  if (ImportContext::has_input(node, 1)) {
    TESSERA_ASSIGN_OR_RETURN(auto kv, constant_values(ctx, node, 1, "k"));
    if (kv.size() != 1) return invalid("k must be a scalar");
    k = static_cast<int64_t>(kv[0]);
  }
  const bool upper = attr_int(node, "upper", 1) != 0;
  const int64_t rows = xs[xs.size() - 2], cols = xs.back();
  std::vector<double> mask(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) mask[i * cols + j] = upper ? j - i >= k : j - i <= k;
  const std::string name = base_name(node);
  const ValueId m =
      ctx.g.add_constant(name + ".mask", graph::Constant::from_doubles(DType::boolean(), {rows, cols}, mask));
  const ValueId zero = scalar_constant(ctx, name + ".zero", t, 0.0);
  return ctx.emit(node, OpKind::kWhere, graph::NoAttrs{}, {m, x, zero}, xs, t);
}

// DepthToSpace and SpaceToDepth as reshape, transpose, reshape.
Status convert_depth_space(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto xs = ctx.value(x).shape;
  const DType t = ctx.value(x).dtype;
  if (xs.size() != 4) return invalid("input must be N x C x H x W");
  const int64_t b = attr_int(node, "blocksize", 0);
  if (b <= 0) return invalid("blocksize must be positive");
  const int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3];
  std::vector<int64_t> split, perm, out;
  if (node.op_type() == "DepthToSpace") {
    if (c % (b * b)) return invalid("channels " + std::to_string(c) + " do not divide by blocksize^2");
    const std::string mode = attr_string(node, "mode", "DCR");
    if (mode == "DCR")
      split = {n, b, b, c / (b * b), h, w}, perm = {0, 3, 4, 1, 5, 2};
    else if (mode == "CRD")
      split = {n, c / (b * b), b, b, h, w}, perm = {0, 1, 4, 2, 5, 3};
    else
      return invalid("mode '" + mode + "' is not one of DCR, CRD");
    out = {n, c / (b * b), h * b, w * b};
  } else {
    if (h % b || w % b) return invalid("height and width must divide by blocksize");
    split = {n, c, h / b, b, w / b, b}, perm = {0, 3, 5, 1, 2, 4};
    out = {n, c * b * b, h / b, w / b};
  }
  const std::string name = base_name(node);
  TESSERA_ASSIGN_OR_RETURN(ValueId r, ctx.add(name + ".split", OpKind::kReshape, graph::NoAttrs{}, {x}, split, t));
  std::vector<int64_t> moved(6);
  for (size_t d = 0; d < 6; ++d) moved[d] = split[perm[d]];
  TESSERA_ASSIGN_OR_RETURN(ValueId p,
                           ctx.add(name + ".move", OpKind::kTranspose, graph::PermAttrs{perm}, {r}, moved, t));
  return ctx.emit(node, OpKind::kReshape, graph::NoAttrs{}, {p}, out, t);
}

// OneHot: values[1] where the (wrapped) index equals the position along the
// new axis, values[0] elsewhere.
Status convert_one_hot(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId indices, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(auto dv, constant_values(ctx, node, 1, "depth"));
  TESSERA_ASSIGN_OR_RETURN(ValueId values, ctx.input(node, 2));
  if (dv.size() != 1 || dv[0] < 1) return invalid("depth must be a positive scalar");
  if (ctx.value(values).shape != std::vector<int64_t>{2}) return invalid("values must have shape [2]");
  const auto depth = static_cast<int64_t>(dv[0]);
  const auto is = ctx.value(indices).shape;
  const DType t = ctx.value(values).dtype;
  TESSERA_ASSIGN_OR_RETURN(int64_t axis, norm_axis(attr_int(node, "axis", -1), is.size() + 1, "axis"));
  const std::string name = base_name(node);
  ValueId idx = indices;
  if (ctx.value(indices).dtype != DType::i64()) {
    TESSERA_ASSIGN_OR_RETURN(
        idx, ctx.add(name + ".idx", OpKind::kCast, graph::CastAttrs{DType::i64()}, {indices}, is, DType::i64()));
  }
  // Negative indices count from the end (depth is added once); anything
  // else outside [0, depth) matches no position, so its row is all off.
  const ValueId d = scalar_constant(ctx, name + ".depth", DType::i64(), static_cast<double>(depth));
  const ValueId zero = scalar_constant(ctx, name + ".zero", DType::i64(), 0.0);
  TESSERA_ASSIGN_OR_RETURN(
      ValueId neg, ctx.add(name + ".neg", OpKind::kBinary, graph::BinaryAttrs{ops::BinaryFn::kLess}, {idx, zero}, is,
                           DType::boolean()));
  TESSERA_ASSIGN_OR_RETURN(ValueId wrapped,
                           ctx.add(name + ".wrapped", OpKind::kAdd, graph::NoAttrs{}, {idx, d}, is, DType::i64()));
  TESSERA_ASSIGN_OR_RETURN(
      ValueId fixed, ctx.add(name + ".fixed", OpKind::kWhere, graph::NoAttrs{}, {neg, wrapped, idx}, is, DType::i64()));
  auto lifted = is;
  lifted.insert(lifted.begin() + axis, 1);
  TESSERA_ASSIGN_OR_RETURN(
      ValueId col, ctx.add(name + ".lifted", OpKind::kReshape, graph::NoAttrs{}, {fixed}, lifted, DType::i64()));
  std::vector<int64_t> pos_shape(lifted.size(), 1), pos(depth);
  pos_shape[axis] = depth;
  for (int64_t i = 0; i < depth; ++i) pos[i] = i;
  const ValueId positions = ctx.g.add_constant(name + ".positions", graph::Constant::from_int64s(pos_shape, pos));
  auto out = lifted;
  out[axis] = depth;
  TESSERA_ASSIGN_OR_RETURN(
      ValueId hit, ctx.add(name + ".hit", OpKind::kBinary, graph::BinaryAttrs{ops::BinaryFn::kEqual}, {col, positions},
                           out, DType::boolean()));
  ValueId sides[2];
  for (int64_t i = 0; i < 2; ++i) {
    TESSERA_ASSIGN_OR_RETURN(ValueId s, ctx.add(name + (i ? ".on1" : ".off1"), OpKind::kSlice,
                                                graph::SliceAttrs{{i}, {1}}, {values}, {1}, t));
    TESSERA_ASSIGN_OR_RETURN(sides[i],
                             ctx.add(name + (i ? ".on" : ".off"), OpKind::kReshape, graph::NoAttrs{}, {s}, {}, t));
  }
  return ctx.emit(node, OpKind::kWhere, graph::NoAttrs{}, {hit, sides[1], sides[0]}, out, t);
}

Status convert_cast_like(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(ValueId like, ctx.input(node, 1));
  const DType to = ctx.value(like).dtype;
  if (to == ctx.value(x).dtype) {
    ctx.alias(node, x);
    return Status::ok();
  }
  return ctx.emit(node, OpKind::kCast, graph::CastAttrs{to}, {x}, ctx.value(x).shape, to);
}

Status convert_gather_nd(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId data, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(ValueId indices, ctx.input(node, 1));
  const auto ds = ctx.value(data).shape, is = ctx.value(indices).shape;
  const int64_t b = attr_int(node, "batch_dims", 0);
  if (ds.empty() || is.empty()) return invalid("data and indices must have rank 1 or more");
  if (ctx.value(indices).dtype.is_float()) return invalid("indices must be integers");
  const int64_t k = is.back();
  if (b < 0 || b >= static_cast<int64_t>(std::min(ds.size(), is.size())))
    return invalid("batch_dims must be in [0, min(rank(data), rank(indices)))");
  if (k < 1 || b + k > static_cast<int64_t>(ds.size()))
    return invalid("indices.shape[-1] must be in [1, rank(data) - batch_dims]");
  for (int64_t d = 0; d < b; ++d)
    if (ds[d] != is[d]) return invalid("the batch dimensions of data and indices differ");
  std::vector<int64_t> out(is.begin(), is.end() - 1);
  out.insert(out.end(), ds.begin() + b + k, ds.end());
  return ctx.emit(node, OpKind::kGatherND, graph::ScatterAttrs{b}, {data, indices}, out, ctx.value(data).dtype);
}

Result<graph::ScatterAttrs::Reduction> scatter_reduction(const Node& node) {
  const std::string r = attr_string(node, "reduction", "none");
  if (r == "none") return graph::ScatterAttrs::Reduction::kNone;
  if (r == "add") return graph::ScatterAttrs::Reduction::kAdd;
  if (r == "mul") return graph::ScatterAttrs::Reduction::kMul;
  return invalid("reduction '" + r + "' is not one of none, add, mul");
}

// ScatterElements (and the deprecated Scatter, the same operator), ScatterND.
Status convert_scatter(ImportContext& ctx, const Node& node) {
  ValueId in[3];
  for (int i = 0; i < 3; ++i) {
    TESSERA_ASSIGN_OR_RETURN(in[i], ctx.input(node, i));
  }
  const auto ds = ctx.value(in[0]).shape, is = ctx.value(in[1]).shape, us = ctx.value(in[2]).shape;
  if (ctx.value(in[1]).dtype.is_float()) return invalid("indices must be integers");
  if (ctx.value(in[2]).dtype != ctx.value(in[0]).dtype) return invalid("updates and data types differ");
  graph::ScatterAttrs a;
  TESSERA_ASSIGN_OR_RETURN(a.reduction, scatter_reduction(node));
  const bool nd = node.op_type() == "ScatterND";
  if (nd) {
    if (is.empty() || is.back() < 1 || is.back() > static_cast<int64_t>(ds.size()))
      return invalid("indices.shape[-1] must be in [1, rank(data)]");
    std::vector<int64_t> want(is.begin(), is.end() - 1);
    want.insert(want.end(), ds.begin() + is.back(), ds.end());
    if (us != want) return invalid("updates must have shape " + graph::shape_string(want));
  } else {
    if (ds.empty() || is.size() != ds.size() || us != is)
      return invalid("indices and updates must have data's rank and one shape");
    TESSERA_ASSIGN_OR_RETURN(a.axis, norm_axis(attr_int(node, "axis", 0), ds.size(), "axis"));
    for (size_t d = 0; d < ds.size(); ++d)
      if (is[d] > ds[d] && static_cast<int64_t>(d) != a.axis) return invalid("indices exceed data off the axis");
  }
  for (int64_t d : is)
    if (d == 0) return invalid("empty indices are not supported");
  return ctx.emit(node, nd ? OpKind::kScatterND : OpKind::kScatterElements, a, {in[0], in[1], in[2]}, ds,
                  ctx.value(in[0]).dtype);
}

// Einsum: parses the equation (an ellipsis stands for the leading
// dimensions, as letters of its own; an implicit output is the letters seen
// once, sorted) into one contraction node.
Status convert_einsum(ImportContext& ctx, const Node& node) {
  std::string eq;
  for (char c : attr_string(node, "equation", ""))
    if (c != ' ') eq += c;
  const size_t arrow = eq.find("->");
  std::vector<std::string> terms;
  const std::string lhs = eq.substr(0, arrow);
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (static_cast<int>(terms.size()) != node.input_size()) return invalid("the equation does not name every input");
  graph::EinsumAttrs a;
  a.extents.assign(52 + 8, 0);  // 52 letters, then up to 8 ellipsis dimensions
  auto letter = [](char c) { return c >= 'a' && c <= 'z' ? c - 'a' : c >= 'A' && c <= 'Z' ? c - 'A' + 26 : -1; };
  auto parse = [&](const std::string& term, size_t rank, std::vector<int>* out) -> Status {
    const size_t dots = term.find("...");
    const size_t named = term.size() - (dots == std::string::npos ? 0 : 3);
    if (dots != std::string::npos && named > rank)
      return invalid("term '" + term + "' has more subscripts than dimensions");
    const size_t ellipsis = dots == std::string::npos ? 0 : rank - named;
    if (ellipsis > 8) return invalid("an ellipsis of more than 8 dimensions");
    for (size_t i = 0; i < term.size(); ++i) {
      if (i == dots) {
        for (size_t e = 0; e < ellipsis; ++e) out->push_back(static_cast<int>(52 + 8 - ellipsis + e));
        i += 2;
        continue;
      }
      const int l = letter(term[i]);
      if (l < 0) return invalid(std::string("'") + term[i] + "' is not a subscript letter");
      out->push_back(l);
    }
    return Status::ok();
  };
  std::vector<ValueId> inputs;
  std::vector<int> seen(a.extents.size(), 0);
  for (size_t t = 0; t < terms.size(); ++t) {
    TESSERA_ASSIGN_OR_RETURN(ValueId v, ctx.input(node, static_cast<int>(t)));
    inputs.push_back(v);
    const auto shape = ctx.value(v).shape;
    a.inputs.emplace_back();
    TESSERA_RETURN_IF_ERROR(parse(terms[t], shape.size(), &a.inputs.back()));
    if (a.inputs.back().size() != shape.size())
      return invalid("term '" + terms[t] + "' does not match input shape " + graph::shape_string(shape));
    if (ctx.value(v).dtype != ctx.value(inputs[0]).dtype) return invalid("operand types differ");
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t& e = a.extents[a.inputs.back()[d]];
      if (e != 0 && e != shape[d]) return invalid("subscript extents differ (broadcasting is not supported)");
      if (shape[d] == 0) return invalid("empty dimensions are not supported");
      e = shape[d];
      ++seen[a.inputs.back()[d]];
    }
  }
  if (arrow != std::string::npos) {
    const std::string rhs = eq.substr(arrow + 2);
    const bool dots = rhs.find("...") != std::string::npos;
    size_t ellipsis = 0;  // the output's ellipsis spans the widest input's
    for (size_t l = 52; l < a.extents.size(); ++l) ellipsis += a.extents[l] != 0;
    TESSERA_RETURN_IF_ERROR(parse(rhs, dots ? rhs.size() - 3 + ellipsis : rhs.size(), &a.output));
  } else {
    for (size_t l = 52; l < a.extents.size(); ++l)
      if (a.extents[l]) a.output.push_back(static_cast<int>(l));
    for (int l = 0; l < 52; ++l)
      if (seen[l] == 1) a.output.push_back(l);
  }
  std::vector<int64_t> out;
  for (int l : a.output) {
    if (a.extents[l] == 0) return invalid("an output subscript names no input dimension");
    if (std::count(a.output.begin(), a.output.end(), l) > 1) return invalid("an output subscript repeats");
    out.push_back(a.extents[l]);
  }
  return ctx.emit(node, OpKind::kEinsum, a, inputs, out, ctx.value(inputs[0]).dtype);
}

// Positions 0..n-1 along dimension `axis` of a rank-`rank` int64 constant
// (every other dimension 1).
ValueId positions(ImportContext& ctx, const std::string& name, size_t rank, size_t axis, int64_t n) {
  std::vector<int64_t> shape(rank, 1), v(static_cast<size_t>(n));
  shape[axis] = n;
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  return ctx.g.add_constant(name, graph::Constant::from_int64s(shape, v));
}

// TopK along the last axis of x (the caller transposes): the rank of each
// element (how many come before it: greater, or equal at a lower index; the
// reverse for the smallest) from a pairwise comparison, then for each
// output slot r the index whose rank is r, then the values gathered.
Result<std::pair<ValueId, ValueId>> emit_top_k_last(ImportContext& ctx, const std::string& name, ValueId x, int64_t k,
                                                    bool largest) {
  const auto xs = ctx.value(x).shape;
  const DType t = ctx.value(x).dtype, i64 = DType::i64();
  const size_t r = xs.size();
  const int64_t n = xs.back();
  auto row = xs, col = xs;  // x as [.., n, 1] (element i) and [.., 1, n] (element j)
  row.push_back(1);
  col.insert(col.end() - 1, 1);
  TESSERA_ASSIGN_OR_RETURN(ValueId xi, ctx.add(name + ".xi", OpKind::kReshape, graph::NoAttrs{}, {x}, row, t));
  TESSERA_ASSIGN_OR_RETURN(ValueId xj, ctx.add(name + ".xj", OpKind::kReshape, graph::NoAttrs{}, {x}, col, t));
  auto pair = xs;
  pair.push_back(n);
  auto cmp = [&](const char* what, ops::BinaryFn fn, ValueId a, ValueId b, const std::vector<int64_t>& shape) {
    return ctx.add(name + what, OpKind::kBinary, graph::BinaryAttrs{fn}, {a, b}, shape, DType::boolean());
  };
  TESSERA_ASSIGN_OR_RETURN(ValueId better,
                           cmp(".better", largest ? ops::BinaryFn::kGreater : ops::BinaryFn::kLess, xj, xi, pair));
  TESSERA_ASSIGN_OR_RETURN(ValueId same, cmp(".same", ops::BinaryFn::kEqual, xj, xi, pair));
  const ValueId pi = positions(ctx, name + ".i", r + 1, r - 1, n), pj = positions(ctx, name + ".j", r + 1, r, n);
  std::vector<int64_t> square(r + 1, 1);
  square[r - 1] = square[r] = n;
  TESSERA_ASSIGN_OR_RETURN(ValueId earlier, cmp(".earlier", ops::BinaryFn::kLess, pj, pi, square));
  TESSERA_ASSIGN_OR_RETURN(ValueId tie, cmp(".tie", ops::BinaryFn::kAnd, same, earlier, pair));
  TESSERA_ASSIGN_OR_RETURN(ValueId before, cmp(".before", ops::BinaryFn::kOr, better, tie, pair));
  TESSERA_ASSIGN_OR_RETURN(ValueId ones,
                           ctx.add(name + ".count", OpKind::kCast, graph::CastAttrs{i64}, {before}, pair, i64));
  TESSERA_ASSIGN_OR_RETURN(
      ValueId rank, ctx.add(name + ".rank", OpKind::kReduceSum, graph::ReduceAttrs{{static_cast<int64_t>(r)}, false},
                            {ones}, xs, i64));
  // slot[.., s, i] = rank[.., i] == s; index[.., s] = sum over i of i * slot.
  TESSERA_ASSIGN_OR_RETURN(ValueId rank_row,
                           ctx.add(name + ".rank_row", OpKind::kReshape, graph::NoAttrs{}, {rank}, col, i64));
  auto slots = xs;
  slots.back() = k;
  slots.push_back(n);
  TESSERA_ASSIGN_OR_RETURN(
      ValueId hit, cmp(".slot", ops::BinaryFn::kEqual, rank_row, positions(ctx, name + ".s", r + 1, r - 1, k), slots));
  TESSERA_ASSIGN_OR_RETURN(ValueId picked,
                           ctx.add(name + ".picked", OpKind::kWhere, graph::NoAttrs{},
                                   {hit, pj, scalar_constant(ctx, name + ".none", i64, 0.0)}, slots, i64));
  auto out = xs;
  out.back() = k;
  TESSERA_ASSIGN_OR_RETURN(ValueId indices,
                           ctx.add(name + ".indices", OpKind::kReduceSum,
                                   graph::ReduceAttrs{{static_cast<int64_t>(r)}, false}, {picked}, out, i64));
  TESSERA_ASSIGN_OR_RETURN(
      ValueId values, ctx.add(name + ".values", OpKind::kGatherElements, graph::AxisAttrs{static_cast<int64_t>(r - 1)},
                              {x, indices}, out, t));
  return std::make_pair(values, indices);
}

Status convert_top_k(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(auto kv, constant_values(ctx, node, 1, "K"));
  const auto xs = ctx.value(x).shape;
  if (xs.empty()) return invalid("input must have rank 1 or more");
  if (kv.size() != 1) return invalid("K must hold one value");
  TESSERA_ASSIGN_OR_RETURN(int64_t axis, norm_axis(attr_int(node, "axis", -1), xs.size(), "axis"));
  const auto k = static_cast<int64_t>(kv[0]);
  if (k < 1 || k > xs[axis]) return invalid("K must be in [1, " + std::to_string(xs[axis]) + "]");
  if (ctx.value(x).dtype.is_bool()) return invalid("TopK of bool is not supported");
  const std::string name = base_name(node);
  // Move the axis last, and back afterwards.
  std::vector<int64_t> perm;
  for (size_t d = 0; d < xs.size(); ++d)
    if (static_cast<int64_t>(d) != axis) perm.push_back(static_cast<int64_t>(d));
  perm.push_back(axis);
  const bool moved = axis + 1 != static_cast<int64_t>(xs.size());
  ValueId last = x;
  std::vector<int64_t> moved_shape;
  for (int64_t d : perm) moved_shape.push_back(xs[d]);
  if (moved) {
    TESSERA_ASSIGN_OR_RETURN(last, ctx.add(name + ".to_last", OpKind::kTranspose, graph::PermAttrs{perm}, {x},
                                           moved_shape, ctx.value(x).dtype));
  }
  TESSERA_ASSIGN_OR_RETURN(auto vi, emit_top_k_last(ctx, name, last, k, attr_int(node, "largest", 1) != 0));
  ValueId outs[2] = {vi.first, vi.second};
  for (int o = 0; o < 2 && o < node.output_size(); ++o) {
    if (node.output(o).empty()) continue;
    ValueId v = outs[o];
    if (moved) {
      std::vector<int64_t> back(perm.size()), shape = xs;
      for (size_t d = 0; d < perm.size(); ++d) back[perm[d]] = static_cast<int64_t>(d);
      shape[axis] = k;
      TESSERA_ASSIGN_OR_RETURN(
          v, ctx.add(node.output(o), OpKind::kTranspose, graph::PermAttrs{back}, {v}, shape, ctx.value(v).dtype));
    }
    ctx.values[node.output(o)] = v;
  }
  return Status::ok();
}

// ReverseSequence: along time_axis, the first sequence_lens[b] elements of
// each batch entry b reversed, the rest kept: GatherElements with the index
// t < len ? len - 1 - t : t.
Status convert_reverse_sequence(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(ValueId lens, ctx.input(node, 1));
  const auto xs = ctx.value(x).shape;
  const int64_t batch_axis = attr_int(node, "batch_axis", 1), time_axis = attr_int(node, "time_axis", 0);
  if (xs.size() < 2) return invalid("input must have rank 2 or more");
  if (!((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0)))
    return invalid("batch_axis and time_axis must be 0 and 1 in some order");
  if (ctx.value(lens).shape != std::vector<int64_t>{xs[batch_axis]})
    return invalid("sequence_lens must have shape [batch]");
  const DType i64 = DType::i64();
  if (ctx.value(lens).dtype != i64) return invalid("sequence_lens must be int64");
  const std::string name = base_name(node);
  std::vector<int64_t> lens_shape(xs.size(), 1);
  lens_shape[batch_axis] = xs[batch_axis];
  TESSERA_ASSIGN_OR_RETURN(ValueId len,
                           ctx.add(name + ".len", OpKind::kReshape, graph::NoAttrs{}, {lens}, lens_shape, i64));
  const ValueId t = positions(ctx, name + ".t", xs.size(), static_cast<size_t>(time_axis), xs[time_axis]);
  std::vector<int64_t> grid(xs.size(), 1);
  grid[0] = xs[0], grid[1] = xs[1];
  TESSERA_ASSIGN_OR_RETURN(
      ValueId inside, ctx.add(name + ".inside", OpKind::kBinary, graph::BinaryAttrs{ops::BinaryFn::kLess}, {t, len},
                              grid, DType::boolean()));
  TESSERA_ASSIGN_OR_RETURN(ValueId last,
                           ctx.add(name + ".last", OpKind::kSub, graph::NoAttrs{},
                                   {len, scalar_constant(ctx, name + ".one", i64, 1.0)}, lens_shape, i64));
  TESSERA_ASSIGN_OR_RETURN(ValueId mirrored,
                           ctx.add(name + ".mirrored", OpKind::kSub, graph::NoAttrs{}, {last, t}, grid, i64));
  TESSERA_ASSIGN_OR_RETURN(ValueId at,
                           ctx.add(name + ".at", OpKind::kWhere, graph::NoAttrs{}, {inside, mirrored, t}, grid, i64));
  TESSERA_ASSIGN_OR_RETURN(ValueId full, ctx.add(name + ".at_full", OpKind::kExpand, graph::NoAttrs{}, {at}, xs, i64));
  return ctx.emit(node, OpKind::kGatherElements, graph::AxisAttrs{time_axis}, {x, full}, xs, ctx.value(x).dtype);
}

// Compress with a constant condition: a Gather of the kept positions (the
// output's shape depends on the condition, so it must be static).
Status convert_compress(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(auto cond, constant_values(ctx, node, 1, "condition"));
  auto xs = ctx.value(x).shape;
  const std::string name = base_name(node);
  const auto* axis_attr = find_attr(node, "axis");
  int64_t axis = 0;
  ValueId data = x;
  if (axis_attr) {
    TESSERA_ASSIGN_OR_RETURN(axis, norm_axis(axis_attr->i(), xs.size(), "axis"));
  } else {  // without an axis, the flattened input
    const int64_t total = graph::shape_size(xs);
    TESSERA_ASSIGN_OR_RETURN(
        data, ctx.add(name + ".flat", OpKind::kReshape, graph::NoAttrs{}, {x}, {total}, ctx.value(x).dtype));
    xs = {total};
  }
  if (static_cast<int64_t>(cond.size()) > xs[axis]) return invalid("condition is longer than the axis");
  std::vector<int64_t> kept;
  for (size_t i = 0; i < cond.size(); ++i)
    if (cond[i] != 0) kept.push_back(static_cast<int64_t>(i));
  if (kept.empty()) return invalid("the condition keeps nothing: empty tensors are not supported");
  const ValueId idx =
      ctx.g.add_constant(name + ".kept", graph::Constant::from_int64s({static_cast<int64_t>(kept.size())}, kept));
  xs[axis] = static_cast<int64_t>(kept.size());
  return ctx.emit(node, OpKind::kGather, graph::AxisAttrs{axis}, {data, idx}, xs, ctx.value(x).dtype);
}

// NonZero of a constant: the positions of the non-zero elements, one row
// per dimension (the output's shape depends on the data, so it must fold).
Status convert_non_zero(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(auto v, constant_values(ctx, node, 0, "X (its shape decides the output's)"));
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const auto xs = ctx.value(x).shape;
  std::vector<std::vector<int64_t>> rows(xs.size());
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) {
    if (v[i] == 0) continue;
    int64_t rest = i;
    for (size_t d = xs.size(); d-- > 0;) {
      rows[d].push_back(rest % xs[d]);
      rest /= xs[d];
    }
  }
  const auto count = static_cast<int64_t>(rows.empty() ? 0 : rows[0].size());
  if (count == 0) return invalid("no element is non-zero: empty tensors are not supported");
  std::vector<int64_t> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return bind_constant(ctx, node, graph::Constant::from_int64s({static_cast<int64_t>(xs.size()), count}, flat));
}

Status convert_grid_sample(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(ValueId grid, ctx.input(node, 1));
  const auto xs = ctx.value(x).shape, gs = ctx.value(grid).shape;
  if (xs.size() != 4 || gs.size() != 4 || gs[0] != xs[0] || gs[3] != 2)
    return invalid("X must be N x C x H x W and Grid N x H_out x W_out x 2");
  if (!ctx.value(x).dtype.is_float() || ctx.value(grid).dtype != ctx.value(x).dtype)
    return invalid("X and Grid must be of one floating-point type");
  graph::GridSampleAttrs a;
  const std::string mode = attr_string(node, "mode", "bilinear"), padding = attr_string(node, "padding_mode", "zeros");
  if (mode == "nearest")
    a.mode = graph::GridSampleAttrs::Mode::kNearest;
  else if (mode == "bicubic")
    a.mode = graph::GridSampleAttrs::Mode::kBicubic;
  else if (mode != "bilinear")
    return invalid("mode '" + mode + "' is not one of bilinear, nearest, bicubic");
  if (padding == "border")
    a.padding = graph::GridSampleAttrs::Padding::kBorder;
  else if (padding == "reflection")
    a.padding = graph::GridSampleAttrs::Padding::kReflection;
  else if (padding != "zeros")
    return invalid("padding_mode '" + padding + "' is not one of zeros, border, reflection");
  a.align_corners = attr_int(node, "align_corners", 0) != 0;
  return ctx.emit(node, OpKind::kGridSample, a, {x, grid}, {xs[0], xs[1], gs[1], gs[2]}, ctx.value(x).dtype);
}

}  // namespace

void add_data_converters(std::map<std::string, Converter>& table) {
  table["ConstantOfShape"] = convert_constant_of_shape;
  table["Size"] = convert_size;
  table["EyeLike"] = convert_eye_like;
  table["Range"] = convert_range;
  table["Expand"] = convert_expand;
  table["Tile"] = convert_tile;
  table["GatherElements"] = convert_gather_elements;
  table["Trilu"] = convert_trilu;
  table["DepthToSpace"] = convert_depth_space;
  table["SpaceToDepth"] = convert_depth_space;
  table["OneHot"] = convert_one_hot;
  table["CastLike"] = convert_cast_like;
  table["GatherND"] = convert_gather_nd;
  table["ScatterElements"] = convert_scatter;
  table["Scatter"] = convert_scatter;
  table["ScatterND"] = convert_scatter;
  table["Einsum"] = convert_einsum;
  table["TopK"] = convert_top_k;
  table["ReverseSequence"] = convert_reverse_sequence;
  table["Compress"] = convert_compress;
  table["NonZero"] = convert_non_zero;
  table["GridSample"] = convert_grid_sample;
}

}  // namespace tessera::frontend::detail
