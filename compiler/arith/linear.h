// Linear forms of integer index arithmetic: e = sum(coef_i * atom_i) + constant,
// where an atom is any part that is not a sum, a difference or a product with
// an integer constant (a variable, a division, a load, ...).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "compiler/ir/expr.h"

namespace tessera::arith {

/// Walks the affine skeleton of `e` (+, -, and * by an integer constant on
/// either side), left to right. Calls on_atom(atom, coef) for each maximal
/// non-affine part, with `scale` times its coefficient; returns `scale` times
/// the sum of the integer constants. Num is int64_t (exact forms) or double
/// (approximate rates, as the cost model's access analysis uses).
template <typename Num, typename OnAtom>
Num visit_affine(const Expr& e, Num scale, OnAtom&& on_atom) {
  int64_t c;
  if (is_const_int(e, &c)) return scale * static_cast<Num>(c);
  const ExprKind k = e.kind();
  if (k == ExprKind::kAdd || k == ExprKind::kSub) {
    const auto* b = static_cast<const BinaryNode*>(e.get());
    Num constant = visit_affine(b->a, scale, on_atom);
    return constant + visit_affine(b->b, k == ExprKind::kAdd ? scale : -scale, on_atom);
  }
  if (k == ExprKind::kMul) {
    const auto* b = static_cast<const BinaryNode*>(e.get());
    if (is_const_int(b->b, &c)) return visit_affine(b->a, scale * static_cast<Num>(c), on_atom);
    if (is_const_int(b->a, &c)) return visit_affine(b->b, scale * static_cast<Num>(c), on_atom);
  }
  on_atom(e, scale);
  return 0;
}

/// sum(coef * atom) + constant. Atoms are distinct up to structural equality
/// and kept in order of first appearance; a coefficient may cancel to zero.
struct LinearForm {
  /// (atom, coefficient) pairs.
  std::vector<std::pair<Expr, int64_t>> terms;
  /// The constant term.
  int64_t constant = 0;

  /// Adds coef * atom, merging with a structurally equal atom already present.
  void add_term(const Expr& atom, int64_t coef);
};

/// The linear form of an integer expression; k * (x % c) and k * c * (x / c)
/// (a constant c > 1) merge into k * x, floor division's identity.
LinearForm linear_form(const Expr& e);

/// The canonical expression of `form` in type `t`: positive terms summed, then
/// the negative ones subtracted, then the constant added or subtracted.
Expr to_expr(const LinearForm& form, DType t);

/// to_expr(linear_form(e), e.dtype()): the canonical form of an index expression.
Expr canonical(const Expr& e);

}  // namespace tessera::arith
