// Test helper: corrupting a package's bytes on purpose.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/package.h"

namespace tessera::runtime::test {

/// Rewrites the header's checksum so that a corruption made on purpose
/// reaches the parser behind it instead of stopping at the checksum.
inline void fix_checksum(std::string* bytes) {
  if (bytes->size() < static_cast<size_t>(kPackageHeaderBytes)) return;
  const uint32_t crc = package_crc32(std::string_view(*bytes).substr(kPackageHeaderBytes));
  for (int i = 0; i < 4; ++i) (*bytes)[24 + i] = static_cast<char>(crc >> (8 * i));
}

}  // namespace tessera::runtime::test
