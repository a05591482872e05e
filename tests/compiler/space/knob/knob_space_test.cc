#include "compiler/space/knob/knob_space.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

namespace tessera {
namespace {

// Brute force: every vector of `n` sizes in [1, extent] (outer included) that
// the policy allows, counted without the enumerator's pruning.
uint64_t brute_force_splits(int64_t extent, SplitPolicy policy, int n) {
  std::vector<int64_t> inner(n - 1, 1);
  uint64_t count = 0;
  int64_t bound = 1;
  while (bound < extent) bound *= 2;
  while (true) {
    int64_t product = 1;
    bool ok = true;
    for (int64_t f : inner) {
      product *= f;
      if (policy.max_factor > 0 && f > policy.max_factor) ok = false;
      if (policy.kind == SplitPolicy::Kind::kPowerOfTwo && (f & (f - 1)) != 0) ok = false;
    }
    if (policy.kind == SplitPolicy::Kind::kFactors)
      ok = ok && extent % product == 0;
    else
      ok = ok && product <= bound;
    count += ok;
    int d = 0;
    for (; d < n - 1; ++d) {
      if (++inner[d] <= bound) break;
      inner[d] = 1;
    }
    if (d == n - 1) break;
  }
  return count;
}

TEST(KnobSpace, SplitSizesEqualABruteForceCount) {
  for (int64_t extent : {1, 7, 12, 16, 30, 64}) {
    for (int n = 1; n <= 4; ++n) {
      for (SplitPolicy policy : {SplitPolicy::factors(), SplitPolicy::factors(8), SplitPolicy::power_of_two(),
                                 SplitPolicy::power_of_two(4)}) {
        KnobSpace space;
        ASSERT_TRUE(space.define_split("s", extent, policy, n).is_ok());
        EXPECT_EQ(space.size(), brute_force_splits(extent, policy, n))
            << "extent " << extent << " outputs " << n << " kind " << int(policy.kind) << " max " << policy.max_factor;
      }
    }
  }
}

TEST(KnobSpace, FactorSplitsMultiplyToTheExtent) {
  KnobSpace space;
  ASSERT_TRUE(space.define_split("s", 360, SplitPolicy::factors(), 3).is_ok());
  for (const auto& c : space.knobs()[0].candidates) {
    ASSERT_EQ(c.size(), 3u);
    EXPECT_EQ(c[0] * c[1] * c[2], 360);
  }
}

TEST(KnobSpace, PowerOfTwoSplitsCoverTheExtent) {
  KnobSpace space;
  ASSERT_TRUE(space.define_split("s", 100, SplitPolicy::power_of_two(), 2).is_ok());
  std::set<int64_t> inner;
  for (const auto& c : space.knobs()[0].candidates) {
    EXPECT_GE(c[0] * c[1], 100);
    EXPECT_LT((c[0] - 1) * c[1], 100);
    inner.insert(c[1]);
  }
  EXPECT_EQ(inner, (std::set<int64_t>{1, 2, 4, 8, 16, 32, 64, 128}));
}

// Tiles split in three also offer the middle sizes that divide the count of
// inner tiles: 257 columns are 9 tiles of 32, so blocks of 3 tiles cover
// them evenly where powers of two left a block holding one tile. A power
// of two's tiles are all powers of two: its candidates are the rule's
// (divisors and powers of two), in the enumeration's order.
TEST(KnobSpace, TileSplitsOfAnOddExtentOfferBlocksOfWholeTiles) {
  KnobSpace odd;
  ASSERT_TRUE(odd.define_split("s", 257, SplitPolicy::tiles(), 3).is_ok());
  const auto& c = odd.knobs()[0].candidates;
  auto has = [&](std::vector<int64_t> v) { return std::find(c.begin(), c.end(), v) != c.end(); };
  EXPECT_TRUE(has({3, 3, 32}));
  EXPECT_TRUE(has({1, 9, 32}));
  EXPECT_TRUE(has({3, 4, 32}));  // the power of two's block too
  for (size_t i = 0; i + 1 < c.size(); ++i)
    EXPECT_TRUE(std::lexicographical_compare(c[i].begin() + 1, c[i].end(), c[i + 1].begin() + 1, c[i + 1].end()));
  for (const auto& v : c) {
    EXPECT_GE(v[0] * v[1] * v[2], 257);
    EXPECT_LT((v[0] - 1) * v[1] * v[2], 257);
  }
  KnobSpace pow2;
  ASSERT_TRUE(pow2.define_split("s", 64, SplitPolicy::tiles(), 3).is_ok());
  EXPECT_EQ(pow2.size(), brute_force_splits(64, SplitPolicy::power_of_two(), 3));
}

TEST(KnobSpace, FilterKeepsOnlyAcceptedSplits) {
  KnobSpace space;
  ASSERT_TRUE(space
                  .define_split("s", 64, SplitPolicy::factors(), 2,
                                [](const std::vector<int64_t>& s) { return s[1] % 16 == 0; })
                  .is_ok());
  EXPECT_EQ(space.size(), 3u);  // 16, 32, 64
}

TEST(KnobSpace, SizeIsTheProductOfKnobSizes) {
  KnobSpace space;
  ASSERT_TRUE(space.define_split("a", 12, SplitPolicy::factors(), 2).is_ok());  // 6
  ASSERT_TRUE(space.define_reorder_all("b", 3).is_ok());                        // 6
  ASSERT_TRUE(
      space.define_annotate("c", {{IterAnnotation::kNone, IterAnnotation::kUnroll}, {IterAnnotation::kVectorize}})
          .is_ok());                                         // 2
  ASSERT_TRUE(space.define_knob("d", {0, 16, 64}).is_ok());  // 3
  EXPECT_EQ(space.size(), 6u * 6 * 2 * 3);
  // Brute force: every index gives a distinct configuration.
  std::set<std::string> seen;
  for (uint64_t i = 0; i < space.size(); ++i) seen.insert(space.config(i)->to_string());
  EXPECT_EQ(seen.size(), space.size());
}

// A space with one knob of each kind over real template-sized extents.
KnobSpace mixed_space() {
  KnobSpace space;
  EXPECT_TRUE(space.define_split("tile_i", 1024, SplitPolicy::factors(), 3).is_ok());
  EXPECT_TRUE(space.define_split("tile_j", 1000, SplitPolicy::factors(64), 4).is_ok());
  EXPECT_TRUE(space.define_split("tile_k", 77, SplitPolicy::power_of_two(), 2).is_ok());
  EXPECT_TRUE(space.define_reorder("order", {{0, 1, 2}, {2, 1, 0}, {1, 0, 2}}).is_ok());
  EXPECT_TRUE(space
                  .define_annotate("ann", {{IterAnnotation::kNone, IterAnnotation::kUnroll},
                                           {IterAnnotation::kVectorize, IterAnnotation::kNone}})
                  .is_ok());
  EXPECT_TRUE(space.define_knob("cache", {1, 0}).is_ok());
  return space;
}

TEST(KnobSpace, IndexAndConfigRoundTrip) {
  KnobSpace space = mixed_space();
  std::mt19937_64 rng(7);
  for (int t = 0; t < 2000; ++t) {
    const uint64_t index = rng() % space.size();
    auto c = space.config(index);
    ASSERT_TRUE(c.is_ok());
    EXPECT_EQ(c->index(), index);
    std::vector<std::pair<std::string, std::vector<int64_t>>> values;
    for (const KnobValue& v : c->values()) values.emplace_back(v.name, v.value);
    auto again = space.config_of(values);
    ASSERT_TRUE(again.is_ok()) << again.status().to_string();
    EXPECT_EQ(again->index(), index);
    EXPECT_TRUE(space.contains(*c));
  }
}

TEST(KnobSpace, FirstKnobVariesFastest) {
  KnobSpace space;
  ASSERT_TRUE(space.define_knob("a", {10, 20}).is_ok());
  ASSERT_TRUE(space.define_knob("b", {1, 2, 3}).is_ok());
  EXPECT_EQ(space.config(1)->get_int("a"), 20);
  EXPECT_EQ(space.config(1)->get_int("b"), 1);
  EXPECT_EQ(space.config(2)->get_int("a"), 10);
  EXPECT_EQ(space.config(2)->get_int("b"), 2);
}

TEST(KnobSpace, JsonRoundTrip) {
  KnobSpace space = mixed_space();
  std::mt19937_64 rng(11);
  for (int t = 0; t < 200; ++t) {
    KnobConfig c = space.config(rng() % space.size()).value();
    auto back = KnobConfig::from_json(c.to_json(), space);
    ASSERT_TRUE(back.is_ok()) << back.status().to_string() << "\n" << c.to_json();
    EXPECT_EQ(*back, c);
  }
}

TEST(KnobSpace, JsonIsReadable) {
  KnobSpace space;
  ASSERT_TRUE(space.define_split("tile", 8, SplitPolicy::factors(), 2).is_ok());
  ASSERT_TRUE(space.define_annotate("ann", {{IterAnnotation::kUnroll}}).is_ok());
  ASSERT_TRUE(space.define_knob("flag", {0, 1}).is_ok());
  auto c = space.config_of({{"tile", {2, 4}}, {"ann", {3}}, {"flag", {1}}});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->to_json(), R"({"index":6,"knobs":{"tile":[2,4],"ann":["unroll"],"flag":1}})");
  EXPECT_EQ(c->to_string(), "tile=[2, 4] ann=[unroll] flag=1");
}

TEST(KnobSpace, BadJsonIsAParseError) {
  KnobSpace space = mixed_space();
  EXPECT_EQ(KnobConfig::from_json("{not json", space).status().code(), ErrorCode::kParseError);
  EXPECT_EQ(KnobConfig::from_json("[1, 2]", space).status().code(), ErrorCode::kParseError);
  EXPECT_EQ(KnobConfig::from_json(R"({"knobs":{"cache":"yes"}})", space).status().code(), ErrorCode::kParseError);
}

TEST(KnobSpace, JsonOutsideTheSpaceIsInvalid) {
  KnobSpace space = mixed_space();
  KnobConfig c = space.config(5).value();
  std::string json = c.to_json();
  // Unknown knob, missing knob, value not a candidate, index that disagrees.
  EXPECT_EQ(KnobConfig::from_json(R"({"knobs":{"nope":1}})", space).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(KnobConfig::from_json(R"({"knobs":{"cache":1}})", space).status().code(), ErrorCode::kInvalidArgument);
  const std::string bad_value = json.substr(0, json.size() - 3) + "7}}";  // "cache":7
  EXPECT_EQ(KnobConfig::from_json(bad_value, space).status().code(), ErrorCode::kInvalidArgument);
  ASSERT_EQ(json.substr(0, 11), "{\"index\":5,");
  const std::string bad_index = "{\"index\":6," + json.substr(11);
  auto r = KnobConfig::from_json(bad_index, space);
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("disagrees"), std::string::npos);
}

TEST(KnobSpace, OverflowGuardRefusesAnAbsurdSpace) {
  KnobSpace space;
  std::vector<int64_t> thousand(1000);
  for (int i = 0; i < 1000; ++i) thousand[i] = i;
  for (const char* name : {"k0", "k1", "k2", "k3", "k4", "k5"}) ASSERT_TRUE(space.define_knob(name, thousand).is_ok());
  EXPECT_EQ(space.size(), uint64_t{1000000000000000000});
  Status st = space.define_knob("k6", thousand);  // 10^21 > 2^64
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("2^64"), std::string::npos) << st.to_string();
  EXPECT_EQ(space.knobs().size(), 6u);  // unchanged
  EXPECT_EQ(space.size(), uint64_t{1000000000000000000});
}

TEST(KnobSpace, TooManySplitCandidatesIsAnError) {
  KnobSpace space;
  Status st = space.define_split("s", int64_t{1} << 40, SplitPolicy::power_of_two(), 9);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(space.size(), 1u);
}

TEST(KnobSpace, DefinitionErrors) {
  KnobSpace space;
  ASSERT_TRUE(space.define_knob("a", {1}).is_ok());
  EXPECT_EQ(space.define_knob("a", {2}).code(), ErrorCode::kInvalidArgument);     // repeated name
  EXPECT_EQ(space.define_knob("b", {}).code(), ErrorCode::kInvalidArgument);      // empty
  EXPECT_EQ(space.define_knob("c", {1, 1}).code(), ErrorCode::kInvalidArgument);  // duplicate
  EXPECT_EQ(space.define_split("d", 0, SplitPolicy::factors(), 2).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(space.define_split("e", 8, SplitPolicy::factors(), 0).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(space.define_reorder("f", {{0, 1}, {0, 0}}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(space.define_reorder("g", {{0, 1}, {0, 1, 2}}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(space.define_split("h", 8, SplitPolicy::factors(), 2, [](auto&) { return false; }).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(space.config(1).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(space.size(), 1u);
}

}  // namespace
}  // namespace tessera
