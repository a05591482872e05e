#include "compiler/ops/winograd.h"

#include "compiler/ir/op.h"
#include "compiler/ops/conv.h"
#include "compiler/ops/op_util.h"

namespace tessera::ops {

using detail::check_rank;
using detail::invalid;
using detail::shape_str;

namespace {

// The transforms of F(2x2, 3x3):
//
//   B^T = | 1  0 -1  0 |   G = | 1    0    0  |   A^T = | 1  1  1  0 |
//         | 0  1  1  0 |       | 1/2  1/2  1/2 |         | 0  1 -1 -1 |
//         | 0 -1  1  0 |       | 1/2 -1/2  1/2 |
//         | 0  1  0 -1 |       | 0    0    1  |
//
// Row e of B^T is d[first(e)] + sign(e) * d[second(e)], so the input
// transform reads four patch elements per output; row i of A^T is
// m[i] + sign(i) * (m[i + 1] + m[i + 2]), so the output transform reads nine.
constexpr double kG[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};

Expr first_of_row(const Expr& e) {
  return if_then_else(e == make_int(3), make_int(1), e);
}
Expr second_of_row(const Expr& e) {
  return if_then_else(e < make_int(2), make_int(2), if_then_else(e == make_int(2), make_int(1), make_int(3)));
}
// a + b where `plus`, else a - b.
Expr add_or_sub(const Expr& plus, const Expr& a, const Expr& b) {
  return if_then_else(plus, a + b, a - b);
}

}  // namespace

std::vector<float> winograd_f2x3_weights(const std::vector<float>& hwio, int64_t c, int64_t k) {
  std::vector<float> u(static_cast<size_t>(16 * c * k));
  const int64_t plane = c * k;
  for (int64_t ck = 0; ck < plane; ++ck) {
    double g[3][3];
    for (int r = 0; r < 3; ++r)
      for (int s = 0; s < 3; ++s) g[r][s] = hwio[static_cast<size_t>((r * 3 + s) * plane + ck)];
    for (int e = 0; e < 4; ++e)
      for (int v = 0; v < 4; ++v) {
        double sum = 0;
        for (int r = 0; r < 3; ++r)
          for (int s = 0; s < 3; ++s) sum += kG[e][r] * g[r][s] * kG[v][s];
        u[static_cast<size_t>((e * 4 + v) * plane + ck)] = static_cast<float>(sum);
      }
  }
  return u;
}

Result<Tensor> conv2d_winograd_nhwc(const Tensor& x, const Tensor& u, Padding2 padding, const std::string& name) {
  const std::string op = "conv2d_winograd_nhwc";
  TESSERA_RETURN_IF_ERROR(check_rank(op, "X", x, 4));
  TESSERA_RETURN_IF_ERROR(check_rank(op, "U", u, 4));
  const int64_t n = x->shape[0], h = x->shape[1], w = x->shape[2], c = x->shape[3], k = u->shape[3];
  if (u->shape[0] != 4 || u->shape[1] != 4 || u->shape[2] != c)
    return invalid(op, "U " + shape_str(u->shape) + " must be 4 x 4 x C x K with C = " + std::to_string(c));
  if (!detail::takes_weights(x, u)) return invalid(op, "X and U types differ");
  if (padding.top < 0 || padding.left < 0 || padding.bottom < 0 || padding.right < 0)
    return invalid(op, "padding must not be negative");
  const int64_t p = h + padding.top + padding.bottom - 2, q = w + padding.left + padding.right - 2;
  if (p < 1 || q < 1) return invalid(op, "the padded input " + shape_str(x->shape) + " is smaller than the 3x3 window");
  // Tiles of 2x2 outputs; the last row or column of tiles may overhang the
  // output, reading zeros below and right of the padded input.
  const int64_t tp = (p + 1) / 2, tq = (q + 1) / 2, tiles = n * tp * tq;
  const int64_t extra_bottom = 2 * tp + 2 - h - padding.top, extra_right = 2 * tq + 2 - w - padding.left;
  Tensor in = x;
  if (padding.top || padding.left || extra_bottom || extra_right) {
    TESSERA_ASSIGN_OR_RETURN(in, pad(x, {0, padding.top, padding.left, 0}, {0, extra_bottom, extra_right, 0}));
  }
  const Expr per_image = make_int(tp * tq), two = make_int(2);

  // V[e, v, t, c] = (B^T d B)[e, v] for the 4x4 patch d of tile t.
  Tensor v = compute(
      {4, 4, tiles, c},
      [&](const Vars& i) {
        const Expr e = i[0], col = i[1], t = i[2];
        const Expr img = t / per_image, y0 = t % per_image / make_int(tq) * two, x0 = t % make_int(tq) * two;
        auto d = [&](const Expr& r, const Expr& s) { return read(in, {img, y0 + r, x0 + s, i[3]}); };
        auto rows = [&](const Expr& s) {  // (B^T d)[e, s]
          return add_or_sub(e == make_int(1), d(first_of_row(e), s), d(second_of_row(e), s));
        };
        return add_or_sub(col == make_int(1), rows(first_of_row(col)), rows(second_of_row(col)));
      },
      name + ".input", OpPattern::kInjective);

  IterVar rc = reduce_axis(c, "rc");
  Tensor m = compute(
      {4, 4, tiles, k},
      [&](const Vars& i) {
        return sum(read(v, {i[0], i[1], i[2], rc->var}) * detail::read_weight(x, u, {i[0], i[1], rc->var, i[3]}), {rc});
      },
      name + ".gemm", OpPattern::kComplex);

  // Y[n, y, x, k] = (A^T M A)[y % 2, x % 2] of tile (y / 2, x / 2).
  return compute(
      {n, p, q, k},
      [&](const Vars& i) {
        const Expr row = i[1] % two, col = i[2] % two;
        const Expr t = i[0] * per_image + i[1] / two * make_int(tq) + i[2] / two;
        auto mm = [&](const Expr& e, const Expr& f) { return read(m, {e, f, t, i[3]}); };
        auto rows = [&](const Expr& f) {  // (A^T M)[row, f]
          return add_or_sub(row == make_int(0), mm(row, f), mm(row + make_int(1), f) + mm(row + make_int(2), f));
        };
        return add_or_sub(col == make_int(0), rows(col), rows(col + make_int(1)) + rows(col + make_int(2)));
      },
      name, OpPattern::kInjective);
}

}  // namespace tessera::ops
