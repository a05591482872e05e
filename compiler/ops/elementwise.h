// Elementwise operators: binary ops with NumPy broadcasting and unary
// activations. Each is one compute stage: kElementwise when every input has
// the output's shape, kBroadcast when an input is broadcast.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/te/tensor.h"

namespace tessera::ops {

/// The NumPy broadcast of two shapes (align trailing dims; each pair is equal
/// or has a 1), or kInvalidArgument naming both shapes.
Result<std::vector<int64_t>> broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

/// a + b, a - b, a * b, a / b (rounded toward zero for integers, as ONNX and
/// C divide), max(a, b), min(a, b), pow(a, b) (floats), with NumPy
/// broadcasting; both operands must have one element type.
Result<Tensor> add(const Tensor& a, const Tensor& b, const std::string& name = "add");
Result<Tensor> sub(const Tensor& a, const Tensor& b, const std::string& name = "sub");
Result<Tensor> mul(const Tensor& a, const Tensor& b, const std::string& name = "mul");
Result<Tensor> div(const Tensor& a, const Tensor& b, const std::string& name = "div");
Result<Tensor> maximum(const Tensor& a, const Tensor& b, const std::string& name = "maximum");
Result<Tensor> minimum(const Tensor& a, const Tensor& b, const std::string& name = "minimum");
Result<Tensor> power(const Tensor& a, const Tensor& b, const std::string& name = "power");

/// max(x, 0).
Result<Tensor> relu(const Tensor& x, const std::string& name = "relu");
/// 1 / (1 + exp(-x)) (float).
Result<Tensor> sigmoid(const Tensor& x, const std::string& name = "sigmoid");
/// tanh(x) (float).
Result<Tensor> tanh(const Tensor& x, const std::string& name = "tanh");
/// exp(x) (float).
Result<Tensor> exp(const Tensor& x, const std::string& name = "exp");
/// x * min(max(x + 3, 0), 6) / 6 (float).
Result<Tensor> hardswish(const Tensor& x, const std::string& name = "hardswish");
/// min(max(x, lo), hi); lo <= hi.
Result<Tensor> clip(const Tensor& x, double lo, double hi, const std::string& name = "clip");
/// x > 0 ? x : alpha * x (float).
Result<Tensor> leaky_relu(const Tensor& x, double alpha = 0.01, const std::string& name = "leaky_relu");
/// 0.5 * x * (1 + erf(x / sqrt(2))) (float; the exact, erf form).
Result<Tensor> gelu(const Tensor& x, const std::string& name = "gelu");

/// Elementwise functions of one operand, listed once: X(enum name, printed
/// name). Float operands unless noted; kNeg, kAbs and kSign also take signed
/// integers, kRelu and kClip any number, kNot takes bool; kIsNaN, kIsInf and
/// kNot yield bool.
///   kRound: half to even. kSign: -1, 0 or 1.
///   kElu: x > 0 ? x : alpha (e^x - 1).  kSelu: beta (x > 0 ? x : alpha (e^x - 1)).
///   kCelu: max(0, x) + min(0, alpha (e^(x / alpha) - 1)).
///   kSoftplus: log(1 + e^x), as max(x, 0) + log(1 + e^-|x|) (no overflow).
///   kSoftsign: x / (1 + |x|).  kThresholdedRelu: x > alpha ? x : 0.
///   kShrink: x < -alpha ? x + beta : x > alpha ? x - beta : 0.
///   kMish: x tanh(softplus(x)).  kGelu: 0.5 x (1 + erf(x / sqrt(2))).
///   kGeluTanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
///   kIsInf: +inf when beta != 0, -inf when alpha != 0.
///   kRelu: max(x, 0).  kLeakyRelu: x > 0 ? x : alpha x.  kSigmoid: 1 / (1 + e^-x).
///   kHardSigmoid: max(0, min(1, alpha x + beta)).  kHardSwish: x min(max(x + 3, 0), 6) / 6.
///   kClip: min(max(x, alpha), beta).  kErf: in float32 a rational function
///   within a few ulp (it vectorizes; libm's erff runs lane by lane).
// clang-format off
#define TESSERA_UNARY_FNS(X)                                                                          \
  X(kNeg, "neg") X(kAbs, "abs") X(kSign, "sign") X(kReciprocal, "reciprocal") X(kSqrt, "sqrt")       \
  X(kExp, "exp") X(kLog, "log") X(kFloor, "floor") X(kCeil, "ceil") X(kRound, "round") X(kSin, "sin") \
  X(kCos, "cos") X(kTan, "tan") X(kAsin, "asin") X(kAcos, "acos") X(kAtan, "atan") X(kSinh, "sinh")  \
  X(kCosh, "cosh") X(kAsinh, "asinh") X(kAcosh, "acosh") X(kAtanh, "atanh") X(kNot, "not")           \
  X(kIsNaN, "isnan") X(kIsInf, "isinf") X(kElu, "elu") X(kSelu, "selu") X(kCelu, "celu")              \
  X(kSoftplus, "softplus") X(kSoftsign, "softsign") X(kThresholdedRelu, "thresholded_relu")          \
  X(kShrink, "shrink") X(kMish, "mish") X(kGeluTanh, "gelu_tanh") X(kGelu, "gelu") X(kRelu, "relu")    \
  X(kLeakyRelu, "leaky_relu") X(kSigmoid, "sigmoid") X(kHardSigmoid, "hard_sigmoid")                  \
  X(kHardSwish, "hardswish") X(kTanh, "tanh") X(kClip, "clip") X(kErf, "erf")
// clang-format on

/// A function of TESSERA_UNARY_FNS.
enum class UnaryFn : uint8_t {
#define TESSERA_UNARY_FN_ENUM(e, s) e,
  TESSERA_UNARY_FNS(TESSERA_UNARY_FN_ENUM)
#undef TESSERA_UNARY_FN_ENUM
};
/// The printed name, e.g. "softplus".
const char* unary_fn_name(UnaryFn fn);
/// Whether `fn` accepts operands of type `t`.
bool unary_fn_accepts(UnaryFn fn, DType t);
/// The result type of `fn` on operands of type `t` (bool for the predicates).
DType unary_fn_result(UnaryFn fn, DType t);

/// The parameters of the parameterised functions (see TESSERA_UNARY_FNS).
struct UnaryParams {
  double alpha = 0.0, beta = 0.0;
};

/// fn(x), one elementwise stage; kInvalidArgument for an operand type `fn`
/// does not accept.
Result<Tensor> unary(UnaryFn fn, const Tensor& x, UnaryParams params = {}, const std::string& name = "unary");
/// fn(x) computed in double: the reference constant folding uses.
double unary_reference(UnaryFn fn, double x, UnaryParams params = {});

/// Elementwise functions of two operands with NumPy broadcasting, listed
/// once. Both operands have one type. Comparisons take any type, logic
/// (kAnd, kOr, kXor) bool, and all of them yield bool. kMod: the remainder
/// with the divisor's sign (integers); kFmod: C's fmod, the dividend's sign
/// (floats and integers). kShiftLeft/kShiftRight: unsigned integers, shift
/// counts below the bit width. kPRelu: a < 0 ? a * b : a (floats). The
/// arithmetic (kAdd ... kMin any type, kPow floats) yields the operands'
/// type; kDiv rounds integer quotients toward zero, as ONNX and C do.
// clang-format off
#define TESSERA_BINARY_FNS(X)                                                                         \
  X(kEqual, "equal") X(kLess, "less") X(kLessEqual, "less_equal") X(kGreater, "greater")             \
  X(kGreaterEqual, "greater_equal") X(kAnd, "and") X(kOr, "or") X(kXor, "xor") X(kMod, "mod")       \
  X(kFmod, "fmod") X(kShiftLeft, "shift_left") X(kShiftRight, "shift_right") X(kPRelu, "prelu")       \
  X(kAdd, "add") X(kSub, "sub") X(kMul, "mul") X(kDiv, "div") X(kMax, "maximum") X(kMin, "minimum")   \
  X(kPow, "power")
// clang-format on

/// A function of TESSERA_BINARY_FNS.
enum class BinaryFn : uint8_t {
#define TESSERA_BINARY_FN_ENUM(e, s) e,
  TESSERA_BINARY_FNS(TESSERA_BINARY_FN_ENUM)
#undef TESSERA_BINARY_FN_ENUM
};
/// The printed name, e.g. "less_equal".
const char* binary_fn_name(BinaryFn fn);
/// Whether `fn` accepts operands of type `t`.
bool binary_fn_accepts(BinaryFn fn, DType t);
/// The result type of `fn` on operands of type `t`.
DType binary_fn_result(BinaryFn fn, DType t);

/// fn(a, b) with broadcasting, one stage.
Result<Tensor> binary(BinaryFn fn, const Tensor& a, const Tensor& b, const std::string& name = "binary");
/// fn(a, b) computed in double for operands of type `t`.
double binary_reference(BinaryFn fn, double a, double b, DType t);

/// cond ? a : b elementwise with broadcasting of all three; cond is bool, a
/// and b have one type.
Result<Tensor> where(const Tensor& cond, const Tensor& a, const Tensor& b, const std::string& name = "where");

}  // namespace tessera::ops
