// What the benchmarks that fill a records database share: stopping on a
// failed setup step, and distinct workload keys.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/status.h"

namespace tessera::bench {

/// Exits with `what` and the status when a setup step fails: a benchmark of a
/// half-built database measures nothing.
inline void check(const Status& s, const char* what) {
  if (!s.is_ok()) {
    std::fprintf(stderr, "%s: %s\n", what, s.to_string().c_str());
    std::exit(1);
  }
}

/// The n-th of distinct 32-hex-digit workload keys.
inline std::string key_of(int n) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%032x", n * 2654435761u);
  return buf;
}

}  // namespace tessera::bench
