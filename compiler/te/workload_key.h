// Workload keys: the permanent primary key of a workload in every records
// database, shared between machines by export and import. Header-only (the
// xxHash functions are inlined) so that records/ can recognise and rewrite
// old keys without linking compiler/.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace tessera {

/// The workload key of a DAG's canonical text: its XXH3-128 hash (seed 0) as
/// 32 lowercase hex digits, the high 64 bits first. Stored in databases:
/// never change it (a change needs a records schema migration).
inline std::string workload_key_of(std::string_view canonical_text) {
  const XXH128_hash_t h = XXH3_128bits(canonical_text.data(), canonical_text.size());
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

/// The key older builds made (a 64-bit FNV-1a lane and an ad-hoc second lane,
/// records schema versions 1-4). Kept only so that migrations and imports can
/// recognise old keys and rewrite them; never for new keys.
inline std::string legacy_workload_key_of(std::string_view canonical_text) {
  uint64_t h1 = 1469598103934665603ull, h2 = 1099511628211ull ^ 0x9e3779b97f4a7c15ull;
  for (unsigned char c : canonical_text) {
    h1 = (h1 ^ c) * 1099511628211ull;
    h2 = (h2 ^ c) * 0x100000001b3ull + 0x2545F4914F6CDD1Dull;
    h2 ^= h2 >> 29;
  }
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h1),
                static_cast<unsigned long long>(h2));
  return buf;
}

}  // namespace tessera
