#include "runtime/graph_executor.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tests/runtime/test_files.h"

namespace tessera::runtime {
namespace {

// Built from testdata/graph_kernels.c by tests/runtime/CMakeLists.txt.
const std::string kGraphKernels = TESSERA_TEST_GRAPH_KERNELS_PATH;

using test::read_file;

std::string to_bytes(const NDArray& a) {
  return std::string(static_cast<const char*>(a.raw_data()), static_cast<size_t>(a.nbytes()));
}

NDArray random_array(std::vector<int64_t> shape, uint64_t seed) {
  NDArray a = NDArray::create(std::move(shape), DType::f32()).value();
  a.fill_random(seed);
  return a;
}

// The model of graph_kernels.c: y = relu(x @ w1 + b1) @ w2, with its weights.
struct TinyModel {
  NDArray w1 = random_array({8, 16}, 1), b1 = random_array({16}, 2), w2 = random_array({16, 4}, 3);

  PackageContents package() const {
    PackageContents c;
    c.target = "llvm -mtriple=x86_64-linux-gnu";
    c.library = read_file(kGraphKernels);
    c.values = {
        {"x", ValueKind::kInput, DType::f32(), {4, 8}, ""},                 // 0
        {"w1", ValueKind::kConstant, DType::f32(), {8, 16}, to_bytes(w1)},  // 1
        {"b1", ValueKind::kConstant, DType::f32(), {16}, to_bytes(b1)},     // 2
        {"w2", ValueKind::kConstant, DType::f32(), {16, 4}, to_bytes(w2)},  // 3
        {"h1", ValueKind::kIntermediate, DType::f32(), {4, 16}, ""},        // 4
        {"h2", ValueKind::kIntermediate, DType::f32(), {4, 16}, ""},        // 5
        {"h3", ValueKind::kIntermediate, DType::f32(), {4, 16}, ""},        // 6
        {"y", ValueKind::kOutput, DType::f32(), {4, 4}, ""},                // 7
    };
    c.calls = {{"matmul_4x8x16", {0, 1, 4}},
               {"add_bias_4x16", {4, 2, 5}},
               {"relu_64_parallel", {5, 6}},
               {"matmul_4x16x4", {6, 3, 7}}};
    c.inputs = {0};
    c.outputs = {7};
    return c;
  }

  // The same computation in plain C++.
  std::vector<float> expected(const NDArray& x) const {
    const float* xp = x.data<float>();
    std::vector<float> h(64), y(16, 0.0f);
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 16; ++j) {
        float acc = 0.0f;
        for (int k = 0; k < 8; ++k) acc += xp[i * 8 + k] * w1.data<float>()[k * 16 + j];
        acc += b1.data<float>()[j];
        h[i * 16 + j] = acc > 0.0f ? acc : 0.0f;
      }
    }
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 4; ++j) {
        for (int k = 0; k < 16; ++k) y[i * 4 + j] += h[i * 16 + k] * w2.data<float>()[k * 4 + j];
      }
    }
    return y;
  }
};

ExecutorOptions two_threads() {
  ExecutorOptions options;
  options.num_threads = 2;
  options.temp_dir = ::testing::TempDir();
  return options;
}

void expect_output_near(GraphExecutor& exec, const std::vector<float>& expected) {
  auto y = exec.get_output("y");
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  ASSERT_EQ(y->shape(), (std::vector<int64_t>{4, 4}));
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(y->data<float>()[i], expected[i], 1e-4f * (1.0f + std::abs(expected[i]))) << i;
  }
}

TEST(GraphExecutor, RunsAChainOfRealKernelsFromAPackageFile) {
  TinyModel model;
  const std::string path = ::testing::TempDir() + "/tiny_" + std::to_string(::getpid()) + ".tsr";
  ASSERT_TRUE(write_package(model.package(), path).is_ok());
  auto exec = GraphExecutor::load_file(path, two_threads());
  std::remove(path.c_str());
  ASSERT_TRUE(exec.is_ok()) << exec.status().to_string();
  EXPECT_EQ((*exec)->input_names(), std::vector<std::string>{"x"});
  EXPECT_EQ((*exec)->output_names(), std::vector<std::string>{"y"});
  EXPECT_EQ((*exec)->num_threads(), 2);
  ASSERT_EQ((*exec)->input_info().size(), 1u);
  EXPECT_EQ((*exec)->input_info()[0].shape, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ((*exec)->output_info()[0].dtype, DType::f32());

  for (uint64_t seed : {10, 11}) {  // a second run with new input reuses the buffers
    NDArray x = random_array({4, 8}, seed);
    ASSERT_TRUE((*exec)->set_input("x", x).is_ok());
    ASSERT_TRUE((*exec)->run().is_ok());
    expect_output_near(**exec, model.expected(x));
  }
}

TEST(GraphExecutor, ReportsPeakMemoryBelowTheSumOfIntermediates) {
  auto exec = GraphExecutor::load(TinyModel().package(), two_threads());
  ASSERT_TRUE(exec.is_ok()) << exec.status().to_string();
  // h1, h2, h3 are 256 bytes each; h1 is dead when h3 is written.
  EXPECT_EQ((*exec)->intermediate_bytes_total(), 3 * 256);
  EXPECT_EQ((*exec)->peak_memory_bytes(), 2 * 256);
}

TEST(GraphExecutor, WrongInputShapeIsAnInvalidArgument) {
  auto exec = GraphExecutor::load(TinyModel().package(), two_threads());
  ASSERT_TRUE(exec.is_ok());
  Status s = (*exec)->set_input("x", random_array({8, 4}, 1));
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("float32[4, 8]"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("float32[8, 4]"), std::string::npos) << s.message();
  NDArray ints = NDArray::create({4, 8}, DType::i32()).value();
  EXPECT_EQ((*exec)->set_input("x", ints).code(), ErrorCode::kInvalidArgument);
}

TEST(GraphExecutor, UnknownInputOrOutputIsNotFound) {
  auto exec = GraphExecutor::load(TinyModel().package(), two_threads());
  ASSERT_TRUE(exec.is_ok());
  Status s = (*exec)->set_input("nope", random_array({4, 8}, 1));
  EXPECT_EQ(s.code(), ErrorCode::kNotFound);
  EXPECT_NE(s.message().find("'x'"), std::string::npos) << s.message();
  EXPECT_EQ((*exec)->get_output("nope").status().code(), ErrorCode::kNotFound);
}

TEST(GraphExecutor, RunWithAnUnsetInputIsAnError) {
  auto exec = GraphExecutor::load(TinyModel().package(), two_threads());
  ASSERT_TRUE(exec.is_ok());
  Status s = (*exec)->run();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'x'"), std::string::npos);
  EXPECT_EQ((*exec)->get_output("y").status().code(), ErrorCode::kInvalidArgument);
}

TEST(GraphExecutor, MissingSymbolIsNotFoundAtLoad) {
  PackageContents c = TinyModel().package();
  c.calls[2].symbol = "relu_that_was_never_built";
  auto exec = GraphExecutor::load(c, two_threads());
  EXPECT_EQ(exec.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(exec.status().message().find("relu_that_was_never_built"), std::string::npos);
  EXPECT_NE(exec.status().message().find("call 2"), std::string::npos) << exec.status().message();
}

TEST(GraphExecutor, CorruptedPackageFileIsAParseErrorNamingTheFile) {
  const std::string path = ::testing::TempDir() + "/bad_" + std::to_string(::getpid()) + ".tsr";
  std::string bytes = write_package_bytes(TinyModel().package()).value();
  bytes.resize(bytes.size() / 2);
  std::ofstream(path, std::ios::binary) << bytes;
  auto exec = GraphExecutor::load_file(path, two_threads());
  std::remove(path.c_str());
  EXPECT_EQ(exec.status().code(), ErrorCode::kParseError);
  EXPECT_NE(exec.status().message().find(path), std::string::npos) << exec.status().message();
  EXPECT_EQ(GraphExecutor::load_file(path).status().code(), ErrorCode::kNotFound);
}

TEST(GraphExecutor, LibraryThatDoesNotLoadIsAnIOError) {
  PackageContents c = TinyModel().package();
  c.library = "not an ELF file";
  EXPECT_EQ(GraphExecutor::load(c, two_threads()).status().code(), ErrorCode::kIOError);
}

TEST(GraphExecutor, MissingExternalBackendLibraryIsNotFoundNamingIt) {
  PackageContents c = TinyModel().package();
  c.externals.push_back(ExternalModule{"vendorblas", "c-source", "libtessera_no_such_vendor.so.7"});
  auto exec = GraphExecutor::load(c, two_threads());
  EXPECT_EQ(exec.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(exec.status().message().find("vendorblas"), std::string::npos) << exec.status().message();
  EXPECT_NE(exec.status().message().find("libtessera_no_such_vendor.so.7"), std::string::npos);
}

TEST(GraphExecutor, InvalidPackageIsRejectedAtLoad) {
  PackageContents c = TinyModel().package();
  c.calls[0].args[2] = 99;
  EXPECT_EQ(GraphExecutor::load(c, two_threads()).status().code(), ErrorCode::kParseError);
}

// A call that does not fit its kernel's argument table (c_abi.h) is refused
// at load: before, one argument fewer made the kernel read a pointer past
// the call's, and a smaller output let it write past the buffer.
TEST(GraphExecutor, ACallThatDoesNotFitItsKernelIsRefusedAtLoad) {
  PackageContents fewer = TinyModel().package();
  fewer.calls[0].args = {0, 1};
  auto exec = GraphExecutor::load(fewer, two_threads());
  EXPECT_EQ(exec.status().code(), ErrorCode::kParseError);
  EXPECT_NE(exec.status().message().find("call 0 of the graph: kernel 'matmul_4x8x16' takes 3 arguments, the call "
                                         "gives 2"),
            std::string::npos)
      << exec.status().message();
  PackageContents smaller = TinyModel().package();
  smaller.values[7].shape = {2, 4};
  exec = GraphExecutor::load(smaller, two_threads());
  EXPECT_EQ(exec.status().code(), ErrorCode::kParseError);
  EXPECT_NE(exec.status().message().find("call 3 of the graph: kernel 'matmul_4x16x4': argument 2 spans 64 bytes, "
                                         "its value 'y' 32"),
            std::string::npos)
      << exec.status().message();
}

// A library cut short is refused before dlopen maps it (which died of
// SIGBUS and left its temporary file behind).
TEST(GraphExecutor, ATruncatedLibraryIsRefusedBeforeDlopenAndLeavesNoFile) {
  const std::string library = read_file(kGraphKernels);
  const std::string dir = ::testing::TempDir() + "/truncated_" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  ExecutorOptions options = two_threads();
  options.temp_dir = dir;
  for (size_t n : {size_t{100}, library.size() / 4, library.size() / 2, library.size() * 3 / 4, library.size() - 1}) {
    PackageContents c = TinyModel().package();
    c.library = library.substr(0, n);
    auto exec = GraphExecutor::load(c, options);
    EXPECT_EQ(exec.status().code(), ErrorCode::kIOError) << n;
    EXPECT_NE(exec.status().message().find("truncated?"), std::string::npos) << n << ": " << exec.status().message();
  }
  EXPECT_EQ(::rmdir(dir.c_str()), 0) << "a temporary file was left in " << dir;
}

TEST(GraphExecutor, FailingKernelIsARuntimeErrorNamingTheCall) {
  PackageContents c = TinyModel().package();
  c.calls.insert(c.calls.begin() + 1, KernelCall{"graph_fail_with_5", {4}});
  auto exec = GraphExecutor::load(c, two_threads());
  ASSERT_TRUE(exec.is_ok()) << exec.status().to_string();
  ASSERT_TRUE((*exec)->set_input("x", random_array({4, 8}, 1)).is_ok());
  Status s = (*exec)->run();
  EXPECT_EQ(s.code(), ErrorCode::kRuntimeError);
  EXPECT_NE(s.message().find("call 1"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("graph_fail_with_5"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("status 5"), std::string::npos) << s.message();
}

TEST(GraphExecutor, BenchmarkGivesTheMedianOfTimedRuns) {
  TinyModel model;
  auto exec = GraphExecutor::load(model.package(), two_threads());
  ASSERT_TRUE(exec.is_ok());
  NDArray x = random_array({4, 8}, 5);
  ASSERT_TRUE((*exec)->set_input("x", x).is_ok());
  auto timing = (*exec)->benchmark(2, 5);
  ASSERT_TRUE(timing.is_ok()) << timing.status().to_string();
  EXPECT_EQ(timing->costs_s.size(), 5u);
  EXPECT_GT(timing->median_s, 0.0);
  EXPECT_LE(timing->min_s, timing->median_s);
  expect_output_near(**exec, model.expected(x));
  EXPECT_EQ((*exec)->benchmark(0, 0).status().code(), ErrorCode::kInvalidArgument);
}

TEST(GraphExecutor, GraphWithoutCallsNeedsNoLibrary) {
  PackageContents c;
  c.values = {{"x", ValueKind::kInput, DType::f32(), {2}, ""}};
  c.inputs = {0};
  auto exec = GraphExecutor::load(c, two_threads());
  ASSERT_TRUE(exec.is_ok()) << exec.status().to_string();
  ASSERT_TRUE((*exec)->set_input("x", random_array({2}, 1)).is_ok());
  EXPECT_TRUE((*exec)->run().is_ok());
  EXPECT_EQ((*exec)->peak_memory_bytes(), 0);
}

TEST(GraphExecutor, RunWithReadsAndWritesTheCallersMemory) {
  TinyModel model;
  auto exec = GraphExecutor::load(model.package(), two_threads());
  ASSERT_TRUE(exec.is_ok()) << exec.status().to_string();
  NDArray x = random_array({4, 8}, 12);
  NDArray y = NDArray::create({4, 4}, DType::f32()).value();
  ASSERT_TRUE((*exec)->run_with({x.raw_data()}, {y.raw_data()}).is_ok());
  const std::vector<float> expected = model.expected(x);
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(y.data<float>()[i], expected[i], 1e-4f * (1.0f + std::abs(expected[i]))) << i;
  // The executor's own buffers were not used: x was never set, y never written.
  EXPECT_EQ((*exec)->run().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ((*exec)->get_output("y").status().code(), ErrorCode::kInvalidArgument);
  // And the pointers were not kept: a later run() uses the executor's buffers.
  NDArray x2 = random_array({4, 8}, 13);
  ASSERT_TRUE((*exec)->set_input("x", x2).is_ok());
  ASSERT_TRUE((*exec)->run().is_ok());
  expect_output_near(**exec, model.expected(x2));
  // A null output keeps the executor's buffer, which get_output then reads.
  ASSERT_TRUE((*exec)->run_with({x.raw_data()}, {nullptr}).is_ok());
  expect_output_near(**exec, expected);
}

// TinyModel with a state: s_next = s + b1, the state [4, 16] carried from
// call to call beside y.
PackageContents stateful_package(const TinyModel& model) {
  PackageContents c = model.package();
  c.values.push_back({"s", ValueKind::kInput, DType::f32(), {4, 16}, ""});        // 8
  c.values.push_back({"s_next", ValueKind::kOutput, DType::f32(), {4, 16}, ""});  // 9
  c.calls.push_back({"add_bias_4x16", {8, 2, 9}});
  c.inputs = {0, 8};
  c.outputs = {7, 9};
  return c;
}

// A carried state: each run's s_next is the next run's s, with no set_input
// between them; get_output gives each run's own output; set_input replaces
// the state; y is unaffected.
TEST(GraphExecutor, ACarriedStateFeedsTheNextRun) {
  TinyModel model;
  auto exec = GraphExecutor::load(stateful_package(model), two_threads());
  ASSERT_TRUE(exec.is_ok()) << exec.status().to_string();
  ASSERT_TRUE((*exec)->carry("s_next", "s").is_ok());
  NDArray x = random_array({4, 8}, 9);
  NDArray zeros = NDArray::create({4, 16}, DType::f32()).value();
  ASSERT_TRUE((*exec)->set_input("x", x).is_ok());
  ASSERT_TRUE((*exec)->set_input("s", zeros).is_ok());
  const float* b1 = model.b1.data<float>();
  auto expect_state = [&](float base, float steps) {
    auto s = (*exec)->get_output("s_next");
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    for (int i = 0; i < 64; ++i) EXPECT_NEAR(s->data<float>()[i], base + steps * b1[i % 16], 1e-5f) << i;
  };
  for (int run = 1; run <= 5; ++run) {
    ASSERT_TRUE((*exec)->run().is_ok());
    expect_state(0.0f, static_cast<float>(run));
    expect_output_near(**exec, model.expected(x));
  }
  NDArray ones = NDArray::create({4, 16}, DType::f32()).value();
  for (int i = 0; i < 64; ++i) ones.data<float>()[i] = 1.0f;
  ASSERT_TRUE((*exec)->set_input("s", ones).is_ok());
  ASSERT_TRUE((*exec)->run().is_ok());
  expect_state(1.0f, 1.0f);
  ASSERT_TRUE((*exec)->run().is_ok());
  expect_state(1.0f, 2.0f);
}

TEST(GraphExecutor, CarryingWhatCannotBeCarriedIsRefused) {
  TinyModel model;
  auto exec = GraphExecutor::load(stateful_package(model), two_threads());
  ASSERT_TRUE(exec.is_ok()) << exec.status().to_string();
  EXPECT_EQ((*exec)->carry("nope", "s").code(), ErrorCode::kNotFound);
  EXPECT_EQ((*exec)->carry("s_next", "nope").code(), ErrorCode::kNotFound);
  const Status shape = (*exec)->carry("y", "s");
  EXPECT_EQ(shape.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(shape.message().find("float32[4, 4]"), std::string::npos) << shape.message();
  ASSERT_TRUE((*exec)->carry("s_next", "s").is_ok());
  EXPECT_EQ((*exec)->carry("s_next", "s").code(), ErrorCode::kInvalidArgument);
  NDArray x = random_array({4, 8}, 9), s = random_array({4, 16}, 10), y = random_array({4, 4}, 11);
  NDArray s_next = random_array({4, 16}, 12);
  EXPECT_EQ((*exec)->run_with({x.raw_data(), s.raw_data()}, {y.raw_data(), s_next.raw_data()}).code(),
            ErrorCode::kInvalidArgument);
}

TEST(GraphExecutor, RunWithRefusesMisalignedPointersAndWrongCounts) {
  auto exec = GraphExecutor::load(TinyModel().package(), two_threads());
  ASSERT_TRUE(exec.is_ok());
  NDArray x = NDArray::create({4 * 8 + 4}, DType::f32()).value();
  NDArray y = NDArray::create({4 * 4}, DType::f32()).value();
  Status misaligned = (*exec)->run_with({x.data<float>() + 1}, {y.raw_data()});
  EXPECT_EQ(misaligned.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(misaligned.message().find("'x' is not 64-byte aligned"), std::string::npos) << misaligned.message();
  EXPECT_EQ((*exec)->run_with({}, {y.raw_data()}).code(), ErrorCode::kInvalidArgument);
  Status unset = (*exec)->run_with({nullptr}, {y.raw_data()});
  EXPECT_NE(unset.message().find("'x' was never set"), std::string::npos) << unset.message();
}

}  // namespace
}  // namespace tessera::runtime
