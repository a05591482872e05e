// What one scalar operation of the IR computes, in the wide types the
// reference interpreter (compiler/codegen/interpreter.h) and the expression
// evaluator (compiler/te/evaluate.h) compute in: the one definition both
// references share, so that they cannot disagree on exp or on wrapping.
#pragma once

#include <cstdint>

#include "base/dtype.h"
#include "compiler/ir/expr.h"

namespace tessera {

/// The value of call `op` on doubles (`y`: pow's exponent; ignored by the
/// others), before rounding to the call's type.
double call_value(CallOp op, double x, double y);

/// kDotU8S8 of two int32 values: the sum of the products of a's bytes
/// (unsigned) and b's bytes (signed), lowest byte first.
int64_t dot_u8s8_value(int64_t a, int64_t b);
/// kDotBf16 of two int32 values: the sum of the products of a's and b's two
/// bfloat16 halves, rounded once to float32.
double dot_bf16_value(int64_t a, int64_t b);
/// kPackBf16: the int32 word of lo and hi rounded to bfloat16, lo lower.
int64_t pack_bf16_value(double lo, double hi);

/// `v` wrapped to the integer type `t` (bool: 0 or 1; narrow types wrap as
/// two's complement, unsigned ones are kept non-negative).
int64_t wrap_int(DType t, int64_t v);

}  // namespace tessera
