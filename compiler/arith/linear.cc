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

namespace {

// x when `e` is x % c or x / c (op) for a constant c > 1, with that c.
const Expr* operand_of(const Expr& e, ExprKind op, int64_t* c) {
  if (e.kind() != op) return nullptr;
  const auto* b = static_cast<const BinaryNode*>(e.get());
  return is_const_int(b->b, c) && *c > 1 ? &b->a : nullptr;
}

// k * (x % c) + k * c * (x / c) is k * x (floor division and modulo): a
// split or fused loop's index put back together.
void merge_quotient_and_remainder(LinearForm& form) {
  for (size_t i = 0; i < form.terms.size(); ++i) {
    int64_t c = 0;
    const Expr* x = operand_of(form.terms[i].first, ExprKind::kMod, &c);
    if (!x) continue;
    const int64_t k = form.terms[i].second;
    for (size_t j = 0; j < form.terms.size(); ++j) {
      int64_t d = 0;
      const Expr* y = operand_of(form.terms[j].first, ExprKind::kDiv, &d);
      if (!y || d != c || form.terms[j].second != k * c || !structural_equal(*x, *y)) continue;
      const Expr whole = *x;
      form.terms[i].second = 0;
      form.terms[j].second = 0;
      LinearForm inner = linear_form(whole);
      for (const auto& [atom, coef] : inner.terms) form.add_term(atom, coef * k);
      form.constant += inner.constant * k;
      break;
    }
  }
  std::erase_if(form.terms, [](const auto& t) { return t.second == 0; });
}

}  // namespace

LinearForm linear_form(const Expr& e) {
  LinearForm form;
  form.constant = visit_affine<int64_t>(e, 1, [&form](const Expr& atom, int64_t coef) { form.add_term(atom, coef); });
  merge_quotient_and_remainder(form);
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
    result =
        result.defined() ? make_binary(ExprKind::kSub, result, neg) : make_binary(ExprKind::kSub, make_int(0, t), neg);
  }
  if (!result.defined()) return make_int(form.constant, t);
  if (form.constant > 0) result = make_binary(ExprKind::kAdd, result, make_int(form.constant, t));
  if (form.constant < 0) result = make_binary(ExprKind::kSub, result, make_int(-form.constant, t));
  return result;
}

Expr canonical(const Expr& e) {
  return to_expr(linear_form(e), e.dtype());
}

}  // namespace tessera::arith
