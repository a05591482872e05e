#include "compiler/ops/linalg.h"

#include "compiler/ir/op.h"
#include "compiler/ops/op_util.h"

namespace tessera::ops {

using detail::check_float;
using detail::check_rank;
using detail::invalid;
using detail::read_weight;
using detail::shape_str;

namespace {

Status check_same_dtype(const std::string& op, const Tensor& a, const Tensor& b) {
  if (a->dtype != b->dtype)
    return invalid(op, "operand types differ: " + a->dtype.to_string() + " and " + b->dtype.to_string());
  return Status::ok();
}

// Float16 weights of a float32 product (detail::takes_weights) pass.
Status check_weight_dtype(const std::string& op, const Tensor& a, const Tensor& w) {
  return detail::takes_weights(a, w) ? Status::ok() : check_same_dtype(op, a, w);
}

}  // namespace

Result<Tensor> matmul(const Tensor& a, const Tensor& b, const std::string& name) {
  TESSERA_RETURN_IF_ERROR(check_rank("matmul", "A", a, 2));
  TESSERA_RETURN_IF_ERROR(check_rank("matmul", "B", b, 2));
  TESSERA_RETURN_IF_ERROR(check_weight_dtype("matmul", a, b));
  if (a->shape[1] != b->shape[0])
    return invalid("matmul", "A " + shape_str(a->shape) + " and B " + shape_str(b->shape) +
                                 " disagree on K (A is M x K, B is K x N)");
  IterVar k = reduce_axis(a->shape[1], "k");
  return compute(
      {a->shape[0], b->shape[1]},
      [&](const Vars& i) {
        return sum(read(a, {i[0], k->var}) * read_weight(a, b, {k->var, i[1]}), {k});
      },
      name, OpPattern::kComplex);
}

namespace {

// Operand `t` at view index `idx`: through the view's linear map when it has one.
Expr read_view(const Tensor& t, const OperandView& view, const std::vector<Expr>& idx) {
  if (view.map.empty()) return read(t, idx);
  std::vector<Expr> src;
  for (const std::vector<int64_t>& row : view.map) {
    Expr e;
    for (size_t d = 0; d < row.size(); ++d) {
      if (row[d] == 0) continue;
      Expr term = row[d] == 1 ? idx[d] : idx[d] * make_int(row[d]);
      e = e.defined() ? e + term : term;
    }
    src.push_back(e.defined() ? e : make_int(0));
  }
  return read(t, src);
}

}  // namespace

Result<Tensor> matmul_views(const Tensor& a, const OperandView& va, const Tensor& b, const OperandView& vb,
                            const std::vector<int64_t>& out_shape, const std::string& name) {
  const std::vector<int64_t>& a_shape = va.map.empty() ? a->shape : va.shape;
  const std::vector<int64_t>& b_shape = vb.map.empty() ? b->shape : vb.shape;
  if (a_shape.size() < 2 || b_shape.size() < 2) return invalid(name, "1-D operands are not supported");
  TESSERA_RETURN_IF_ERROR(check_weight_dtype(name, a, b));
  if (a_shape.back() != b_shape[b_shape.size() - 2])
    return invalid(name, "A " + shape_str(a_shape) + " and B " + shape_str(b_shape) + " disagree on K");
  const int rank = static_cast<int>(out_shape.size());
  IterVar k = reduce_axis(a_shape.back(), "k");
  auto operand = [&](const Tensor& t, const OperandView& view, const std::vector<int64_t>& shape, const Vars& i,
                     Expr row, Expr col) {
    std::vector<Expr> idx;
    const int offset = rank - static_cast<int>(shape.size());
    for (size_t d = 0; d + 2 < shape.size(); ++d)
      idx.push_back(shape[d] == 1 ? make_int(0) : static_cast<const Expr&>(i[offset + static_cast<int>(d)]));
    idx.push_back(std::move(row));
    idx.push_back(std::move(col));
    return read_view(t, view, idx);
  };
  return compute(
      out_shape,
      [&](const Vars& i) {
        Expr w = operand(b, vb, b_shape, i, k->var, i[rank - 1]);
        if (w.dtype() != a->dtype) w = cast(a->dtype, w);
        return sum(operand(a, va, a_shape, i, i[rank - 2], k->var) * w, {k});
      },
      name, OpPattern::kComplex);
}

Result<Tensor> conv1d_windows(const Tensor& x, const Tensor& w, int64_t stride, const std::string& name) {
  TESSERA_RETURN_IF_ERROR(check_rank(name, "X", x, 4));
  TESSERA_RETURN_IF_ERROR(check_rank(name, "W", w, 2));
  if (x->shape[1] != 1 || x->shape[3] != 1 || stride < 1)
    return invalid(name,
                   "X must be N x 1 x W x 1 (one input channel) and the stride positive, not " + shape_str(x->shape));
  const int64_t n = x->shape[0], width = x->shape[2], taps = w->shape[0], k = w->shape[1];
  if (taps > width) return invalid(name, "the kernel (" + std::to_string(taps) + " taps) is longer than the input");
  const int64_t m = (width - taps) / stride + 1;
  const OperandView windows{{n, 1, m, taps}, {{1, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, stride, 1}, {0, 0, 0, 0}}};
  return matmul_views(x, windows, w, {}, {n, 1, m, k}, name);
}

Result<Tensor> matmul_u8s8(const Tensor& a, const Tensor& b, const std::string& name) {
  const bool bytes = a.defined() && a->dtype == DType::u8();
  if (!bytes) TESSERA_RETURN_IF_ERROR(check_rank("matmul_u8s8", "A", a, 2));
  TESSERA_RETURN_IF_ERROR(check_rank("matmul_u8s8", "B", b, 2));
  if (bytes && a->ndim() < 2)
    return invalid("matmul_u8s8", "A of bytes needs rank 2 or more, not " + shape_str(a->shape));
  if ((!bytes && a->dtype != DType::i32()) || b->dtype != DType::i32())
    return invalid("matmul_u8s8", "A is uint8 bytes or int32 words and B int32 words, not " + a->dtype.to_string() +
                                      " and " + b->dtype.to_string());
  const int64_t words = bytes ? a->shape.back() / 4 : a->shape[1];
  if ((bytes && a->shape.back() % 4 != 0) || words != b->shape[0])
    return invalid("matmul_u8s8", "A " + shape_str(a->shape) + " and B " + shape_str(b->shape) +
                                      " disagree on K (B holds K/4 words of four bytes)");
  std::vector<int64_t> shape(a->shape.begin(), a->shape.end() - 1);
  shape.push_back(b->shape[1]);
  const size_t rank = shape.size();
  IterVar q = reduce_axis(words, "k");
  auto word = [&](const Vars& i) {
    if (!bytes) return read(a, {i[0], q->var});
    std::vector<Expr> row = detail::as_exprs(i);
    row.pop_back();
    return detail::byte_word(a, std::move(row), q->var);
  };
  return compute(
      shape,
      [&](const Vars& i) {
        return sum(dot_u8s8(word(i), read(b, {q->var, i[rank - 1]})), {q});
      },
      name, OpPattern::kComplex);
}

Result<Tensor> matmul_u8s8_pairs(const Tensor& a, const Tensor& b, const std::string& name) {
  if (!a.defined() || a->dtype != DType::u8() || a->ndim() < 2)
    return invalid("matmul_u8s8_pairs", "A must be uint8 bytes of rank 2 or more");
  TESSERA_RETURN_IF_ERROR(check_rank("matmul_u8s8_pairs", "B", b, 2));
  if (b->dtype != DType::i32()) return invalid("matmul_u8s8_pairs", "B is int32 words, not " + b->dtype.to_string());
  const size_t rank = a->shape.size();
  const int64_t m = a->shape[rank - 2], k = a->shape.back(), n = b->shape[1];
  if (k % 8 != 0 || k / 4 != b->shape[0] || m % 2 != 0 || n % 2 != 0)
    return invalid("matmul_u8s8_pairs", "A " + shape_str(a->shape) + " and B " + shape_str(b->shape) +
                                            " must have an even M and N, K a multiple of 8 and B K/4 words");
  // T[..., m2, n2, r, c] = C[..., 2 m2 + r, 2 n2 + c], the sum over eight
  // bytes of K at a time: two words of row 2 m2 + r of A by two of column
  // 2 n2 + c of B.
  std::vector<int64_t> tiles(a->shape.begin(), a->shape.end() - 2);
  tiles.insert(tiles.end(), {m / 2, n / 2, 2, 2});
  IterVar p = reduce_axis(k / 8, "k");
  const Expr two = make_int(2);
  Tensor t = compute(
      tiles,
      [&](const Vars& i) {
        std::vector<Expr> row = detail::as_exprs(i);
        row.resize(rank - 2);
        row.push_back(i[rank - 2] * two + i[rank]);
        const Expr column = i[rank - 1] * two + i[rank + 1];
        auto product = [&](int w) {
          const Expr q = p->var * two + make_int(w);
          return dot_u8s8(detail::byte_word(a, row, q), read(b, {q, column}));
        };
        return sum(product(0) + product(1), {p});
      },
      name + ".tiles", OpPattern::kComplex);
  std::vector<int64_t> shape(a->shape.begin(), a->shape.end() - 1);
  shape.push_back(n);
  return compute(
      shape,
      [&](const Vars& i) {
        std::vector<Expr> at = detail::as_exprs(i);
        at.resize(rank - 2);
        at.insert(at.end(), {i[rank - 2] / two, i[rank - 1] / two, i[rank - 2] % two, i[rank - 1] % two});
        return read(t, at);
      },
      name, OpPattern::kInjective);
}

Result<Tensor> matmul_bf16(const Tensor& a, const Tensor& b, const std::string& name) {
  if (!a.defined() || a->ndim() < 2) return invalid("matmul_bf16", "A needs rank 2 or more");
  TESSERA_RETURN_IF_ERROR(check_rank("matmul_bf16", "B", b, 3));
  if ((a->dtype != DType::bf16() && a->dtype != DType::f32()) || b->dtype != DType::bf16())
    return invalid("matmul_bf16", "A is bfloat16 or float32 and B bfloat16, not " + a->dtype.to_string() + " and " +
                                      b->dtype.to_string());
  const int64_t k = a->shape.back();
  if (k % 2 != 0 || k != 2 * b->shape[0] || b->shape[2] != 2)
    return invalid("matmul_bf16", "A " + shape_str(a->shape) + " and B " + shape_str(b->shape) +
                                      " disagree (A is [..., M, K], K even, and B K/2 x N x 2)");
  std::vector<int64_t> shape(a->shape.begin(), a->shape.end() - 1);
  shape.push_back(b->shape[1]);
  const size_t rank = shape.size();
  IterVar q = reduce_axis(b->shape[0], "k");
  return compute(
      shape,
      [&](const Vars& i) {
        std::vector<Expr> at = detail::as_exprs(i);
        at.back() = q->var * make_int(2);
        Expr first = read(a, at);
        at.back() = at.back() + make_int(1);
        Expr x = pack_bf16(first, read(a, at));
        Expr w = pack_bf16(read(b, {q->var, i[rank - 1], make_int(0)}), read(b, {q->var, i[rank - 1], make_int(1)}));
        return sum(dot_bf16(x, w), {q});
      },
      name, OpPattern::kComplex);
}

Result<Tensor> dense(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, bool relu,
                     const std::string& name) {
  TESSERA_RETURN_IF_ERROR(check_rank("dense", "X", x, 2));
  TESSERA_RETURN_IF_ERROR(check_rank("dense", "W", w, 2));
  TESSERA_RETURN_IF_ERROR(check_weight_dtype("dense", x, w));
  if (x->shape[1] != w->shape[1])
    return invalid("dense", "X " + shape_str(x->shape) + " and W " + shape_str(w->shape) +
                                " disagree on K (X is M x K, W is N x K)");
  const int64_t n = w->shape[0];
  if (bias) {
    TESSERA_RETURN_IF_ERROR(check_rank("dense", "bias", *bias, 1));
    TESSERA_RETURN_IF_ERROR(check_same_dtype("dense", x, *bias));
    if ((*bias)->shape[0] != n)
      return invalid("dense",
                     "bias " + shape_str((*bias)->shape) + " must have N = " + std::to_string(n) + " elements");
  }
  if (relu) TESSERA_RETURN_IF_ERROR(check_float("dense", "X", x));
  const bool epilogue = bias.has_value() || relu;
  IterVar k = reduce_axis(x->shape[1], "k");
  Tensor product = compute(
      {x->shape[0], n},
      [&](const Vars& i) {
        return sum(read(x, {i[0], k->var}) * read_weight(x, w, {i[1], k->var}), {k});
      },
      epilogue ? name + ".matmul" : name, OpPattern::kComplex);
  if (!epilogue) return product;
  return compute(
      {x->shape[0], n},
      [&](const Vars& i) {
        Expr v = read(product, {i[0], i[1]});
        if (bias) v = v + read(*bias, {i[1]});
        if (relu) v = max(v, detail::constant(v.dtype(), 0.0));
        return v;
      },
      name, bias ? OpPattern::kBroadcast : OpPattern::kElementwise);
}

Result<Tensor> batch_matmul(const Tensor& a, const Tensor& b, const std::string& name) {
  TESSERA_RETURN_IF_ERROR(check_rank("batch_matmul", "A", a, 3));
  TESSERA_RETURN_IF_ERROR(check_rank("batch_matmul", "B", b, 3));
  TESSERA_RETURN_IF_ERROR(check_same_dtype("batch_matmul", a, b));
  if (a->shape[0] != b->shape[0] || a->shape[2] != b->shape[1])
    return invalid("batch_matmul", "A " + shape_str(a->shape) + " and B " + shape_str(b->shape) +
                                       " do not match (A is batch x M x K, B is batch x K x N)");
  IterVar k = reduce_axis(a->shape[2], "k");
  return compute(
      {a->shape[0], a->shape[1], b->shape[2]},
      [&](const Vars& i) {
        return sum(read(a, {i[0], i[1], k->var}) * read(b, {i[0], k->var, i[2]}), {k});
      },
      name, OpPattern::kComplex);
}

}  // namespace tessera::ops
