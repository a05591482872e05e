// Packages timed against each other in alternating rounds, in this process:
// the shapes of what comes back, and the errors that must name their cause.
#include "runtime/package_timing.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/runtime/test_files.h"

namespace tessera::runtime {
namespace {

// Built from testdata/graph_kernels.c by tests/runtime/CMakeLists.txt.
const std::string kGraphKernels = TESSERA_TEST_GRAPH_KERNELS_PATH;

using test::read_file;

// y = relu(x @ w + b) as graph_kernels.c computes it, with `relus` more
// relus of y in place (a package that does more work than another).
PackageContents tiny_package(int relus = 0) {
  PackageContents c;
  c.target = "llvm -mtriple=x86_64-linux-gnu";
  c.library = read_file(kGraphKernels);
  NDArray w = NDArray::create({8, 16}, DType::f32()).value(), b = NDArray::create({16}, DType::f32()).value();
  w.fill_random(1);
  b.fill_random(2);
  auto bytes = [](const NDArray& a) {
    return std::string(static_cast<const char*>(a.raw_data()), static_cast<size_t>(a.nbytes()));
  };
  c.values = {
      {"x", ValueKind::kInput, DType::f32(), {4, 8}, ""},            // 0
      {"w", ValueKind::kConstant, DType::f32(), {8, 16}, bytes(w)},  // 1
      {"b", ValueKind::kConstant, DType::f32(), {16}, bytes(b)},     // 2
      {"h", ValueKind::kIntermediate, DType::f32(), {4, 16}, ""},    // 3
      {"z", ValueKind::kIntermediate, DType::f32(), {4, 16}, ""},    // 4
      {"y", ValueKind::kOutput, DType::f32(), {4, 16}, ""},          // 5
  };
  c.calls = {{"matmul_4x8x16", {0, 1, 3}}, {"add_bias_4x16", {3, 2, 4}}, {"relu_64_parallel", {4, 5}}};
  for (int i = 0; i < relus; ++i) c.calls.push_back({"relu_64_parallel", {5, 5}});
  c.inputs = {0};
  c.outputs = {5};
  return c;
}

TEST(PackageTiming, ProfilesEveryCallOfEveryPackage) {
  const PackageContents a = tiny_package(), b = tiny_package(3);
  InProcessPackageTimer timer;
  auto calls = timer.profile_alternately({&a, &b}, 10);
  ASSERT_TRUE(calls.is_ok()) << calls.status().to_string();
  ASSERT_EQ(calls->size(), 2u);
  EXPECT_EQ((*calls)[0].size(), 3u);
  EXPECT_EQ((*calls)[1].size(), 6u);
  for (const std::vector<double>& package : *calls)
    for (double s : package) EXPECT_GT(s, 0.0);
}

TEST(PackageTiming, TimesWholeRunsAgainstTheFirstPackage) {
  const PackageContents a = tiny_package(), b = tiny_package(50);
  InProcessPackageTimer timer;
  auto times = timer.time_alternately({&a, &b}, {.rounds = 5, .round_s = 0.002});
  ASSERT_TRUE(times.is_ok()) << times.status().to_string();
  EXPECT_EQ(times->rounds, 5);
  ASSERT_EQ(times->median_s.size(), 2u);
  ASSERT_EQ(times->ratio_to_first.size(), 2u);
  ASSERT_EQ(times->rounds_slower.size(), 2u);
  EXPECT_EQ(times->ratio_to_first[0], 1.0);
  EXPECT_EQ(times->rounds_slower[0], 0);
  EXPECT_GT(times->median_s[0], 0.0);
  EXPECT_GE(times->rounds_slower[1], 0);
  EXPECT_LE(times->rounds_slower[1], 5);
  // 53 calls against 3: slower whatever the machine's load.
  EXPECT_GT(times->ratio_to_first[1], 1.5);
}

TEST(PackageTiming, ExecutorsLoadedHereTimeLikeThePackages) {
  const PackageContents a = tiny_package();
  auto executors = load_with_random_inputs({&a}, {}, 7);
  ASSERT_TRUE(executors.is_ok()) << executors.status().to_string();
  ASSERT_EQ(executors->size(), 1u);
  auto calls = profile_alternately({executors->front().get()}, 5);
  ASSERT_TRUE(calls.is_ok()) << calls.status().to_string();
  EXPECT_EQ(calls->front().size(), 3u);
}

TEST(PackageTiming, APackageThatDoesNotLoadIsAnErrorNamingItsCall) {
  const PackageContents a = tiny_package();
  PackageContents broken = tiny_package();
  broken.calls[1].symbol = "no_such_kernel";
  InProcessPackageTimer timer;
  auto calls = timer.profile_alternately({&a, &broken}, 5);
  ASSERT_FALSE(calls.is_ok());
  EXPECT_NE(calls.status().message().find("no_such_kernel"), std::string::npos) << calls.status().message();
  auto times = timer.time_alternately({&a, &broken}, {});
  ASSERT_FALSE(times.is_ok());
  EXPECT_NE(times.status().message().find("no_such_kernel"), std::string::npos) << times.status().message();
}

}  // namespace
}  // namespace tessera::runtime
