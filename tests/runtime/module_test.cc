#include "runtime/module.h"

#include <dirent.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/ndarray.h"
#include "runtime/thread_pool.h"
#include "tests/runtime/test_files.h"

namespace tessera::runtime {
namespace {

// Built from testdata/test_kernels.c by tests/runtime/CMakeLists.txt.
const std::string kKernels = TESSERA_TEST_KERNELS_PATH;
constexpr int64_t kN = 1024;  // TEST_N in test_kernels.c

using test::read_file;

std::string make_temp_dir() {
  std::string pattern = ::testing::TempDir() + "/tessera_module_XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  const char* dir = ::mkdtemp(buffer.data());
  return dir != nullptr ? dir : "";
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* entry = ::readdir(d)) {
      const std::string name = entry->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(d);
  }
  return names;
}

// a, b = random, c = zeros, and the args array a kernel takes.
struct AddBuffers {
  NDArray a = NDArray::create({kN}, DType::f32()).value();
  NDArray b = NDArray::create({kN}, DType::f32()).value();
  NDArray c = NDArray::create({kN}, DType::f32()).value();
  void* args[3] = {a.raw_data(), b.raw_data(), c.raw_data()};
  AddBuffers() {
    a.fill_random(1);
    b.fill_random(2);
  }
  bool c_is_a_plus_b() const {
    for (int64_t i = 0; i < kN; ++i) {
      if (c.data<float>()[i] != a.data<float>()[i] + b.data<float>()[i]) return false;
    }
    return true;
  }
};

TEST(Module, LoadsAKernelAndRunsIt) {
  auto module = Module::load(kKernels);
  ASSERT_TRUE(module.is_ok()) << module.status().to_string();
  auto add = module->get_kernel("vector_add");
  ASSERT_TRUE(add.is_ok()) << add.status().to_string();
  AddBuffers buffers;
  EXPECT_EQ((*add)(buffers.args), 0);
  EXPECT_TRUE(buffers.c_is_a_plus_b());
}

TEST(Module, ParallelKernelResolvesTheRuntimeAndUsesThePool) {
  auto module = Module::load(kKernels);
  ASSERT_TRUE(module.is_ok()) << module.status().to_string();
  auto add = module->get_kernel("vector_add_parallel");
  ASSERT_TRUE(add.is_ok()) << add.status().to_string();
  ThreadPool pool(3);
  ParallelScope scope(&pool);
  AddBuffers buffers;
  EXPECT_EQ((*add)(buffers.args), 0);
  EXPECT_TRUE(buffers.c_is_a_plus_b());

  auto record = module->get_kernel("record_num_tasks");
  ASSERT_TRUE(record.is_ok());
  std::vector<int32_t> seen(8, -1);
  void* args[] = {seen.data()};
  EXPECT_EQ((*record)(args), 0);
  EXPECT_EQ(seen, (std::vector<int32_t>{3, 3, 3, -1, -1, -1, -1, -1}));
}

TEST(Module, KernelUsesTheRuntimeWorkspace) {
  auto module = Module::load(kKernels);
  ASSERT_TRUE(module.is_ok()) << module.status().to_string();
  auto twice = module->get_kernel("double_via_workspace");
  ASSERT_TRUE(twice.is_ok());
  AddBuffers buffers;
  void* args[] = {buffers.a.raw_data(), buffers.c.raw_data()};
  EXPECT_EQ((*twice)(args), 0);
  for (int64_t i = 0; i < kN; ++i) {
    ASSERT_EQ(buffers.c.data<float>()[i], 2 * buffers.a.data<float>()[i]);
  }
}

TEST(Module, KernelStatusIsReturned) {
  auto module = Module::load(kKernels);
  ASSERT_TRUE(module.is_ok());
  auto fail = module->get_kernel("fail_with_7");
  ASSERT_TRUE(fail.is_ok());
  EXPECT_EQ((*fail)(nullptr), 7);
}

TEST(Module, MissingFileIsNotFound) {
  const std::string path = ::testing::TempDir() + "/no_such_kernels.so";
  auto module = Module::load(path);
  EXPECT_EQ(module.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(module.status().message().find(path), std::string::npos) << module.status().message();
}

TEST(Module, BareNameIsNotSearchedOnTheLibraryPath) {
  // libc.so.6 is on every library path; a module name is a file, not a search.
  auto module = Module::load("libc.so.6");
  EXPECT_EQ(module.status().code(), ErrorCode::kNotFound) << module.status().to_string();
}

TEST(Module, NonLibraryFileIsIOErrorNamingFileAndReason) {
  const std::string dir = make_temp_dir();
  ASSERT_FALSE(dir.empty());
  const std::string path = dir + "/not_a_library.so";
  std::ofstream(path) << "this is text, not ELF\n";
  auto module = Module::load(path);
  EXPECT_EQ(module.status().code(), ErrorCode::kIOError);
  EXPECT_NE(module.status().message().find(path), std::string::npos) << module.status().message();
  EXPECT_NE(module.status().message().find("not_a_library.so:"), std::string::npos)
      << "quotes dlerror(): " << module.status().message();
  std::remove(path.c_str());
  ::rmdir(dir.c_str());
}

TEST(Module, MissingSymbolIsNotFoundNamingSymbolAndFile) {
  auto module = Module::load(kKernels);
  ASSERT_TRUE(module.is_ok());
  auto kernel = module->get_kernel("no_such_kernel");
  EXPECT_EQ(kernel.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(kernel.status().message().find("no_such_kernel"), std::string::npos);
  EXPECT_NE(kernel.status().message().find(kKernels), std::string::npos) << kernel.status().message();
}

TEST(Module, LoadFromBytesRunsAndLeavesNoTempFile) {
  const std::string dir = make_temp_dir();
  ASSERT_FALSE(dir.empty());
  const std::string bytes = read_file(kKernels);
  ASSERT_GT(bytes.size(), 0u);
  auto module = Module::load_from_bytes(bytes, dir);
  ASSERT_TRUE(module.is_ok()) << module.status().to_string();
  EXPECT_TRUE(list_dir(dir).empty()) << "the temp file is unlinked once open";
  auto add = module->get_kernel("vector_add");
  ASSERT_TRUE(add.is_ok());
  AddBuffers buffers;
  EXPECT_EQ((*add)(buffers.args), 0);
  EXPECT_TRUE(buffers.c_is_a_plus_b());
  ::rmdir(dir.c_str());
}

TEST(Module, LoadFromBadBytesIsIOErrorAndLeavesNoTempFile) {
  const std::string dir = make_temp_dir();
  ASSERT_FALSE(dir.empty());
  auto module = Module::load_from_bytes(
      "\x7f"
      "ELF but then nothing",
      dir);
  EXPECT_EQ(module.status().code(), ErrorCode::kIOError);
  EXPECT_TRUE(list_dir(dir).empty());
  ::rmdir(dir.c_str());
}

TEST(Module, LoadFromBytesIntoAMissingDirectoryIsIOError) {
  auto module = Module::load_from_bytes(read_file(kKernels), ::testing::TempDir() + "/no/such/dir");
  EXPECT_EQ(module.status().code(), ErrorCode::kIOError);
  EXPECT_NE(module.status().message().find("no/such/dir"), std::string::npos) << module.status().message();
}

TEST(Module, MoveTransfersTheOpenLibrary) {
  auto loaded = Module::load(kKernels);
  ASSERT_TRUE(loaded.is_ok());
  Module first = std::move(loaded).value();
  Module second = std::move(first);
  EXPECT_EQ(first.get_kernel("vector_add").status().code(), ErrorCode::kNotFound);  // NOLINT
  auto add = second.get_kernel("vector_add");
  ASSERT_TRUE(add.is_ok());
  AddBuffers buffers;
  EXPECT_EQ((*add)(buffers.args), 0);
  EXPECT_TRUE(buffers.c_is_a_plus_b());
}

TEST(Module, RuntimeExportsTheKernelAbi) {
  // What a kernel library built elsewhere needs from the process.
  for (const char* symbol : {"tessera_parallel_launch", "tessera_workspace_alloc", "tessera_workspace_free"}) {
    EXPECT_NE(dlsym(RTLD_DEFAULT, symbol), nullptr) << symbol;
  }
}

}  // namespace
}  // namespace tessera::runtime
