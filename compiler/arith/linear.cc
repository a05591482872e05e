#include "compiler/arith/linear.h"

#include "compiler/ir/util.h"

namespace tessera::arith {

void LinearForm::add_term(const Expr& atom, int64_t coef) {
  if (coef == 0) return;
  for (auto& t : terms) {
    if (t.first.same_as(atom) || structural_equal(t.first, atom)) {
      t.second += coef;
      return;
    }
  }
  terms.emplace_back(atom, coef);
}

LinearForm linear_form(const Expr& e) {
  LinearForm form;
  form.constant = visit_affine<int64_t>(
      e, 1, [&form](const Expr& atom, int64_t coef) { form.add_term(atom, coef); });
  return form;
}

Expr to_expr(const LinearForm& form, DType t) {
  Expr pos, neg;
  for (const auto& [atom, coef] : form.terms) {
    if (coef == 0) continue;
    int64_t mag = coef > 0 ? coef : -coef;
    Expr term = mag == 1 ? atom : make_binary(ExprKind::kMul, atom, make_int(mag, t));
    Expr& side = coef > 0 ? pos : neg;
    side = side.defined() ? make_binary(ExprKind::kAdd, side, term) : term;
  }
  Expr result = pos;
  if (neg.defined()) {
    result = result.defined() ? make_binary(ExprKind::kSub, result, neg)
                              : make_binary(ExprKind::kSub, make_int(0, t), neg);
  }
  if (!result.defined()) return make_int(form.constant, t);
  if (form.constant > 0) result = make_binary(ExprKind::kAdd, result, make_int(form.constant, t));
  if (form.constant < 0) result = make_binary(ExprKind::kSub, result, make_int(-form.constant, t));
  return result;
}

Expr canonical(const Expr& e) { return to_expr(linear_form(e), e.dtype()); }

}  // namespace tessera::arith
