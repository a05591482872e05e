// A package built for another architecture fails at load naming both
// architectures, instead of with dlopen's "wrong ELF class" or similar.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "runtime/graph_executor.h"

namespace tessera::runtime {
namespace {

PackageContents relu_package(const std::string& target) {
  std::ifstream in(TESSERA_TEST_GRAPH_KERNELS_PATH, std::ios::binary);
  PackageContents c;
  c.target = target;
  c.library.assign(std::istreambuf_iterator<char>(in), {});
  c.values = {{"x", ValueKind::kInput, DType::f32(), {64}, ""}, {"y", ValueKind::kOutput, DType::f32(), {64}, ""}};
  c.calls = {{"relu_64_parallel", {0, 1}}};
  c.inputs = {0};
  c.outputs = {1};
  return c;
}

TEST(Architecture, ThisMachinesPackageLoads) {
  auto exec = GraphExecutor::load(relu_package("llvm -mtriple=x86_64-linux-gnu"));
  EXPECT_TRUE(exec.is_ok()) << exec.status().to_string();
}

TEST(Architecture, AnotherMachinesPackageSaysWhichMachines) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the test rewrites an x86_64 library's ELF machine";
#endif
  PackageContents c = relu_package("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72");
  ASSERT_GT(c.library.size(), 20u);
  c.library[18] = static_cast<char>(183);  // EM_AARCH64, little-endian
  c.library[19] = 0;
  auto exec = GraphExecutor::load(c);
  ASSERT_FALSE(exec.is_ok());
  EXPECT_EQ(exec.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(exec.status().message().find("built for aarch64-linux-gnu; this machine is x86_64"), std::string::npos)
      << exec.status().to_string();

  // Without a triple in the target string, the library's machine names it.
  c.target = "llvm";
  exec = GraphExecutor::load(c);
  ASSERT_FALSE(exec.is_ok());
  EXPECT_NE(exec.status().message().find("built for aarch64; this machine is x86_64"), std::string::npos)
      << exec.status().to_string();
}

}  // namespace
}  // namespace tessera::runtime
