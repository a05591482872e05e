// Control steps (CallKind): a model's If and Loop run on the device as
// jumps and copies between its kernel calls. The package round trip and its
// checks, the memory plan across a loop, and real runs of both.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/graph_executor.h"
#include "runtime/memory_plan.h"
#include "runtime/package.h"
#include "tests/runtime/package_bytes.h"
#include "tests/runtime/test_files.h"

namespace tessera::runtime {
namespace {

// Built from testdata/graph_kernels.c by tests/runtime/CMakeLists.txt.
const std::string kGraphKernels = TESSERA_TEST_GRAPH_KERNELS_PATH;

using test::read_file;

std::string i64_bytes(int64_t v) {
  return std::string(reinterpret_cast<const char*>(&v), sizeof v);
}

KernelCall step(CallKind kind, std::vector<int32_t> args, int32_t target = 0) {
  KernelCall c;
  c.kind = kind;
  c.args = std::move(args);
  c.target = target;
  return c;
}

// y = x doubled n times (a Loop on data: the trip count is an input), and
// z[i] = x doubled i + 1 times for each iteration i (its scan output, three
// slots).
PackageContents doubling_loop() {
  PackageContents c;
  c.target = "llvm -mtriple=x86_64-linux-gnu";
  c.library = read_file(kGraphKernels);
  c.values = {
      {"x", ValueKind::kInput, DType::f32(), {4}, ""},                 // 0
      {"n", ValueKind::kInput, DType::i64(), {}, ""},                  // 1
      {"zero", ValueKind::kConstant, DType::i64(), {}, i64_bytes(0)},  // 2
      {"i", ValueKind::kIntermediate, DType::i64(), {}, ""},           // 3
      {"go", ValueKind::kIntermediate, DType::boolean(), {}, ""},      // 4
      {"acc", ValueKind::kIntermediate, DType::f32(), {4}, ""},        // 5
      {"acc2", ValueKind::kIntermediate, DType::f32(), {4}, ""},       // 6
      {"i2", ValueKind::kIntermediate, DType::i64(), {}, ""},          // 7
      {"y", ValueKind::kOutput, DType::f32(), {4}, ""},                // 8
      {"z", ValueKind::kOutput, DType::f32(), {3, 4}, ""},             // 9
  };
  c.calls = {
      step(CallKind::kCopy, {2, 3}),          // 0: i = 0
      step(CallKind::kCopy, {0, 5}),          // 1: acc = x
      {"less_i64", {3, 1, 4}},                // 2: go = i < n
      step(CallKind::kJumpUnless, {4}, 10),   // 3
      {"double_4", {5, 6}},                   // 4: the body
      step(CallKind::kCopySlice, {6, 9, 3}),  // 5: z[i] = acc2
      {"add_one_i64", {3, 7}},                // 6
      step(CallKind::kCopy, {7, 3}),          // 7: i = i + 1
      step(CallKind::kCopy, {6, 5}),          // 8: acc = acc2
      step(CallKind::kJump, {}, 2),           // 9
      step(CallKind::kCopy, {5, 8}),          // 10: y = acc
  };
  c.inputs = {0, 1};
  c.outputs = {8, 9};
  return c;
}

// y = c ? 2x : -x (an If on data: only the branch taken runs).
PackageContents branch() {
  PackageContents c;
  c.target = "llvm -mtriple=x86_64-linux-gnu";
  c.library = read_file(kGraphKernels);
  c.values = {
      {"x", ValueKind::kInput, DType::f32(), {4}, ""},         // 0
      {"c", ValueKind::kInput, DType::boolean(), {}, ""},      // 1
      {"t", ValueKind::kIntermediate, DType::f32(), {4}, ""},  // 2
      {"e", ValueKind::kIntermediate, DType::f32(), {4}, ""},  // 3
      {"y", ValueKind::kOutput, DType::f32(), {4}, ""},        // 4
  };
  c.calls = {
      step(CallKind::kJumpUnless, {1}, 4),  // 0
      {"double_4", {0, 2}},                 // 1: then
      step(CallKind::kCopy, {2, 4}),        // 2
      step(CallKind::kJump, {}, 6),         // 3
      {"negate_4", {0, 3}},                 // 4: else
      step(CallKind::kCopy, {3, 4}),        // 5
  };
  c.inputs = {0, 1};
  c.outputs = {4};
  return c;
}

ExecutorOptions options() {
  ExecutorOptions o;
  o.num_threads = 1;
  o.temp_dir = ::testing::TempDir();
  return o;
}

NDArray floats(std::vector<float> v) {
  NDArray a = NDArray::create({static_cast<int64_t>(v.size())}, DType::f32()).value();
  for (size_t i = 0; i < v.size(); ++i) a.data<float>()[i] = v[i];
  return a;
}

template <typename T>
NDArray scalar(T v, DType dtype) {
  NDArray a = NDArray::create({}, dtype).value();
  *static_cast<T*>(a.raw_data()) = v;
  return a;
}

std::vector<float> values_of(const NDArray& a) {
  return std::vector<float>(a.data<float>(), a.data<float>() + a.nbytes() / 4);
}

TEST(ControlSteps, RoundTripInFormatFive) {
  for (const PackageContents& c : {doubling_loop(), branch()}) {
    auto bytes = write_package_bytes(c);
    ASSERT_TRUE(bytes.is_ok()) << bytes.status().to_string();
    EXPECT_EQ((*bytes)[8], 5);
    auto back = read_package_bytes(*bytes);
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    EXPECT_EQ(*back, c);
  }
}

TEST(ControlSteps, EveryTruncationIsAParseError) {
  const std::string bytes = write_package_bytes(branch()).value();
  for (size_t n = 0; n < bytes.size(); n += 7)
    ASSERT_EQ(read_package_bytes(std::string_view(bytes).substr(0, n)).status().code(), ErrorCode::kParseError) << n;
}

TEST(ControlSteps, MalformedStepsAreRefusedNamingTheCall) {
  struct Case {
    const char* what;
    void (*spoil)(PackageContents&);
    const char* message;
  };
  const Case cases[] = {
      {"target past the end", [](PackageContents& c) { c.calls[3].target = 12; }, "call 3 ('jump_unless'): target 12"},
      {"negative target", [](PackageContents& c) { c.calls[9].target = -1; }, "call 9 ('jump'): target -1"},
      {"copy of another size",
       [](PackageContents& c) {
         c.calls[1].args = {0, 3};
       },
       "copies 16 bytes into 8"},
      {"a copy into a constant",
       [](PackageContents& c) {
         c.calls[0].args = {3, 2};
       },
       "writes constant value 2"},
      {"a copy into an input",
       [](PackageContents& c) {
         c.calls[1].args = {5, 0};
       },
       "writes input value 0"},
      {"a condition of four bytes",
       [](PackageContents& c) {
         c.calls[3].args = {7};
         c.values[7].dtype = DType::f32();
       },
       "not a one-byte scalar"},
      {"a slice that does not divide",
       [](PackageContents& c) {
         c.values[9].shape = {3, 3};
       },
       "do not hold whole slices"},
      {"a float index",
       [](PackageContents& c) {
         c.calls[5].args = {6, 9, 0};
       },
       "index is not an int64 scalar"},
      {"arguments missing", [](PackageContents& c) { c.calls[7].args = {7}; }, "takes 2 arguments, has 1"},
      {"a symbol on a step", [](PackageContents& c) { c.calls[0].symbol = "k"; }, "names no symbol"},
      {"a target on a copy", [](PackageContents& c) { c.calls[0].target = 2; }, "only a jump has a target"},
  };
  for (const Case& k : cases) {
    PackageContents c = doubling_loop();
    k.spoil(c);
    const Status s = validate_package(c);
    EXPECT_EQ(s.code(), ErrorCode::kParseError) << k.what;
    EXPECT_NE(s.message().find(k.message), std::string::npos) << k.what << ": " << s.message();
  }
}

TEST(ControlSteps, AnUnknownKindInTheFileIsAParseError) {
  std::string bytes = write_package_bytes(branch()).value();
  // The first call's kind byte follows its symbol (empty: 4 bytes), its
  // argument count and its one argument.
  const std::string needle = std::string(4, '\0') + std::string("\x01\0\0\0\x01\0\0\0\x03", 9);
  const size_t at = bytes.find(needle);
  ASSERT_NE(at, std::string::npos);
  bytes[at + needle.size() - 1] = 9;
  test::fix_checksum(&bytes);
  auto r = read_package_bytes(bytes);
  EXPECT_EQ(r.status().code(), ErrorCode::kParseError);
  EXPECT_NE(r.status().message().find("unknown kind 9"), std::string::npos) << r.status().message();
}

// Inside a loop a value lives through every iteration: acc (written before
// the loop, read by its first call) must not share bytes with acc2 or i2,
// written later in the body.
TEST(ControlSteps, ValuesOfALoopLiveThroughTheWholeLoop) {
  const PackageContents c = doubling_loop();
  MemoryPlan plan = plan_graph_memory(c).value();
  const auto overlap = [&](int a, int b) {
    const int64_t ea = plan.offsets[a] + c.values[a].nbytes(), eb = plan.offsets[b] + c.values[b].nbytes();
    return plan.offsets[a] < eb && plan.offsets[b] < ea;
  };
  for (int a : {3, 4, 5, 6, 7})
    for (int b : {3, 4, 5, 6, 7}) {
      if (a == b) continue;
      EXPECT_FALSE(overlap(a, b)) << c.values[a].name << " and " << c.values[b].name;
    }
}

TEST(ControlSteps, ALoopOnDataRunsAsManyIterationsAsItsInputSays) {
  auto exec = GraphExecutor::load(doubling_loop(), options());
  ASSERT_TRUE(exec.is_ok()) << exec.status().to_string();
  for (int64_t n : {3, 0, 2}) {
    ASSERT_TRUE((*exec)->set_input("x", floats({1, -2, 0.5f, 3})).is_ok());
    ASSERT_TRUE((*exec)->set_input("n", scalar<int64_t>(n, DType::i64())).is_ok());
    ASSERT_TRUE((*exec)->run().is_ok());
    const float f = static_cast<float>(1 << n);
    EXPECT_EQ(values_of((*exec)->get_output("y").value()), (std::vector<float>{f, -2 * f, 0.5f * f, 3 * f})) << n;
    const std::vector<float> z = values_of((*exec)->get_output("z").value());
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(z[static_cast<size_t>(4 * i)], static_cast<float>(2 << i)) << n;
  }
  // A fourth iteration would write past the scan output: the run fails, naming the step.
  ASSERT_TRUE((*exec)->set_input("n", scalar<int64_t>(4, DType::i64())).is_ok());
  const Status s = (*exec)->run();
  EXPECT_EQ(s.code(), ErrorCode::kRuntimeError);
  EXPECT_NE(s.message().find("call 5 of 11 ('copy_slice') writes slot 3 of a value holding 3"), std::string::npos)
      << s.message();
}

TEST(ControlSteps, ABranchOnDataRunsOnlyTheBranchTaken) {
  auto exec = GraphExecutor::load(branch(), options());
  ASSERT_TRUE(exec.is_ok()) << exec.status().to_string();
  ASSERT_TRUE((*exec)->set_input("x", floats({1, -2, 0.5f, 3})).is_ok());
  for (bool c : {true, false, true}) {
    ASSERT_TRUE((*exec)->set_input("c", scalar<uint8_t>(c, DType::boolean())).is_ok());
    auto spans = (*exec)->run_traced();
    ASSERT_TRUE(spans.is_ok()) << spans.status().to_string();
    std::vector<size_t> ran;
    for (const CallSpan& s : *spans) ran.push_back(s.call);
    EXPECT_EQ(ran, c ? std::vector<size_t>({0, 1, 2, 3}) : std::vector<size_t>({0, 4, 5}));
    EXPECT_EQ(values_of((*exec)->get_output("y").value()),
              c ? std::vector<float>({2, -4, 1, 6}) : std::vector<float>({-1, 2, -0.5f, -3}));
  }
  // run_with reads the caller's memory through the same steps.
  alignas(64) float x[16] = {4, 3, 2, 1};
  alignas(64) uint8_t cond[64] = {0};
  alignas(64) float y[16] = {};
  ASSERT_TRUE((*exec)->run_with({x, cond}, {y}).is_ok());
  EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{-4, -3, -2, -1}));
}

TEST(ControlSteps, AProfileSumsAStepOverItsIterations) {
  auto exec = GraphExecutor::load(doubling_loop(), options());
  ASSERT_TRUE(exec.is_ok()) << exec.status().to_string();
  ASSERT_TRUE((*exec)->set_input("x", floats({1, 2, 3, 4})).is_ok());
  ASSERT_TRUE((*exec)->set_input("n", scalar<int64_t>(3, DType::i64())).is_ok());
  auto profile = (*exec)->profile(3);
  ASSERT_TRUE(profile.is_ok()) << profile.status().to_string();
  ASSERT_EQ(profile->size(), 11u);
  EXPECT_EQ((*profile)[4].symbol, "double_4");
  EXPECT_EQ((*profile)[5].symbol, "copy_slice");
  EXPECT_GT((*profile)[4].median_s, 0.0);
}

}  // namespace
}  // namespace tessera::runtime
