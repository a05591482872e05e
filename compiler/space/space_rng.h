// The random source of the search spaces: a small seeded generator passed
// explicitly to every sampler and mutation (there is no global RNG), with
// its own integer and real draws so that one seed gives the same programs on
// every platform and standard library.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera {

/// xoshiro256** seeded through splitmix64. Copyable: a copy continues the
/// same sequence independently.
class SpaceRng {
 public:
  /// A generator whose whole sequence is fixed by `seed`.
  explicit SpaceRng(uint64_t seed) {
    for (uint64_t& s : s_) s = splitmix(seed);
  }

  /// The next 64 random bits.
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  /// Uniform in [0, n); n must be positive.
  int64_t uniform(int64_t n) {
    // Rejection keeps the draw unbiased for any n.
    const uint64_t un = static_cast<uint64_t>(n);
    const uint64_t limit = UINT64_MAX - UINT64_MAX % un;
    uint64_t x;
    do x = next();
    while (x >= limit);
    return static_cast<int64_t>(x % un);
  }

  /// Uniform in [0, 1).
  double real() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  /// True with probability p.
  bool chance(double p) { return real() < p; }

  /// A uniformly chosen element of a non-empty vector.
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(uniform(static_cast<int64_t>(v.size())))];
  }

  /// A seed for an independent stream (e.g. one per sample of a batch).
  uint64_t fork() { return next() ^ 0x9e3779b97f4a7c15ULL; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t splitmix(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  uint64_t s_[4];
};

}  // namespace tessera
