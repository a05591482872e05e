// Integer floor division, modulo and ceiling division: the one definition
// every part of the compiler uses (constant folding, the simplifier, the
// interpreter, the templates' tile counts).
//
// Header-only and free of dependencies: it lives in base/ so that
// compiler/ir (constant folding) and compiler/arith share it.
#pragma once

#include <cstdint>

namespace tessera {

/// floor(a / b): the quotient rounded toward negative infinity. b != 0.
/// INT64_MIN / -1 wraps to INT64_MIN (two's complement) instead of trapping.
constexpr int64_t floordiv(int64_t a, int64_t b) {
  if (b == -1) return static_cast<int64_t>(0 - static_cast<uint64_t>(a));
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

/// a - b * floordiv(a, b): zero or of the sign of b, |result| < |b|. b != 0.
constexpr int64_t floormod(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

/// ceil(a / b) for a >= 0 and b > 0: how many blocks of b cover a.
constexpr int64_t ceil_div(int64_t a, int64_t b) {
  return floordiv(a + b - 1, b);
}

}  // namespace tessera
