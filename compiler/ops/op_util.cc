#include "compiler/ops/op_util.h"

#include "compiler/ir/op.h"

namespace tessera::ops::detail {

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Status invalid(const std::string& op, const std::string& what) {
  return Status(ErrorCode::kInvalidArgument, op + ": " + what);
}

Status check_rank(const std::string& op, const char* role, const Tensor& t, int rank) {
  if (!t.defined()) return invalid(op, std::string(role) + " is undefined");
  if (t->ndim() != rank)
    return invalid(
        op, std::string(role) + " must have " + std::to_string(rank) + " dimensions, got " + shape_str(t->shape));
  for (int64_t d : t->shape)
    if (d <= 0) return invalid(op, std::string(role) + " has an empty dimension: " + shape_str(t->shape));
  return Status::ok();
}

Status check_float(const std::string& op, const char* role, const Tensor& t) {
  if (!t.defined()) return invalid(op, std::string(role) + " is undefined");
  if (!t->dtype.is_float())
    return invalid(op, std::string(role) + " must be a float tensor, got " + t->dtype.to_string());
  return Status::ok();
}

Result<int> normalize_axis(const std::string& op, int axis, int rank) {
  if (axis < -rank || axis >= rank)
    return invalid(op, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

Result<Window> window_geometry(const std::string& op, int64_t h, int64_t w, int64_t r, int64_t s, Size2 stride,
                               const Padding2& padding, Size2 dilation) {
  if (stride.h <= 0 || stride.w <= 0) return invalid(op, "strides must be positive");
  if (dilation.h <= 0 || dilation.w <= 0) return invalid(op, "dilations must be positive");
  if (padding.top < 0 || padding.left < 0 || padding.bottom < 0 || padding.right < 0)
    return invalid(op, "padding must not be negative");
  const int64_t span_h = dilation.h * (r - 1) + 1, span_w = dilation.w * (s - 1) + 1;
  const int64_t padded_h = h + padding.top + padding.bottom, padded_w = w + padding.left + padding.right;
  if (span_h > padded_h || span_w > padded_w)
    return invalid(op, "the window (" + std::to_string(span_h) + " x " + std::to_string(span_w) +
                           " with dilation) is larger than the padded input (" + std::to_string(padded_h) + " x " +
                           std::to_string(padded_w) + ")");
  return Window{(padded_h - span_h) / stride.h + 1, (padded_w - span_w) / stride.w + 1};
}

Expr constant(DType t, double v) {
  return make_const(t, v);
}

Expr byte_word(const Tensor& bytes, std::vector<Expr> prefix, const Expr& q) {
  prefix.push_back(q * make_int(4));
  Expr word = cast(DType::i32(), read(bytes, prefix));
  for (int r = 1; r < 4; ++r) {
    prefix.back() = q * make_int(4) + make_int(r);
    word = word + cast(DType::i32(), read(bytes, prefix)) * make_const(DType::i32(), double(int64_t{1} << (8 * r)));
  }
  return word;
}

std::vector<Expr> as_exprs(const Vars& vars) {
  std::vector<Expr> out;
  for (const Var& v : vars) out.push_back(v);
  return out;
}

std::vector<Expr> broadcast_indices(const Tensor& t, const Vars& i) {
  const size_t offset = i.size() - t->shape.size();
  std::vector<Expr> idx;
  for (size_t d = 0; d < t->shape.size(); ++d)
    idx.push_back(t->shape[d] == 1 ? make_int(0) : static_cast<const Expr&>(i[offset + d]));
  return idx;
}

bool takes_weights(const Tensor& x, const Tensor& w) {
  return x->dtype == w->dtype || (x->dtype == DType::f32() && w->dtype == DType::f16());
}

Expr read_weight(const Tensor& x, const Tensor& w, const std::vector<Expr>& idx) {
  Expr v = read(w, idx);
  return w->dtype == x->dtype ? v : cast(x->dtype, v);
}

}  // namespace tessera::ops::detail
