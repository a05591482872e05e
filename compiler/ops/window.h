// Window parameters shared by convolutions and pooling.
#pragma once

#include <cstdint>

namespace tessera::ops {

/// A size for height then width; one number stands for both.
struct Size2 {
  int64_t h = 1, w = 1;
  Size2(int64_t both) : h(both), w(both) {}  // NOLINT: `stride = 2` reads naturally
  Size2(int64_t height, int64_t width) : h(height), w(width) {}
};

/// Padding of the two spatial dimensions; one number pads all four sides,
/// two pad (top and bottom, left and right).
struct Padding2 {
  int64_t top = 0, left = 0, bottom = 0, right = 0;
  Padding2(int64_t all) : top(all), left(all), bottom(all), right(all) {}  // NOLINT
  Padding2(int64_t h, int64_t w) : top(h), left(w), bottom(h), right(w) {}
  Padding2(int64_t t, int64_t l, int64_t b, int64_t r) : top(t), left(l), bottom(b), right(r) {}
  bool is_zero() const { return top == 0 && left == 0 && bottom == 0 && right == 0; }
};

}  // namespace tessera::ops
