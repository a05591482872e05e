// Steps as data: every kind reads and writes today's JSON byte for byte
// (records in existing databases must load), and step lists compare and hash
// by structure.
#include "compiler/schedule/step.h"

#include <gtest/gtest.h>

#include <unordered_set>

namespace tessera {
namespace {

// One step of each kind as steps_to_json wrote it before steps became a
// variant (keys sorted, no spaces), with the step it stands for.
struct Stored {
  const char* json;
  Step step;
};
const std::vector<Stored>& stored_steps() {
  static const std::vector<Stored> kStored = {
      {R"({"factors":[4,2],"iter":1,"kind":"split","stage":3})",
       SplitStep{.stage = 3, .iter = 1, .factors = {4, 2}, .nparts = 0}},
      {R"({"iter":3,"kind":"split","nparts":2,"stage":3})",
       SplitStep{.stage = 3, .iter = 3, .factors = {}, .nparts = 2}},
      {R"({"iters":[0,1],"kind":"fuse","stage":3})", FuseStep{.stage = 3, .iters = {0, 1}}},
      {R"({"iters":[0,1,3,2,4,5],"kind":"reorder","stage":3})", ReorderStep{.stage = 3, .order = {0, 1, 3, 2, 4, 5}}},
      {R"({"ann":"parallel","iter":0,"kind":"annotate","stage":3})",
       AnnotateStep{.stage = 3, .iter = 0, .annotation = IterAnnotation::kParallel}},
      {R"({"ann":"vectorize","iter":4,"kind":"annotate","stage":3})",
       AnnotateStep{.stage = 3, .iter = 4, .annotation = IterAnnotation::kVectorize}},
      {R"({"ann":"unroll","iter":3,"kind":"annotate","stage":3})",
       AnnotateStep{.stage = 3, .iter = 3, .annotation = IterAnnotation::kUnroll}},
      {R"({"iter":1,"kind":"compute_at","stage":2,"target":3})",
       ComputeAtStep{.stage = 2, .target_stage = 3, .target_iter = 1}},
      {R"({"kind":"compute_inline","stage":0})", ComputeInlineStep{.stage = 0}},
      {R"({"kind":"compute_root","stage":1})", ComputeRootStep{.stage = 1}},
      {R"({"kind":"cache_read","readers":[3],"stage":1})", CacheReadStep{.stage = 1, .readers = {3}}},
      {R"({"kind":"cache_write","stage":3})", CacheWriteStep{.stage = 3}},
      {R"({"axis":0,"factor":3,"kind":"rfactor","stage":4})", RfactorStep{.stage = 4, .axis = 0, .factor = 3}},
      {R"({"auto_unroll_max_step":64,"iter":1,"kind":"pragma","stage":3})",
       PragmaStep{.stage = 3, .iter = 1, .auto_unroll_max_step = 64}},
      {R"({"axis":0,"factor":4,"kind":"pack_layout","stage":1})", PackLayoutStep{.stage = 1, .axis = 0, .factor = 4}},
      {R"({"kind":"pad_tile","stage":2})", PadTileStep{.stage = 2}},
      {R"({"kind":"storage_order","order":[0,2,1],"stage":2})", StorageOrderStep{.stage = 2, .order = {0, 2, 1}}},
  };
  return kStored;
}

TEST(Step, EveryKindReadsItsStoredJson) {
  std::vector<bool> seen(std::variant_size_v<Step::Variant>, false);
  for (const Stored& s : stored_steps()) {
    auto parsed = steps_from_json(std::string("[") + s.json + "]");
    ASSERT_TRUE(parsed.is_ok()) << s.json << ": " << parsed.status().to_string();
    ASSERT_EQ(parsed->size(), 1u);
    EXPECT_EQ(parsed->front(), s.step) << s.json << " read as " << parsed->front().to_string();
    seen[static_cast<size_t>(s.step.kind())] = true;
  }
  for (size_t k = 0; k < seen.size(); ++k) EXPECT_TRUE(seen[k]) << step_kind_name(static_cast<StepKind>(k));
}

TEST(Step, EveryKindWritesItsStoredJsonByteForByte) {
  for (const Stored& s : stored_steps()) EXPECT_EQ(steps_to_json({s.step}), std::string("[") + s.json + "]");
}

TEST(Step, AStoredListRoundTripsUnchanged) {
  // A record's steps_json as the store holds it: every kind in one list.
  std::string json = "[";
  for (const Stored& s : stored_steps()) json += std::string(json.size() > 1 ? "," : "") + s.json;
  json += "]";
  auto parsed = steps_from_json(json);
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->size(), stored_steps().size());
  EXPECT_EQ(steps_to_json(*parsed), json);
}

TEST(Step, MalformedStepsNameTheStep) {
  auto unknown = steps_from_json(R"([{"kind":"cache_write","stage":1},{"kind":"tile","stage":1}])");
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_EQ(unknown.status().code(), ErrorCode::kParseError);
  EXPECT_NE(unknown.status().message().find("step 1: unknown kind \"tile\""), std::string::npos)
      << unknown.status().to_string();
  auto missing = steps_from_json(R"([{"kind":"rfactor","stage":1,"axis":0}])");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("step 0: bad arguments for rfactor"), std::string::npos)
      << missing.status().to_string();
  EXPECT_FALSE(steps_from_json(R"([{"kind":"split","iter":0}])").is_ok());  // no stage
  EXPECT_FALSE(steps_from_json(R"({"kind":"split"})").is_ok());             // not a list
}

TEST(Step, CanonicalSplitWithNpartsKeepsNoFactors) {
  Step both = SplitStep{.stage = 1, .iter = 0, .factors = {8}, .nparts = 2};
  EXPECT_EQ(canonical_step(both), Step(SplitStep{.stage = 1, .iter = 0, .factors = {}, .nparts = 2}));
  Step factors = SplitStep{.stage = 1, .iter = 0, .factors = {8}, .nparts = 0};
  EXPECT_EQ(canonical_step(factors), factors);
}

TEST(Step, EqualityIsStructural) {
  EXPECT_EQ(Step(FuseStep{.stage = 2, .iters = {0, 1}}), Step(FuseStep{.stage = 2, .iters = {0, 1}}));
  EXPECT_NE(Step(FuseStep{.stage = 2, .iters = {0, 1}}), Step(FuseStep{.stage = 2, .iters = {1, 2}}));
  // The same numbers in another kind are another step.
  EXPECT_NE(Step(RfactorStep{.stage = 1, .axis = 0, .factor = 4}),
            Step(PackLayoutStep{.stage = 1, .axis = 0, .factor = 4}));
  EXPECT_NE(Step(FuseStep{.stage = 2, .iters = {0, 1}}), Step(ReorderStep{.stage = 2, .order = {0, 1}}));
}

TEST(Step, EqualListsHashEquallyAndKindsAreHashedApart) {
  std::vector<Step> a, b;
  for (const Stored& s : stored_steps()) a.push_back(s.step);
  b = steps_from_json(steps_to_json(a)).value();
  EXPECT_EQ(hash_steps(a), hash_steps(b));
  EXPECT_EQ(hash_step(Step(RfactorStep{.stage = 1, .axis = 0, .factor = 4})),
            hash_step(Step(RfactorStep{.stage = 1, .axis = 0, .factor = 4})));
  EXPECT_NE(hash_step(Step(RfactorStep{.stage = 1, .axis = 0, .factor = 4})),
            hash_step(Step(PackLayoutStep{.stage = 1, .axis = 0, .factor = 4})));
  // Order matters; so does where a list's elements split.
  std::vector<Step> reversed(a.rbegin(), a.rend());
  EXPECT_NE(hash_steps(a), hash_steps(reversed));
  EXPECT_NE(hash_steps({Step(FuseStep{.stage = 1, .iters = {0, 1}}), Step(FuseStep{.stage = 1, .iters = {2}})}),
            hash_steps({Step(FuseStep{.stage = 1, .iters = {0}}), Step(FuseStep{.stage = 1, .iters = {1, 2}})}));
  EXPECT_NE(hash_steps({}), hash_steps({Step(CacheWriteStep{.stage = 0})}));
}

TEST(Step, StepListsAreKeysOfUnorderedSets) {
  std::unordered_set<std::vector<Step>, StepListHash> set;
  std::vector<Step> a = {SplitStep{.stage = 1, .iter = 0, .factors = {4}, .nparts = 0}, CacheWriteStep{.stage = 1}};
  EXPECT_TRUE(set.insert(a).second);
  EXPECT_FALSE(set.insert(steps_from_json(steps_to_json(a)).value()).second);
  EXPECT_TRUE(set.insert({CacheWriteStep{.stage = 1}}).second);
  EXPECT_EQ(set.size(), 2u);
}

TEST(Step, ToStringNamesTheKindAndArguments) {
  EXPECT_EQ(Step(SplitStep{.stage = 1, .iter = 0, .factors = {32, 4}, .nparts = 0}).to_string(),
            "split(stage=1, iter=0, factors=[32, 4])");
  EXPECT_EQ(Step(ComputeAtStep{.stage = 2, .target_stage = 3, .target_iter = 1}).to_string(),
            "compute_at(stage=2, target=3, iter=1)");
  EXPECT_EQ(Step(PragmaStep{.stage = 3, .iter = 1, .auto_unroll_max_step = 64}).to_string(),
            "pragma(stage=3, iter=1, auto_unroll_max_step=64)");
}

}  // namespace
}  // namespace tessera
