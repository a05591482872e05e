#include "compiler/ops/elementwise.h"

#include <algorithm>
#include <cmath>

#include "compiler/ir/op.h"
#include "compiler/ops/op_util.h"

namespace tessera::ops {

using detail::broadcast_indices;
using detail::constant;
using detail::invalid;
using detail::shape_str;

namespace {

Status check_defined(const std::string& op, const Tensor& t) {
  if (!t.defined()) return invalid(op, "input is undefined");
  for (int64_t d : t->shape)
    if (d <= 0) return invalid(op, "input has an empty dimension: " + shape_str(t->shape));
  return Status::ok();
}

// a / b rounded toward zero from the IR's floor quotient: one more where
// the division was inexact and the signs differ (-7 / 2: -4 + 1).
Expr truncating_quotient(Expr a, Expr b) {
  const Expr zero = constant(a.dtype(), 0.0);
  return select(a % b != zero && ((a < zero) != (b < zero)), a / b + constant(a.dtype(), 1.0), a / b);
}

}  // namespace

Result<std::vector<int64_t>> broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t d = 0; d < rank; ++d) {
    // Dimension d counted from the end.
    const int64_t x = d < a.size() ? a[a.size() - 1 - d] : 1, y = d < b.size() ? b[b.size() - 1 - d] : 1;
    if (x != y && x != 1 && y != 1)
      return Status(ErrorCode::kInvalidArgument,
                    "shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    out[rank - 1 - d] = x == 1 ? y : x;
  }
  return out;
}

Result<Tensor> add(const Tensor& a, const Tensor& b, const std::string& name) {
  return binary(BinaryFn::kAdd, a, b, name);
}
Result<Tensor> sub(const Tensor& a, const Tensor& b, const std::string& name) {
  return binary(BinaryFn::kSub, a, b, name);
}
Result<Tensor> mul(const Tensor& a, const Tensor& b, const std::string& name) {
  return binary(BinaryFn::kMul, a, b, name);
}
Result<Tensor> div(const Tensor& a, const Tensor& b, const std::string& name) {
  return binary(BinaryFn::kDiv, a, b, name);
}
Result<Tensor> maximum(const Tensor& a, const Tensor& b, const std::string& name) {
  return binary(BinaryFn::kMax, a, b, name);
}
Result<Tensor> minimum(const Tensor& a, const Tensor& b, const std::string& name) {
  return binary(BinaryFn::kMin, a, b, name);
}
Result<Tensor> power(const Tensor& a, const Tensor& b, const std::string& name) {
  return binary(BinaryFn::kPow, a, b, name);
}

Result<Tensor> relu(const Tensor& x, const std::string& name) {
  return unary(UnaryFn::kRelu, x, {}, name);
}
Result<Tensor> sigmoid(const Tensor& x, const std::string& name) {
  return unary(UnaryFn::kSigmoid, x, {}, name);
}
Result<Tensor> tanh(const Tensor& x, const std::string& name) {
  return unary(UnaryFn::kTanh, x, {}, name);
}
Result<Tensor> exp(const Tensor& x, const std::string& name) {
  return unary(UnaryFn::kExp, x, {}, name);
}
Result<Tensor> hardswish(const Tensor& x, const std::string& name) {
  return unary(UnaryFn::kHardSwish, x, {}, name);
}
Result<Tensor> clip(const Tensor& x, double lo, double hi, const std::string& name) {
  if (!(lo <= hi)) return invalid("clip", "lo " + std::to_string(lo) + " must not exceed hi " + std::to_string(hi));
  return unary(UnaryFn::kClip, x, {.alpha = lo, .beta = hi}, name);
}
Result<Tensor> leaky_relu(const Tensor& x, double alpha, const std::string& name) {
  return unary(UnaryFn::kLeakyRelu, x, {.alpha = alpha}, name);
}
Result<Tensor> gelu(const Tensor& x, const std::string& name) {
  return unary(UnaryFn::kGelu, x, {}, name);
}

}  // namespace tessera::ops

// ---------------------------------------------------------------------------
// Unary and binary function families, and where

namespace tessera::ops {

namespace {

Expr call1(CallOp op, Expr v) {
  return make_call(op, {std::move(v)});
}

// log(1 + e^x) without overflow: max(x, 0) + log(1 + e^-|x|).
Expr softplus_expr(Expr v) {
  const DType t = v.dtype();
  return max(v, constant(t, 0.0)) + tessera::log(constant(t, 1.0) + tessera::exp(constant(t, 0.0) - tessera::abs(v)));
}

// erf in float32 as a rational function of x on [-4, 4] (beyond, erf is
// +-1 to float precision): Eigen's and XLA's fast erf, within a few ulp.
// Plain arithmetic vectorizes; a libm erff call runs lane by lane, and made
// an erf-form GELU cost more than the matmul before it.
Expr erf_f32(Expr v) {
  const DType t = v.dtype();
  const Expr x = min(max(v, constant(t, -4.0)), constant(t, 4.0));
  const Expr x2 = x * x;
  constexpr double kAlpha[] = {-2.72614225801306e-10, 2.77068142495902e-08,  -2.10102402082508e-06,
                               -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                               -1.60960333262415e-02};
  constexpr double kBeta[] = {-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                              -7.37332916720468e-03, -1.42647390514189e-02};
  Expr p = constant(t, kAlpha[0]);
  for (size_t i = 1; i < std::size(kAlpha); ++i) p = p * x2 + constant(t, kAlpha[i]);
  Expr q = constant(t, kBeta[0]);
  for (size_t i = 1; i < std::size(kBeta); ++i) q = q * x2 + constant(t, kBeta[i]);
  return x * p / q;
}

Expr unary_expr(UnaryFn fn, Expr v, const UnaryParams& p) {
  const DType t = v.dtype();
  auto c = [&](double x) { return constant(t, x); };
  switch (fn) {
    case UnaryFn::kNeg: return c(0.0) - v;
    case UnaryFn::kAbs: return tessera::abs(v);
    case UnaryFn::kSign: return select(v > c(0.0), c(1.0), select(v < c(0.0), c(-1.0), c(0.0)));
    case UnaryFn::kReciprocal: return c(1.0) / v;
    case UnaryFn::kSqrt: return tessera::sqrt(v);
    case UnaryFn::kExp: return tessera::exp(v);
    case UnaryFn::kLog: return tessera::log(v);
    case UnaryFn::kFloor: return tessera::floor(v);
    case UnaryFn::kCeil: return tessera::ceil(v);
    case UnaryFn::kRound: return tessera::round(v);
    case UnaryFn::kSin: return call1(CallOp::kSin, v);
    case UnaryFn::kCos: return call1(CallOp::kCos, v);
    case UnaryFn::kTan: return call1(CallOp::kTan, v);
    case UnaryFn::kAsin: return call1(CallOp::kAsin, v);
    case UnaryFn::kAcos: return call1(CallOp::kAcos, v);
    case UnaryFn::kAtan: return call1(CallOp::kAtan, v);
    case UnaryFn::kSinh: return call1(CallOp::kSinh, v);
    case UnaryFn::kCosh: return call1(CallOp::kCosh, v);
    case UnaryFn::kAsinh: return call1(CallOp::kAsinh, v);
    case UnaryFn::kAcosh: return call1(CallOp::kAcosh, v);
    case UnaryFn::kAtanh: return call1(CallOp::kAtanh, v);
    case UnaryFn::kNot: return !v;
    case UnaryFn::kIsNaN: return v != v;
    case UnaryFn::kIsInf: {
      Expr r = make_bool(false);
      if (p.beta != 0.0) r = r || v == c(INFINITY);
      if (p.alpha != 0.0) r = r || v == c(-INFINITY);
      return r;
    }
    case UnaryFn::kElu: return select(v > c(0.0), v, c(p.alpha) * (tessera::exp(v) - c(1.0)));
    case UnaryFn::kSelu: return c(p.beta) * select(v > c(0.0), v, c(p.alpha) * (tessera::exp(v) - c(1.0)));
    case UnaryFn::kCelu: return max(v, c(0.0)) + min(c(0.0), c(p.alpha) * (tessera::exp(v / c(p.alpha)) - c(1.0)));
    case UnaryFn::kSoftplus: return softplus_expr(v);
    case UnaryFn::kSoftsign: return v / (c(1.0) + tessera::abs(v));
    case UnaryFn::kThresholdedRelu: return select(v > c(p.alpha), v, c(0.0));
    case UnaryFn::kShrink: return select(v < c(-p.alpha), v + c(p.beta), select(v > c(p.alpha), v - c(p.beta), c(0.0)));
    case UnaryFn::kMish: return v * tessera::tanh(softplus_expr(v));
    case UnaryFn::kGeluTanh: {
      const Expr inner = c(std::sqrt(2.0 / M_PI)) * (v + c(0.044715) * v * v * v);
      return c(0.5) * v * (c(1.0) + tessera::tanh(inner));
    }
    case UnaryFn::kGelu: return c(0.5) * v * (c(1.0) + tessera::erf(v * c(M_SQRT1_2)));
    case UnaryFn::kRelu: return max(v, c(0.0));
    case UnaryFn::kLeakyRelu: return select(v > c(0.0), v, v * c(p.alpha));
    case UnaryFn::kSigmoid: return tessera::sigmoid(v);
    case UnaryFn::kHardSigmoid: return max(c(0.0), min(c(1.0), v * c(p.alpha) + c(p.beta)));
    case UnaryFn::kHardSwish: return v * min(max(v + c(3.0), c(0.0)), c(6.0)) / c(6.0);
    case UnaryFn::kTanh: return tessera::tanh(v);
    case UnaryFn::kClip: return min(max(v, c(p.alpha)), c(p.beta));
    case UnaryFn::kErf: return t == DType::f32() ? erf_f32(v) : tessera::erf(v);
  }
  return v;
}

// Truncating integer remainder from the floor remainder r = a mod b (sign of b).
Expr trunc_remainder(Expr a, Expr b) {
  const Expr r = a % b, zero = constant(a.dtype(), 0.0);
  return select(r != zero && ((r < zero) != (a < zero)), r - b, r);
}

Expr binary_expr(BinaryFn fn, Expr a, Expr b) {
  const DType t = a.dtype();
  switch (fn) {
    case BinaryFn::kEqual: return a == b;
    case BinaryFn::kLess: return a < b;
    case BinaryFn::kLessEqual: return a <= b;
    case BinaryFn::kGreater: return a > b;
    case BinaryFn::kGreaterEqual: return a >= b;
    case BinaryFn::kAnd: return a && b;
    case BinaryFn::kOr: return a || b;
    case BinaryFn::kXor: return a != b;
    case BinaryFn::kMod: return a % b;
    case BinaryFn::kFmod: {
      if (!t.is_float()) return trunc_remainder(a, b);
      const Expr q = a / b;
      return a - select(q < constant(t, 0.0), tessera::ceil(q), tessera::floor(q)) * b;
    }
    case BinaryFn::kShiftLeft:
    case BinaryFn::kShiftRight: {
      // 2^b is exact in float64 for every count below 64.
      const Expr scale = cast(t, tessera::pow(make_float(2.0, DType::f64()), cast(DType::f64(), b)));
      return fn == BinaryFn::kShiftLeft ? a * scale : a / scale;
    }
    case BinaryFn::kPRelu: return select(a < constant(t, 0.0), a * b, a);
    case BinaryFn::kAdd: return a + b;
    case BinaryFn::kSub: return a - b;
    case BinaryFn::kMul: return a * b;
    case BinaryFn::kDiv: return t.is_float() ? a / b : truncating_quotient(a, b);
    case BinaryFn::kMax: return max(a, b);
    case BinaryFn::kMin: return min(a, b);
    case BinaryFn::kPow: return tessera::pow(a, b);
  }
  return a;
}

bool is_signed_or_float(DType t) {
  return t.is_float() || t.is_int();
}

}  // namespace

const char* unary_fn_name(UnaryFn fn) {
  switch (fn) {
#define TESSERA_UNARY_FN_NAME(e, s) \
  case UnaryFn::e: return s;
    TESSERA_UNARY_FNS(TESSERA_UNARY_FN_NAME)
#undef TESSERA_UNARY_FN_NAME
  }
  return "?";
}

bool unary_fn_accepts(UnaryFn fn, DType t) {
  switch (fn) {
    case UnaryFn::kNeg:
    case UnaryFn::kAbs:
    case UnaryFn::kSign: return is_signed_or_float(t);
    case UnaryFn::kRelu:
    case UnaryFn::kClip: return !t.is_bool();
    case UnaryFn::kNot: return t.is_bool();
    default: return t.is_float();
  }
}

DType unary_fn_result(UnaryFn fn, DType t) {
  return fn == UnaryFn::kIsNaN || fn == UnaryFn::kIsInf || fn == UnaryFn::kNot ? DType::boolean() : t;
}

Result<Tensor> unary(UnaryFn fn, const Tensor& x, UnaryParams params, const std::string& name) {
  const std::string op = unary_fn_name(fn);
  TESSERA_RETURN_IF_ERROR(check_defined(op, x));
  if (!unary_fn_accepts(fn, x->dtype)) return invalid(op, "does not accept " + x->dtype.to_string() + " operands");
  return compute(
      x->shape, [&](const Vars& i) { return unary_expr(fn, read(x, detail::as_exprs(i)), params); }, name,
      OpPattern::kElementwise);
}

double unary_reference(UnaryFn fn, double x, UnaryParams p) {
  auto softplus = [](double v) { return std::max(v, 0.0) + std::log1p(std::exp(-std::fabs(v))); };
  switch (fn) {
    case UnaryFn::kNeg: return -x;
    case UnaryFn::kAbs: return std::fabs(x);
    case UnaryFn::kSign: return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
    case UnaryFn::kReciprocal: return 1.0 / x;
    case UnaryFn::kSqrt: return std::sqrt(x);
    case UnaryFn::kExp: return std::exp(x);
    case UnaryFn::kLog: return std::log(x);
    case UnaryFn::kFloor: return std::floor(x);
    case UnaryFn::kCeil: return std::ceil(x);
    case UnaryFn::kRound: return std::nearbyint(x);
    case UnaryFn::kSin: return std::sin(x);
    case UnaryFn::kCos: return std::cos(x);
    case UnaryFn::kTan: return std::tan(x);
    case UnaryFn::kAsin: return std::asin(x);
    case UnaryFn::kAcos: return std::acos(x);
    case UnaryFn::kAtan: return std::atan(x);
    case UnaryFn::kSinh: return std::sinh(x);
    case UnaryFn::kCosh: return std::cosh(x);
    case UnaryFn::kAsinh: return std::asinh(x);
    case UnaryFn::kAcosh: return std::acosh(x);
    case UnaryFn::kAtanh: return std::atanh(x);
    case UnaryFn::kNot: return x == 0.0 ? 1.0 : 0.0;
    case UnaryFn::kIsNaN: return std::isnan(x) ? 1.0 : 0.0;
    case UnaryFn::kIsInf: return (std::isinf(x) && ((x > 0 && p.beta != 0.0) || (x < 0 && p.alpha != 0.0))) ? 1.0 : 0.0;
    case UnaryFn::kElu: return x > 0 ? x : p.alpha * (std::exp(x) - 1.0);
    case UnaryFn::kSelu: return p.beta * (x > 0 ? x : p.alpha * (std::exp(x) - 1.0));
    case UnaryFn::kCelu: return std::max(x, 0.0) + std::min(0.0, p.alpha * (std::exp(x / p.alpha) - 1.0));
    case UnaryFn::kSoftplus: return softplus(x);
    case UnaryFn::kSoftsign: return x / (1.0 + std::fabs(x));
    case UnaryFn::kThresholdedRelu: return x > p.alpha ? x : 0.0;
    case UnaryFn::kShrink: return x < -p.alpha ? x + p.beta : x > p.alpha ? x - p.beta : 0.0;
    case UnaryFn::kMish: return x * std::tanh(softplus(x));
    case UnaryFn::kGeluTanh: return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case UnaryFn::kGelu: return 0.5 * x * (1.0 + std::erf(x * M_SQRT1_2));
    case UnaryFn::kRelu: return x > 0 ? x : 0.0;
    case UnaryFn::kLeakyRelu: return x > 0 ? x : p.alpha * x;
    case UnaryFn::kSigmoid: return 1.0 / (1.0 + std::exp(-x));
    case UnaryFn::kHardSigmoid: return std::max(0.0, std::min(1.0, p.alpha * x + p.beta));
    case UnaryFn::kHardSwish: return x * std::min(std::max(x + 3.0, 0.0), 6.0) / 6.0;
    case UnaryFn::kTanh: return std::tanh(x);
    case UnaryFn::kClip: return std::min(std::max(x, p.alpha), p.beta);
    case UnaryFn::kErf: return std::erf(x);
  }
  return x;
}

const char* binary_fn_name(BinaryFn fn) {
  switch (fn) {
#define TESSERA_BINARY_FN_NAME(e, s) \
  case BinaryFn::e: return s;
    TESSERA_BINARY_FNS(TESSERA_BINARY_FN_NAME)
#undef TESSERA_BINARY_FN_NAME
  }
  return "?";
}

bool binary_fn_accepts(BinaryFn fn, DType t) {
  switch (fn) {
    case BinaryFn::kAnd:
    case BinaryFn::kOr:
    case BinaryFn::kXor: return t.is_bool();
    case BinaryFn::kMod: return t.is_integral() && !t.is_bool();
    case BinaryFn::kFmod: return !t.is_bool();
    case BinaryFn::kShiftLeft:
    case BinaryFn::kShiftRight: return t.is_uint() && !t.is_bool();
    case BinaryFn::kPRelu:
    case BinaryFn::kPow: return t.is_float();
    default: return true;
  }
}

DType binary_fn_result(BinaryFn fn, DType t) {
  switch (fn) {
    case BinaryFn::kMod:
    case BinaryFn::kFmod:
    case BinaryFn::kShiftLeft:
    case BinaryFn::kShiftRight:
    case BinaryFn::kPRelu:
    case BinaryFn::kAdd:
    case BinaryFn::kSub:
    case BinaryFn::kMul:
    case BinaryFn::kDiv:
    case BinaryFn::kMax:
    case BinaryFn::kMin:
    case BinaryFn::kPow: return t;
    default: return DType::boolean();
  }
}

Result<Tensor> binary(BinaryFn fn, const Tensor& a, const Tensor& b, const std::string& name) {
  const std::string op = binary_fn_name(fn);
  TESSERA_RETURN_IF_ERROR(check_defined(op, a));
  if (!binary_fn_accepts(fn, a->dtype)) return invalid(op, "does not accept " + a->dtype.to_string() + " operands");
  TESSERA_RETURN_IF_ERROR(check_defined(op, b));
  if (a->dtype != b->dtype)
    return invalid(op, "operand types differ: " + a->dtype.to_string() + " and " + b->dtype.to_string());
  auto shape = broadcast_shape(a->shape, b->shape);
  if (!shape.is_ok()) return shape.status().with_context(op);
  const bool same = a->shape == *shape && b->shape == *shape;
  return compute(
      *shape,
      [&](const Vars& i) {
        return binary_expr(fn, read(a, broadcast_indices(a, i)), read(b, broadcast_indices(b, i)));
      },
      name, same ? OpPattern::kElementwise : OpPattern::kBroadcast);
}

double binary_reference(BinaryFn fn, double a, double b, DType t) {
  switch (fn) {
    case BinaryFn::kEqual: return a == b;
    case BinaryFn::kLess: return a < b;
    case BinaryFn::kLessEqual: return a <= b;
    case BinaryFn::kGreater: return a > b;
    case BinaryFn::kGreaterEqual: return a >= b;
    case BinaryFn::kAnd: return a != 0 && b != 0;
    case BinaryFn::kOr: return a != 0 || b != 0;
    case BinaryFn::kXor: return (a != 0) != (b != 0);
    case BinaryFn::kMod: return a - std::floor(a / b) * b;
    case BinaryFn::kFmod: return std::fmod(a, b);
    case BinaryFn::kShiftLeft: return std::fmod(a * std::ldexp(1.0, static_cast<int>(b)), std::ldexp(1.0, t.bits));
    case BinaryFn::kShiftRight: return std::floor(a / std::ldexp(1.0, static_cast<int>(b)));
    case BinaryFn::kPRelu: return a < 0 ? a * b : a;
    case BinaryFn::kAdd: return a + b;
    case BinaryFn::kSub: return a - b;
    case BinaryFn::kMul: return a * b;
    case BinaryFn::kDiv: return t.is_float() ? a / b : std::trunc(a / b);
    case BinaryFn::kMax: return a > b ? a : b;
    case BinaryFn::kMin: return a < b ? a : b;
    case BinaryFn::kPow: return std::pow(a, b);
  }
  return a;
}

Result<Tensor> where(const Tensor& cond, const Tensor& a, const Tensor& b, const std::string& name) {
  for (const Tensor* t : {&cond, &a, &b}) TESSERA_RETURN_IF_ERROR(check_defined("where", *t));
  if (!cond->dtype.is_bool()) return invalid("where", "the condition must be bool, not " + cond->dtype.to_string());
  if (a->dtype != b->dtype)
    return invalid("where", "operand types differ: " + a->dtype.to_string() + " and " + b->dtype.to_string());
  TESSERA_ASSIGN_OR_RETURN(auto ab, broadcast_shape(a->shape, b->shape));
  auto shape = broadcast_shape(cond->shape, ab);
  if (!shape.is_ok()) return shape.status().with_context("where");
  const bool same = cond->shape == *shape && a->shape == *shape && b->shape == *shape;
  return compute(
      *shape,
      [&](const Vars& i) {
        return select(read(cond, broadcast_indices(cond, i)), read(a, broadcast_indices(a, i)),
                      read(b, broadcast_indices(b, i)));
      },
      name, same ? OpPattern::kElementwise : OpPattern::kBroadcast);
}

}  // namespace tessera::ops
