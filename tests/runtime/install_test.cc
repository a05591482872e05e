// `make install`: the install folder works wherever it is moved. The test
// installs this build into a temporary prefix, moves the folder, compiles a
// model with the moved `tessera`, runs it with the moved `tessera-run`, and
// builds the C example against the moved pkg-config file: its outputs match
// tessera-run's byte for byte.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "runtime/graph_executor.h"
#include "tests/tools/command.h"

namespace {

namespace fs = std::filesystem;
using tessera::runtime::NDArray;
using tessera::test::Output;
using tessera::test::shell;

const fs::path kConv = "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding/model.onnx";

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

class Install : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera_install_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(Install, MovedInstallFolderRunsAModelFromTheCommandLineAndFromC) {
  if (!fs::exists(kConv)) GTEST_SKIP() << "libonnx-testdata is not installed";
  Output inst = shell(std::string(TESSERA_CMAKE) + " --install " + TESSERA_BUILD_DIR + " --prefix " +
                      (dir_ / "staged").string());
  ASSERT_EQ(inst.code, 0) << inst.text;
  fs::rename(dir_ / "staged", dir_ / "moved");
  const fs::path prefix = dir_ / "moved";
  for (const char* f : {"bin/tessera", "bin/tessera-run", "bin/tessera-worker", "lib/libtessera_runtime.so",
                        "include/tessera_runtime.h", "lib/pkgconfig/tessera-runtime.pc"})
    EXPECT_TRUE(fs::exists(prefix / f)) << f;

  // No path into the build folder is left in what was installed.
  Output runpath = shell("readelf -d " + (prefix / "bin/tessera-run").string() + " | grep -i runpath");
  EXPECT_NE(runpath.text.find("$ORIGIN/../lib"), std::string::npos) << runpath.text;
  EXPECT_EQ(runpath.text.find(TESSERA_BUILD_DIR), std::string::npos) << runpath.text;

  Output help = shell((prefix / "bin/tessera-run").string() + " --help");
  ASSERT_EQ(help.code, 0) << help.text;
  EXPECT_EQ(help.text.rfind("usage: tessera-run MODEL.tsr", 0), 0u) << help.text;
  Output missing = shell((prefix / "bin/tessera-run").string() + " " + (dir_ / "absent.tsr").string());
  EXPECT_EQ(missing.text.rfind("tessera-run: ", 0), 0u) << missing.text;

  const fs::path model = dir_ / "conv.tsr";
  Output c = shell((prefix / "bin/tessera").string() + " compile " + kConv.string() + " -o " + model.string());
  ASSERT_EQ(c.code, 0) << c.text;

  // The same inputs as .npy for tessera-run and raw for the C example.
  auto exec = tessera::runtime::GraphExecutor::load_file(model.string());
  ASSERT_TRUE(exec.is_ok()) << exec.status().to_string();
  std::string npy_inputs, raw_inputs;
  uint64_t seed = 7;
  for (const auto& in : (*exec)->input_info()) {
    NDArray a = NDArray::create(in.shape, in.dtype).value();
    a.fill_random(seed++);
    ASSERT_TRUE(tessera::runtime::save_npy(a, (dir_ / (in.name + ".npy")).string()).is_ok());
    std::ofstream(dir_ / (in.name + ".raw"), std::ios::binary).write(static_cast<const char*>(a.raw_data()), a.nbytes());
    npy_inputs += " --input " + in.name + "=" + (dir_ / (in.name + ".npy")).string();
    raw_inputs += " " + in.name + "=" + (dir_ / (in.name + ".raw")).string();
  }
  fs::create_directories(dir_ / "cli");
  fs::create_directories(dir_ / "c");
  Output r = shell((prefix / "bin/tessera-run").string() + " " + model.string() + npy_inputs + " --threads 1 --output-dir " +
                   (dir_ / "cli").string());
  ASSERT_EQ(r.code, 0) << r.text;

  const std::string pc = "PKG_CONFIG_PATH=" + (prefix / "lib/pkgconfig").string() + " " + TESSERA_PKG_CONFIG;
  Output cc = shell(std::string(TESSERA_C_COMPILER) + " -std=c99 -Wall -Wextra -Werror " + TESSERA_RUN_MODEL_SOURCE +
                    " $(" + pc + " --cflags --libs tessera-runtime) -o " + (dir_ / "run_model").string());
  ASSERT_EQ(cc.code, 0) << cc.text;
  Output ldd = shell("ldd " + (dir_ / "run_model").string() + " | grep tessera_runtime");
  EXPECT_NE(ldd.text.find(prefix.string()), std::string::npos) << ldd.text;
  Output run = shell((dir_ / "run_model").string() + " " + model.string() + " " + (dir_ / "c").string() + raw_inputs +
                     " --threads 1");
  ASSERT_EQ(run.code, 0) << run.text;

  for (const auto& o : (*exec)->output_info()) {
    const std::string npy = read_all(dir_ / "cli" / (o.name + ".npy"));
    const std::string raw = read_all(dir_ / "c" / (o.name + ".bin"));
    ASSERT_FALSE(raw.empty()) << o.name;
    ASSERT_GT(npy.size(), raw.size()) << o.name;
    EXPECT_EQ(npy.substr(npy.size() - raw.size()), raw) << o.name << ": the C API differs from tessera-run";
  }
}

}  // namespace
