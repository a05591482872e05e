#include "runtime/cold_arguments.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "runtime/time_evaluator.h"

namespace tessera::runtime {
namespace {

std::vector<NDArray> arrays_of(const std::vector<int64_t>& sizes) {
  std::vector<NDArray> arrays;
  for (size_t i = 0; i < sizes.size(); ++i) {
    arrays.push_back(NDArray::create({sizes[i]}, DType::f32()).value());
    arrays.back().fill_random(i + 1);
  }
  return arrays;
}

TEST(ColdArguments, CopiesTheColdInputsUntilTheyReachTheBytesAsked) {
  std::vector<NDArray> arrays = arrays_of({25, 1000, 25});  // 100 bytes cold, 4000 shared, 100 out
  auto made = ColdArguments::make(arrays, {0}, 1000);
  ASSERT_TRUE(made.is_ok()) << made.status().to_string();
  const auto& sets = made->sets();
  ASSERT_EQ(sets.size(), 10u);  // 10 x 100 bytes
  EXPECT_EQ(sets[0][0], arrays[0].raw_data()) << "the first list is the arrays themselves";
  std::set<void*> copies;
  for (const auto& set : sets) {
    ASSERT_EQ(set.size(), 3u);
    copies.insert(set[0]);
    EXPECT_EQ(set[1], arrays[1].raw_data());
    EXPECT_EQ(set[2], arrays[2].raw_data());
    EXPECT_EQ(std::memcmp(set[0], arrays[0].raw_data(), 100), 0) << "a copy has the same bytes";
  }
  EXPECT_EQ(copies.size(), 10u) << "every list reads its own copy";
}

TEST(ColdArguments, NoColdInputsMeansOneList) {
  std::vector<NDArray> arrays = arrays_of({8, 8});
  auto made = ColdArguments::make(arrays, {});
  ASSERT_TRUE(made.is_ok());
  ASSERT_EQ(made->sets().size(), 1u);
  EXPECT_EQ(made->sets()[0][1], arrays[1].raw_data());
}

TEST(ColdArguments, TinyInputsStopAtTheMostLists) {
  std::vector<NDArray> arrays = arrays_of({1, 1, 1});
  auto made = ColdArguments::make(arrays, {0, 1});
  ASSERT_TRUE(made.is_ok());
  EXPECT_EQ(made->sets().size(), static_cast<size_t>(kMaxColdArgumentSets));
}

TEST(ColdArguments, ABadIndexIsAnError) {
  std::vector<NDArray> arrays = arrays_of({4, 4});
  auto out_of_range = ColdArguments::make(arrays, {2});
  EXPECT_EQ(out_of_range.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(out_of_range.status().message().find("out of range"), std::string::npos);
  auto twice = ColdArguments::make(arrays, {0, 0});
  EXPECT_EQ(twice.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(twice.status().message().find("given twice"), std::string::npos);
}

// Records which copy of its first argument each call reads.
std::vector<void*> g_seen;
int32_t record_first(void** args) {
  g_seen.push_back(args[0]);
  return 0;
}

TEST(ColdArguments, TheTimerCyclesThroughTheListsOnePerCall) {
  std::vector<NDArray> arrays = arrays_of({16, 16});
  auto made = ColdArguments::make(arrays, {0}, 3 * 64);  // three lists
  ASSERT_TRUE(made.is_ok());
  ASSERT_EQ(made->sets().size(), 3u);
  g_seen.clear();
  TimingOptions options;
  options.number = 2;
  options.repeat = 4;
  ASSERT_TRUE(time_kernel(&record_first, made->sets(), options, nullptr).is_ok());
  ASSERT_EQ(g_seen.size(), 1u + 2 * 4);  // the warm-up, then number x repeat
  for (size_t i = 0; i < g_seen.size(); ++i) EXPECT_EQ(g_seen[i], made->sets()[i % 3][0]) << "call " << i;
  EXPECT_EQ(time_kernel(&record_first, std::vector<std::vector<void*>>{}, options, nullptr).status().code(),
            ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::runtime
