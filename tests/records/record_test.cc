// Record checks and the canonical JSON form of step lists.
#include "records/record.h"

#include <nlohmann/json.hpp>
#include <random>

#include "test_util.h"

namespace tessera::records {
namespace {

// What canonical_json must agree with: nlohmann's parse and compact dump.
std::string reference(const std::string& text) {
  return nlohmann::json::parse(text).dump();
}

nlohmann::json random_value(std::minstd_rand& rng, int depth) {
  const char* keys[] = {"kind", "stage", "axis", "factors", "a", "b\"q", "k\\ey", "é", ""};
  switch (depth > 3 ? rng() % 5 : rng() % 7) {
    case 0: return static_cast<int64_t>(rng() % 2001) - 1000;
    case 1: return std::ldexp(static_cast<double>(rng() % 100000), -static_cast<int>(rng() % 20));
    case 2: return std::string("s") + std::to_string(rng() % 50) + (rng() % 4 == 0 ? "\n\t\x01" : "");
    case 3: return rng() % 2 == 0;
    case 4: return nullptr;
    case 5: {
      nlohmann::json a = nlohmann::json::array();
      for (unsigned n = rng() % 4; n > 0; --n) a.push_back(random_value(rng, depth + 1));
      return a;
    }
    default: {
      nlohmann::json o = nlohmann::json::object();
      for (unsigned n = rng() % 5; n > 0; --n) o[keys[rng() % std::size(keys)]] = random_value(rng, depth + 1);
      return o;
    }
  }
}

TEST(CanonicalJson, AgreesWithTheReferenceOnRandomValuesInAnyLayout) {
  std::minstd_rand rng(11);
  int fast = 0;
  for (int i = 0; i < 3000; ++i) {
    nlohmann::json v = random_value(rng, 0);
    fast += is_canonical_json(v.dump());
    for (const std::string& text : {v.dump(), v.dump(2), v.dump(-1, ' ', true)}) {
      auto canonical = canonical_json(text, "value");
      ASSERT_TRUE(canonical) << text;
      ASSERT_EQ(*canonical, reference(text)) << text;
    }
  }
  EXPECT_GT(fast, 300) << "the fast path was hardly exercised";
}

TEST(CanonicalJson, FastPathTakesOnlyTheCanonicalForm) {
  EXPECT_TRUE(is_canonical_json(R"([{"axis":0,"factors":[4,8],"kind":"split"}])"));
  EXPECT_TRUE(is_canonical_json(R"({"":null,"a":[true,false,-3,0]})"));
  EXPECT_FALSE(is_canonical_json(R"([ 1])"));           // whitespace
  EXPECT_FALSE(is_canonical_json(R"({"b":1,"a":2})"));  // key order
  EXPECT_FALSE(is_canonical_json(R"({"a":1,"a":2})"));  // duplicate key
  EXPECT_FALSE(is_canonical_json(R"([1.0])"));          // not an integer
  EXPECT_FALSE(is_canonical_json(R"([-0])"));
  EXPECT_FALSE(is_canonical_json(R"([007])"));
  EXPECT_FALSE(is_canonical_json(R"(["a\"b"])"));  // escapes
  EXPECT_FALSE(is_canonical_json(R"([1,])"));
  EXPECT_FALSE(is_canonical_json(R"([1]x)"));
  EXPECT_FALSE(is_canonical_json(""));
}

TEST(CanonicalJson, InvalidJsonIsAnInvalidArgument) {
  for (const char* text : {"", "[", "[1,]", "{\"a\"}", "nul", "[1] [2]", "\"\xff\""})
    EXPECT_EQ(canonical_json(text, "steps").status().code(), ErrorCode::kInvalidArgument) << text;
}

TEST(StepsHash, IsPinnedBecauseDatabasesStoreIt) {
  // Changing these values would make every stored steps_hash stale: measured()
  // and import de-duplication would stop finding old records.
  EXPECT_EQ(steps_hash(""), 6079411770313264786);
  EXPECT_EQ(steps_hash("[]"), 217938891715204003);
  EXPECT_EQ(steps_hash(R"([{"kind":"split"}])"), 7055583925069782485);
  EXPECT_EQ(steps_hash("0123456789abcdef0"), 8979012359742117160);
}

TEST(NormalizeRecord, FillsTheTimestampAndKeepsAnExplicitOne) {
  Record r = testing::ok_record(testing::key_of(1), testing::kTarget, 0.001);
  r.timestamp = 0;
  EXPECT_DOUBLE_EQ(normalize_record(r, 42.0)->timestamp, 42.0);
  r.timestamp = 7;
  EXPECT_DOUBLE_EQ(normalize_record(r, 42.0)->timestamp, 7.0);
}

TEST(NormalizeRecord, ErrorKindMustBeAKebabCaseWord) {
  Record r = testing::error_record(testing::key_of(1), testing::kTarget, "Build Timeout");
  EXPECT_EQ(normalize_record(r, 1).status().code(), ErrorCode::kInvalidArgument);
  r.error_kind = "build-timeout";
  EXPECT_TRUE(normalize_record(r, 1));
}

TEST(SpaceKind, NamesRoundTrip) {
  for (SpaceKind k : {SpaceKind::kKnob, SpaceKind::kSketch, SpaceKind::kManual})
    EXPECT_EQ(parse_space_kind(space_kind_name(k)).value(), k);
  EXPECT_EQ(parse_space_kind("genetic").status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::records
