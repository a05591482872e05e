// IEEE binary16 (float16) and bfloat16 conversions to and from float32, bit
// exact: rounding to nearest even, subnormals, infinities and NaN kept.
//
// Header-only and dependency-free so that runtime/ cross-builds for boards.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace tessera {

/// float32 -> float16, rounding to nearest even; overflow goes to infinity,
/// a NaN stays a (quiet) NaN.
inline uint16_t float_to_half(float value) {
  uint32_t x;
  std::memcpy(&x, &value, sizeof x);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const int32_t biased = static_cast<int32_t>((x >> 23) & 0xffu);
  uint32_t mantissa = x & 0x7fffffu;
  if (biased == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u : 0u));
  const int32_t exponent = biased - 127 + 15;
  if (exponent >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  uint32_t half, rest, midpoint;
  if (exponent <= 0) {  // a subnormal half, or zero: value = m * 2^-24
    if (exponent < -10) return static_cast<uint16_t>(sign);
    mantissa |= 0x800000u;
    const int shift = 14 - exponent;
    half = mantissa >> shift;
    rest = mantissa & ((1u << shift) - 1);
    midpoint = 1u << (shift - 1);
  } else {
    half = (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
    rest = mantissa & 0x1fffu;
    midpoint = 0x1000u;
  }
  if (rest > midpoint || (rest == midpoint && (half & 1u))) ++half;  // a carry into the exponent is right
  return static_cast<uint16_t>(sign | half);
}

/// float16 -> float32, exactly.
inline float half_to_float(uint16_t h) {
  const uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0) {
    const float f = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -f : f;
  }
  const uint32_t x = exponent == 0x1fu ? sign | 0x7f800000u | (mantissa << 13)
                                       : sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

/// float32 -> bfloat16, rounding to nearest even; a NaN stays a quiet NaN.
inline uint16_t float_to_bfloat16(float value) {
  uint32_t x;
  std::memcpy(&x, &value, sizeof x);
  if (std::isnan(value)) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/// bfloat16 -> float32, exactly.
inline float bfloat16_to_float(uint16_t b) {
  const uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

}  // namespace tessera
