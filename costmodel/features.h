// Features of a candidate program for the cost model, extracted from its
// lowered loop IR in the spirit of Ansor's per-store features.
//
// Every buffer store statement is one "computation". For each we count the
// arithmetic it performs (by kind, weighted by how often it runs), describe
// the loops around it (parallel, unrolled, vector lanes), and analyse each
// buffer it touches: bytes, unique bytes and cache lines, the stride of the
// innermost loop, and where and how far away the data is reused. The rows of
// all stores are then folded into ONE vector of fixed length
// (kFeatureCount): extensive quantities (counts, bytes) are summed,
// intensive ones (lanes, strides, positions) averaged with each store's
// share of the executed work as its weight. Magnitudes are log2(1 + x)
// (sign kept for strides), so the vector is finite and of moderate range.
//
// feature_names() documents every entry, one line each.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "compiler/ir/stmt.h"
#include "compiler/schedule/state.h"

namespace tessera::costmodel {

/// Buffers described per store (the ones with most bytes accessed, in order).
inline constexpr int kMaxBuffers = 5;
/// Bytes of a cache line, for the "lines" features.
inline constexpr int64_t kCacheLineBytes = 64;
/// Cache sizes of the miss estimates (typical of x86 and ARM server cores;
/// fixed, so that features of different targets stay comparable).
inline constexpr int64_t kL1Bytes = 32 * 1024;
inline constexpr int64_t kL2Bytes = 1024 * 1024;

/// Features that describe the program as a whole.
inline constexpr int kProgramFeatureCount = 8;
/// Features of one store, before the per-buffer ones.
inline constexpr int kStoreFeatureCount = 64;
/// Features of one buffer access slot.
inline constexpr int kBufferFeatureCount = 17;
/// Length of every feature vector.
inline constexpr int kFeatureCount = kProgramFeatureCount + kStoreFeatureCount + kMaxBuffers * kBufferFeatureCount;

/// One entry of the feature table: its name ("store.float_mad",
/// "buf0.stride") and a one-line meaning.
struct FeatureInfo {
  std::string name;
  std::string doc;
};

/// The feature table, kFeatureCount rows in vector order.
const std::vector<FeatureInfo>& feature_names();

/// Position of the feature named `name` in the vector, or -1.
int feature_index(std::string_view name);

/// Features of an already lowered function. Works on the output of lower()
/// (unrolled loops appear as copies of their body) and, better, on the IR of
/// lower_for_features(), which keeps unrolled loops as loops.
/// kInvalidArgument when the function has no body.
Result<std::vector<float>> extract_features(const PrimFunc& func);

/// The lowering pipeline up to, not including, unrolling: lower() stopped
/// after vectorize_loops. Unrolled loops stay
/// loops (kUnrolled) and auto-unroll hints stay Attr nodes, so the features
/// see them, and extraction is cheaper than on fully unrolled code.
Result<PrimFunc> lower_for_features(const State& state);

/// lower_for_features(state), then extract_features; lowering errors
/// (kLoweringError, kInvalidSchedule) are returned as they are.
Result<std::vector<float>> extract_features(const State& state);

/// Features of many candidates; an element is an error when its candidate
/// does not lower.
std::vector<Result<std::vector<float>>> extract_features(const std::vector<State>& states);

}  // namespace tessera::costmodel
