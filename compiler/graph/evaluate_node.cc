// Constant evaluation of the operators that constant folding handles. It works
// on doubles (exact for every int64 a shape holds, and for float32), then
// converts to the output's type.
#include <cmath>
#include <functional>

#include "compiler/graph/passes.h"
#include "compiler/ops/quantize.h"

namespace tessera::graph {

using ops::BinaryFn;

namespace {

Status cannot(const Node& n, const std::string& why) {
  return Status(ErrorCode::kInvalidArgument,
                std::string("cannot fold ") + op_kind_name(n.kind) + " node " + n.name + ": " + why);
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * shape[d + 1];
  return s;
}

// The multi-index of flat position i in `shape`.
std::vector<int64_t> unravel(int64_t i, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    if (shape[d]) i /= shape[d];
  }
  return idx;
}

// Flat position in `shape` of the NumPy-broadcast image of output index `out_idx`.
int64_t broadcast_offset(const std::vector<int64_t>& out_idx, const std::vector<int64_t>& shape) {
  const size_t offset = out_idx.size() - shape.size();
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + (shape[d] == 1 ? 0 : out_idx[offset + d]);
  return flat;
}

// A one-operand elementwise node at x: its function as ops defines it, or
// a cast's value (before truncation to an integer type).
Result<double> apply_unary(const Node& n, double x) {
  if (n.kind == OpKind::kCast) return x;
  const std::optional<NodeScalarFn> f = scalar_fn(n);
  if (!f || f->is_binary) return cannot(n, "not an elementwise operator");
  return ops::unary_reference(f->unary, x, f->params);
}

// What every folding helper reads: the node, its single output and its
// (all constant) inputs. Helpers fill `result`, one double per output element.
struct Fold {
  const Node& n;
  const Value& out;
  const std::vector<const Constant*>& in;
  int64_t total;
};

// Add, Sub, ..., Min and the generic binary op, with NumPy broadcasting:
// the function as ops defines it (scalar_fn).
void fold_binary(const Fold& f, const BinaryFn fn, std::vector<double>& result) {
  const Constant& a = *f.in.at(0);
  const Constant& b = *f.in.at(1);
  for (int64_t i = 0; i < f.total; ++i) {
    const auto idx = unravel(i, f.out.shape);
    const double x = a.at(broadcast_offset(idx, a.shape)), y = b.at(broadcast_offset(idx, b.shape));
    result[i] = ops::binary_reference(fn, x, y, a.dtype);
  }
}

void fold_where_expand(const Fold& f, std::vector<double>& result) {
  for (int64_t i = 0; i < f.total; ++i) {
    const auto idx = unravel(i, f.out.shape);
    auto at = [&](size_t k) { return f.in.at(k)->at(broadcast_offset(idx, f.in.at(k)->shape)); };
    result[i] = f.n.kind == OpKind::kExpand ? at(0) : at(0) != 0.0 ? at(1) : at(2);
  }
}

// Quantize and dequantize as their kernels compute (ops/quantize.h).
void fold_quantize(const Fold& f, std::vector<double>& result) {
  const DType t = f.out.dtype;
  for (int64_t i = 0; i < f.total; ++i) {
    const auto idx = unravel(i, f.out.shape);
    auto at = [&](size_t k) { return f.in.at(k)->at(broadcast_offset(idx, f.in.at(k)->shape)); };
    result[i] = f.n.kind == OpKind::kQuantize ? ops::quantize_reference(at(0), at(1), at(2), t)
                                              : ops::dequantize_reference(at(0), at(1), at(2));
  }
}

void fold_tile(const Fold& f, std::vector<double>& result) {
  const Constant& x = *f.in.at(0);
  for (int64_t i = 0; i < f.total; ++i) {
    const auto idx = unravel(i, f.out.shape);
    int64_t flat = 0;
    for (size_t d = 0; d < idx.size(); ++d) flat = flat * x.shape[d] + idx[d] % x.shape[d];
    result[i] = x.at(flat);
  }
}

// An index read from a constant may be out of range: a user error.
Status fold_gather_elements(const Fold& f, std::vector<double>& result) {
  const auto axis = static_cast<size_t>(std::get<AxisAttrs>(f.n.attrs).axis);
  const Constant& data = *f.in.at(0);
  const Constant& indices = *f.in.at(1);
  for (int64_t i = 0; i < f.total; ++i) {
    auto idx = unravel(i, f.out.shape);
    auto j = static_cast<int64_t>(indices.at(i));
    if (j < 0) j += data.shape[axis];
    if (j < 0 || j >= data.shape[axis]) return cannot(f.n, "index " + std::to_string(j) + " is out of range");
    idx[axis] = j;
    int64_t flat = 0;
    for (size_t d = 0; d < idx.size(); ++d) flat = flat * data.shape[d] + idx[d];
    result[i] = data.at(flat);
  }
  return Status::ok();
}

void fold_transpose(const Fold& f, std::vector<double>& result) {
  const auto& perm = std::get<PermAttrs>(f.n.attrs).perm;
  const Constant& x = *f.in.at(0);
  const auto in_strides = strides_of(x.shape);
  for (int64_t i = 0; i < f.total; ++i) {
    const auto idx = unravel(i, f.out.shape);
    int64_t flat = 0;
    for (size_t d = 0; d < perm.size(); ++d) flat += idx[d] * in_strides[perm[d]];
    result[i] = x.at(flat);
  }
}

void fold_concat(const Fold& f, std::vector<double>& result) {
  const auto axis = static_cast<size_t>(std::get<AxisAttrs>(f.n.attrs).axis);
  for (int64_t i = 0; i < f.total; ++i) {
    auto idx = unravel(i, f.out.shape);
    for (const Constant* c : f.in) {
      if (idx[axis] < c->shape[axis]) {
        int64_t flat = 0;
        for (size_t d = 0; d < idx.size(); ++d) flat = flat * c->shape[d] + idx[d];
        result[i] = c->at(flat);
        break;
      }
      idx[axis] -= c->shape[axis];
    }
  }
}

// Both map each output index to one source index per dimension; a pad's
// source may fall outside the input (then the element is the pad value).
void fold_slice_pad(const Fold& f, std::vector<double>& result) {
  const Node& n = f.n;
  const Constant& x = *f.in.at(0);
  const auto in_strides = strides_of(x.shape);
  for (int64_t i = 0; i < f.total; ++i) {
    const auto idx = unravel(i, f.out.shape);
    int64_t flat = 0;
    bool inside = true;
    for (size_t d = 0; d < idx.size(); ++d) {
      int64_t k = 0;
      if (n.kind == OpKind::kSlice) {
        const auto& a = std::get<SliceAttrs>(n.attrs);
        k = a.starts[d] + idx[d] * a.steps[d];
      } else {
        const auto& a = std::get<PadAttrs>(n.attrs);
        k = pad_source_index(a.mode, idx[d] - a.before[d], x.shape[d]);
        inside = inside && k >= 0 && k < x.shape[d];
      }
      flat += k * in_strides[d];
    }
    result[i] = inside ? x.at(flat) : std::get<PadAttrs>(n.attrs).value;
  }
}

// An index read from a constant may be out of range: a user error.
Status fold_gather(const Fold& f, std::vector<double>& result) {
  const auto axis = static_cast<size_t>(std::get<AxisAttrs>(f.n.attrs).axis);
  const Constant& data = *f.in.at(0);
  const Constant& indices = *f.in.at(1);
  const size_t q = indices.shape.size();
  for (int64_t i = 0; i < f.total; ++i) {
    const auto idx = unravel(i, f.out.shape);
    int64_t at = 0;
    for (size_t d = 0; d < q; ++d) at = at * indices.shape[d] + idx[axis + d];
    auto j = static_cast<int64_t>(indices.at(at));
    if (j < 0) j += data.shape[axis];
    if (j < 0 || j >= data.shape[axis]) return cannot(f.n, "index " + std::to_string(j) + " is out of range");
    int64_t flat = 0;
    for (size_t d = 0; d < data.shape.size(); ++d) {
      const int64_t k = d < axis ? idx[d] : d == axis ? j : idx[d + q - 1];
      flat = flat * data.shape[d] + k;
    }
    result[i] = data.at(flat);
  }
  return Status::ok();
}

// One-input elementwise operators; a cast to an integer type truncates.
Status fold_elementwise(const Fold& f, std::vector<double>& result) {
  const Constant& x = *f.in.at(0);
  for (int64_t i = 0; i < f.total; ++i) {
    TESSERA_ASSIGN_OR_RETURN(result[i], apply_unary(f.n, x.at(i)));
    if (f.n.kind == OpKind::kCast && f.out.dtype.is_integral() && !f.out.dtype.is_bool())
      result[i] = std::trunc(result[i]);
  }
  return Status::ok();
}

}  // namespace

bool is_foldable(OpKind kind) {
  return op_traits(kind).foldable;
}

Result<Constant> evaluate_node(const Graph& g, const Node& n, const std::vector<const Constant*>& inputs) {
  if (n.outputs.size() != 1) return cannot(n, "more than one output");
  const Value& out = g.value(n.outputs[0]);
  const int64_t total = shape_size(out.shape);
  std::vector<double> result(static_cast<size_t>(total));
  if (n.kind == OpKind::kShape) {
    const auto& in_shape = g.value(n.inputs.at(0)).shape;
    return Constant::from_int64s(out.shape, in_shape);
  }
  if (!is_foldable(n.kind)) return cannot(n, "not a foldable operator");
  for (const Constant* c : inputs)
    if (c == nullptr) return cannot(n, "an input is not constant");
  const Fold f{n, out, inputs, total};
  if (const std::optional<NodeScalarFn> fn = scalar_fn(n); fn && fn->is_binary) {
    fold_binary(f, fn->binary, result);
    return Constant::from_doubles(out.dtype, out.shape, result);
  }
  switch (n.kind) {
    case OpKind::kWhere:
    case OpKind::kExpand: fold_where_expand(f, result); break;
    case OpKind::kTile: fold_tile(f, result); break;
    case OpKind::kQuantize:
    case OpKind::kDequantize: fold_quantize(f, result); break;
    case OpKind::kGatherElements: TESSERA_RETURN_IF_ERROR(fold_gather_elements(f, result)); break;
    case OpKind::kReshape: result = inputs.at(0)->to_doubles(); break;
    case OpKind::kTranspose: fold_transpose(f, result); break;
    case OpKind::kConcat: fold_concat(f, result); break;
    case OpKind::kSlice:
    case OpKind::kPad: fold_slice_pad(f, result); break;
    case OpKind::kGather: TESSERA_RETURN_IF_ERROR(fold_gather(f, result)); break;
    default: TESSERA_RETURN_IF_ERROR(fold_elementwise(f, result));
  }
  return Constant::from_doubles(out.dtype, out.shape, result);
}

}  // namespace tessera::graph
