#include "compiler/ir/scalar_semantics.h"

#include <cmath>

#include "base/half.h"

namespace tessera {

double call_value(CallOp op, double x, double y) {
  switch (op) {
    case CallOp::kExp: return std::exp(x);
    case CallOp::kLog: return std::log(x);
    case CallOp::kSqrt: return std::sqrt(x);
    case CallOp::kTanh: return std::tanh(x);
    case CallOp::kErf: return std::erf(x);
    case CallOp::kAbs: return std::fabs(x);
    case CallOp::kFloor: return std::floor(x);
    case CallOp::kCeil: return std::ceil(x);
    case CallOp::kRound: return std::nearbyint(x);  // half to even in the default rounding mode
    case CallOp::kPow: return std::pow(x, y);
    case CallOp::kSigmoid: return 1.0 / (1.0 + std::exp(-x));
    case CallOp::kSin: return std::sin(x);
    case CallOp::kCos: return std::cos(x);
    case CallOp::kTan: return std::tan(x);
    case CallOp::kAsin: return std::asin(x);
    case CallOp::kAcos: return std::acos(x);
    case CallOp::kAtan: return std::atan(x);
    case CallOp::kSinh: return std::sinh(x);
    case CallOp::kCosh: return std::cosh(x);
    case CallOp::kAsinh: return std::asinh(x);
    case CallOp::kAcosh: return std::acosh(x);
    case CallOp::kAtanh: return std::atanh(x);
    case CallOp::kDotU8S8: break;   // integers: dot_u8s8
    case CallOp::kDotBf16: break;   // words: dot_bf16_value
    case CallOp::kPackBf16: break;  // to a word: pack_bf16_value
  }
  return std::nan("");
}

int64_t dot_u8s8_value(int64_t a, int64_t b) {
  const auto ua = static_cast<uint32_t>(a), ub = static_cast<uint32_t>(b);
  int64_t sum = 0;
  for (int byte = 0; byte < 4; ++byte)
    sum +=
        int64_t{static_cast<uint8_t>(ua >> (8 * byte))} * static_cast<int8_t>(static_cast<uint8_t>(ub >> (8 * byte)));
  return sum;
}

double dot_bf16_value(int64_t a, int64_t b) {
  const auto ua = static_cast<uint32_t>(a), ub = static_cast<uint32_t>(b);
  auto half = [](uint32_t word, int i) {
    return static_cast<double>(bfloat16_to_float(static_cast<uint16_t>(word >> (16 * i))));
  };
  return static_cast<float>(half(ua, 0) * half(ub, 0) + half(ua, 1) * half(ub, 1));
}

int64_t pack_bf16_value(double lo, double hi) {
  const uint32_t word = float_to_bfloat16(static_cast<float>(lo)) |
                        (static_cast<uint32_t>(float_to_bfloat16(static_cast<float>(hi))) << 16);
  return static_cast<int32_t>(word);
}

int64_t wrap_int(DType t, int64_t v) {
  if (t.is_bool()) return v != 0;
  if (t.bits >= 64) return v;
  if (t.is_uint()) return static_cast<int64_t>(static_cast<uint64_t>(v) & ((uint64_t{1} << t.bits) - 1));
  const int shift = 64 - t.bits;
  return static_cast<int64_t>(static_cast<uint64_t>(v) << shift) >> shift;
}

}  // namespace tessera
