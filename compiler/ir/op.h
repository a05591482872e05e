// Operators for building expressions by hand: a + b, min(a, b), select, exp.
//
// Operands of different types are reconciled only in the two safe cases: a
// constant takes the other operand's type, and a scalar is broadcast to the
// other operand's lanes. Anything else is a programming error (TESSERA_CHECK).
// Constant operands fold.
#pragma once

#include "compiler/ir/expr.h"

namespace tessera {

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
/// Floor division for integers, IEEE division for floats.
Expr operator/(Expr a, Expr b);
/// Floor modulo for integers.
Expr operator%(Expr a, Expr b);
Expr operator-(Expr a);
Expr operator==(Expr a, Expr b);
Expr operator!=(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator!(Expr a);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);

/// cond ? t : f (types reconciled as above).
Expr select(Expr cond, Expr t, Expr f);
/// Same as select; reads better in compute bodies (padding, masks).
Expr if_then_else(Expr cond, Expr t, Expr f);
Expr cast(DType t, Expr value);
Expr exp(Expr x);
Expr log(Expr x);
Expr sqrt(Expr x);
Expr tanh(Expr x);
Expr erf(Expr x);
Expr abs(Expr x);
Expr floor(Expr x);
Expr ceil(Expr x);
Expr round(Expr x);
Expr pow(Expr x, Expr y);
Expr sigmoid(Expr x);
/// The four-way u8 x s8 dot product of two int32 words (CallOp::kDotU8S8).
Expr dot_u8s8(Expr a, Expr b);
/// The two-way bfloat16 dot product of two int32 words, in float32
/// (CallOp::kDotBf16).
Expr dot_bf16(Expr a, Expr b);
/// The int32 word of `lo` and `hi` (float32 or bfloat16) as two bfloat16
/// (CallOp::kPackBf16).
Expr pack_bf16(Expr lo, Expr hi);

/// Binary node of `kind` with operand types reconciled and constants folded.
Expr binary(ExprKind kind, Expr a, Expr b);

/// Evaluates a binary op on integer constants (floor semantics for Div/Mod).
/// False when it cannot (division by zero).
bool fold_int_binary(ExprKind kind, int64_t a, int64_t b, int64_t* out);

}  // namespace tessera
