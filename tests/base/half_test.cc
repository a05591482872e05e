// base/half.h against the conversions the compiler itself performs (GCC's
// _Float16, exact IEEE) and against bit patterns written out by hand: ties
// to even, subnormals, overflow to infinity, infinities and NaN.
#include "base/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace tessera {
namespace {

uint32_t bits_of(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}

float float_of(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

TEST(Half, EdgesRoundAsIeeeSays) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);                      // the largest half
  EXPECT_EQ(float_to_half(65519.99f), 0x7bff);                     // below the midpoint to 65536
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);                      // the midpoint rounds (to even) to infinity
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);         // the smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);         // half of it: a tie, to even (zero)
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -25)), 0x0002);         // 1.5 of it: a tie, to even (2)
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -14)), 0x0400);         // the smallest normal
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie between 1 and 1 + 2^-10: even
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // tie above 1 + 2^-10: even
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(float_to_half(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_to_float(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(half_to_float(0x7e00)));
}

TEST(Half, EveryHalfSurvivesARoundTrip) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_half(f), h) << std::hex << h;
  }
}

TEST(Half, RandomFloatsRoundAsTheCompilersFloat16Does) {
  std::mt19937 rng(3);
  for (int i = 0; i < 200000; ++i) {
    // Every exponent a half can reach, and beyond, with random mantissas.
    const float f = float_of((rng() & 0x80000000u) | ((100u + rng() % 60u) << 23) | (rng() & 0x7fffffu));
    const _Float16 want = static_cast<_Float16>(f);
    uint16_t want_bits;
    std::memcpy(&want_bits, &want, 2);
    ASSERT_EQ(float_to_half(f), want_bits) << f;
    ASSERT_EQ(half_to_float(want_bits), static_cast<float>(want));
  }
}

TEST(Bfloat16, RoundsToNearestEvenAndKeepsNan) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bfloat16(float_of(0x3f808000u)), 0x3f80);  // a tie: even (down)
  EXPECT_EQ(float_to_bfloat16(float_of(0x3f818000u)), 0x3f82);  // a tie: even (up)
  EXPECT_EQ(float_to_bfloat16(float_of(0x3f808001u)), 0x3f81);  // above the tie
  EXPECT_EQ(float_to_bfloat16(float_of(0x7f7fffffu)), 0x7f80);  // the largest float rounds to infinity
  EXPECT_EQ(float_to_bfloat16(float_of(0x00000001u)), 0x0000);  // the smallest subnormal: to zero
  EXPECT_EQ(float_to_bfloat16(float_of(0x00018000u)), 0x0002);  // a subnormal tie: even
  EXPECT_EQ(float_to_bfloat16(-std::numeric_limits<float>::infinity()), 0xff80);
  const uint16_t nan = float_to_bfloat16(float_of(0x7f800001u));  // a NaN whose payload is below bit 16
  EXPECT_TRUE(std::isnan(bfloat16_to_float(nan)));
  EXPECT_EQ(bits_of(bfloat16_to_float(0x3f81)), 0x3f810000u);
}

}  // namespace
}  // namespace tessera
