#include "compiler/ir/op.h"

#include <cmath>

#include "base/check.h"
#include "base/int_div.h"

namespace tessera {
namespace {

bool is_constant(const Expr& e) {
  return is_const_int(e) || is_const_float(e);
}

// A constant `c` retyped to `t`.
Expr retype_constant(const Expr& c, DType t) {
  double v = 0;
  int64_t i = 0;
  if (is_const_int(c, &i))
    v = static_cast<double>(i);
  else
    is_const_float(c, &v);
  if (t.is_integral() && is_const_int(c, &i)) {
    Expr scalar = make_int(i, t.element_of());
    return t.lanes > 1 ? make_broadcast(scalar, t.lanes) : scalar;
  }
  return make_const(t, v);
}

void reconcile(Expr& a, Expr& b) {
  if (a.dtype() == b.dtype()) return;
  if (is_constant(a) && !is_constant(b)) {
    a = retype_constant(a, b.dtype());
    return;
  }
  if (is_constant(b) && !is_constant(a)) {
    b = retype_constant(b, a.dtype());
    return;
  }
  if (is_constant(a) && is_constant(b)) {
    // Two literals: the float one wins, then the wider one.
    bool a_wins = a.dtype().is_float() || (!b.dtype().is_float() && a.dtype().bits >= b.dtype().bits);
    if (a_wins)
      b = retype_constant(b, a.dtype());
    else
      a = retype_constant(a, b.dtype());
    return;
  }
  if (a.dtype().element_of() == b.dtype().element_of()) {
    if (a.dtype().is_scalar())
      a = make_broadcast(a, b.dtype().lanes);
    else if (b.dtype().is_scalar())
      b = make_broadcast(b, a.dtype().lanes);
    return;
  }
  TESSERA_CHECK(false) << "operands of different types: " << a.dtype().to_string() << " and " << b.dtype().to_string();
}

}  // namespace

bool fold_int_binary(ExprKind kind, int64_t a, int64_t b, int64_t* out) {
  switch (kind) {
    case ExprKind::kAdd: *out = a + b; return true;
    case ExprKind::kSub: *out = a - b; return true;
    case ExprKind::kMul: *out = a * b; return true;
    case ExprKind::kDiv:
      if (b == 0) return false;
      *out = floordiv(a, b);
      return true;
    case ExprKind::kMod:
      if (b == 0) return false;
      *out = floormod(a, b);
      return true;
    case ExprKind::kMin: *out = a < b ? a : b; return true;
    case ExprKind::kMax: *out = a > b ? a : b; return true;
    case ExprKind::kEQ: *out = a == b; return true;
    case ExprKind::kNE: *out = a != b; return true;
    case ExprKind::kLT: *out = a < b; return true;
    case ExprKind::kLE: *out = a <= b; return true;
    case ExprKind::kGT: *out = a > b; return true;
    case ExprKind::kGE: *out = a >= b; return true;
    case ExprKind::kAnd: *out = a && b; return true;
    case ExprKind::kOr: *out = a || b; return true;
    default: return false;
  }
}

Expr binary(ExprKind kind, Expr a, Expr b) {
  reconcile(a, b);
  int64_t x, y, r;
  if (a.dtype().is_scalar() && is_const_int(a, &x) && is_const_int(b, &y) && fold_int_binary(kind, x, y, &r)) {
    DType t = is_comparison(kind) ? DType::boolean() : a.dtype();
    return make_int(r, t);
  }
  return make_binary(kind, std::move(a), std::move(b));
}

Expr operator+(Expr a, Expr b) {
  return binary(ExprKind::kAdd, std::move(a), std::move(b));
}
Expr operator-(Expr a, Expr b) {
  return binary(ExprKind::kSub, std::move(a), std::move(b));
}
Expr operator*(Expr a, Expr b) {
  return binary(ExprKind::kMul, std::move(a), std::move(b));
}
Expr operator/(Expr a, Expr b) {
  return binary(ExprKind::kDiv, std::move(a), std::move(b));
}
Expr operator%(Expr a, Expr b) {
  return binary(ExprKind::kMod, std::move(a), std::move(b));
}
Expr operator-(Expr a) {
  DType t = a.dtype();
  return binary(ExprKind::kSub, make_const(t, 0), std::move(a));
}
Expr operator==(Expr a, Expr b) {
  return binary(ExprKind::kEQ, std::move(a), std::move(b));
}
Expr operator!=(Expr a, Expr b) {
  return binary(ExprKind::kNE, std::move(a), std::move(b));
}
Expr operator<(Expr a, Expr b) {
  return binary(ExprKind::kLT, std::move(a), std::move(b));
}
Expr operator<=(Expr a, Expr b) {
  return binary(ExprKind::kLE, std::move(a), std::move(b));
}
Expr operator>(Expr a, Expr b) {
  return binary(ExprKind::kGT, std::move(a), std::move(b));
}
Expr operator>=(Expr a, Expr b) {
  return binary(ExprKind::kGE, std::move(a), std::move(b));
}
Expr operator&&(Expr a, Expr b) {
  return binary(ExprKind::kAnd, std::move(a), std::move(b));
}
Expr operator||(Expr a, Expr b) {
  return binary(ExprKind::kOr, std::move(a), std::move(b));
}
Expr operator!(Expr a) {
  return make_not(std::move(a));
}
Expr min(Expr a, Expr b) {
  return binary(ExprKind::kMin, std::move(a), std::move(b));
}
Expr max(Expr a, Expr b) {
  return binary(ExprKind::kMax, std::move(a), std::move(b));
}

Expr select(Expr cond, Expr t, Expr f) {
  reconcile(t, f);
  int64_t c;
  if (cond.dtype().is_scalar() && is_const_int(cond, &c)) return c ? t : f;
  if (cond.dtype().lanes != t.dtype().lanes && cond.dtype().is_scalar()) cond = make_broadcast(cond, t.dtype().lanes);
  return make_select(std::move(cond), std::move(t), std::move(f));
}
Expr if_then_else(Expr cond, Expr t, Expr f) {
  return select(std::move(cond), std::move(t), std::move(f));
}

Expr cast(DType t, Expr value) {
  if (value.dtype() == t) return value;
  if (is_constant(value) && t.is_scalar()) return retype_constant(value, t);
  return make_cast(t, std::move(value));
}

Expr exp(Expr x) {
  return make_call(CallOp::kExp, {std::move(x)});
}
Expr log(Expr x) {
  return make_call(CallOp::kLog, {std::move(x)});
}
Expr sqrt(Expr x) {
  return make_call(CallOp::kSqrt, {std::move(x)});
}
Expr tanh(Expr x) {
  return make_call(CallOp::kTanh, {std::move(x)});
}
Expr erf(Expr x) {
  return make_call(CallOp::kErf, {std::move(x)});
}
Expr abs(Expr x) {
  return make_call(CallOp::kAbs, {std::move(x)});
}
Expr floor(Expr x) {
  return make_call(CallOp::kFloor, {std::move(x)});
}
Expr ceil(Expr x) {
  return make_call(CallOp::kCeil, {std::move(x)});
}
Expr round(Expr x) {
  return make_call(CallOp::kRound, {std::move(x)});
}
Expr pow(Expr x, Expr y) {
  reconcile(x, y);
  return make_call(CallOp::kPow, {std::move(x), std::move(y)});
}
Expr sigmoid(Expr x) {
  return make_call(CallOp::kSigmoid, {std::move(x)});
}
Expr dot_u8s8(Expr a, Expr b) {
  return make_call(CallOp::kDotU8S8, {std::move(a), std::move(b)});
}
Expr dot_bf16(Expr a, Expr b) {
  return make_call(CallOp::kDotBf16, {std::move(a), std::move(b)});
}
Expr pack_bf16(Expr lo, Expr hi) {
  return make_call(CallOp::kPackBf16, {std::move(lo), std::move(hi)});
}

}  // namespace tessera
