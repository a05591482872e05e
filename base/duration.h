// Durations as a user types them: "90", "45s", "30m", "12h", "7d".
#pragma once

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>

#include "base/status.h"

namespace tessera {

/// Seconds in `text`: a number with an optional unit (s, m, h, d; none:
/// seconds). kInvalidArgument for anything else, a negative or non-finite
/// number.
inline Result<double> parse_duration(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  const std::string unit = end ? end : "";
  static const std::map<std::string, double> scale = {{"", 1}, {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}};
  auto it = scale.find(unit);
  if (text.empty() || end == text.c_str() || it == scale.end() || !(value >= 0) || !std::isfinite(value))
    return Status(ErrorCode::kInvalidArgument, "'" + text + "' is not a duration (examples: 90, 45s, 2m, 12h, 7d)");
  return value * it->second;
}

}  // namespace tessera
