// `make install`: the install folder works wherever it is moved. The test
// installs this build into a temporary prefix, moves the folder, compiles a
// model with the moved `tessera`, runs it with the moved `tessera-run`, and
// builds the C example against the moved pkg-config file: its outputs match
// tessera-run's byte for byte. And ResNet-18, compiled by an installed
// `tessera` with every default, through the C example against tessera-run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

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

// Inputs for every input of a package: as .npy files (tessera-run) and raw
// (the C example), the same random values.
struct Inputs {
  std::string npy_args, raw_args;
};

// The outputs the C example wrote (raw, OUTDIR/NAME.bin) against those
// tessera-run wrote (OUTDIR/NAME.npy): equal within `tolerance` (0: byte for byte).
void expect_same_outputs(const std::vector<tessera::runtime::TensorInfo>& outputs, const fs::path& cli,
                         const fs::path& c, float tolerance) {
  for (const auto& o : outputs) {
    const std::string npy = read_all(cli / (o.name + ".npy"));
    const std::string raw = read_all(c / (o.name + ".bin"));
    ASSERT_FALSE(raw.empty()) << o.name;
    ASSERT_GT(npy.size(), raw.size()) << o.name;
    const std::string cli_raw = npy.substr(npy.size() - raw.size());
    if (tolerance == 0) {
      EXPECT_EQ(cli_raw, raw) << o.name << ": the C API differs from tessera-run";
      continue;
    }
    const auto* a = reinterpret_cast<const float*>(cli_raw.data());
    const auto* b = reinterpret_cast<const float*>(raw.data());
    size_t bad = 0;
    for (size_t i = 0; i < raw.size() / sizeof(float); ++i)
      bad += !(std::fabs(a[i] - b[i]) <= tolerance * (1 + std::fabs(a[i])));
    EXPECT_EQ(bad, 0u) << o.name << ": the C API differs from tessera-run";
  }
}

class Install : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera_install_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `make install` of this build into `prefix`.
  void install(const fs::path& prefix) {
    Output inst =
        shell(std::string(TESSERA_CMAKE) + " --install " + TESSERA_BUILD_DIR + " --prefix " + prefix.string());
    ASSERT_EQ(inst.code, 0) << inst.text;
  }

  // Random inputs for `package`, written under dir_.
  Inputs write_inputs(tessera::runtime::GraphExecutor& exec) {
    Inputs inputs;
    uint64_t seed = 7;
    for (const auto& in : exec.input_info()) {
      NDArray a = NDArray::create(in.shape, in.dtype).value();
      a.fill_random(seed++);
      EXPECT_TRUE(tessera::runtime::save_npy(a, (dir_ / (in.name + ".npy")).string()).is_ok());
      std::ofstream(dir_ / (in.name + ".raw"), std::ios::binary)
          .write(static_cast<const char*>(a.raw_data()), static_cast<std::streamsize>(a.nbytes()));
      inputs.npy_args += " --input " + in.name + "=" + (dir_ / (in.name + ".npy")).string();
      inputs.raw_args += " " + in.name + "=" + (dir_ / (in.name + ".raw")).string();
    }
    return inputs;
  }

  // The C example built against the pkg-config file of `prefix` only.
  fs::path build_example(const fs::path& prefix) {
    const std::string pc = "PKG_CONFIG_PATH=" + (prefix / "lib/pkgconfig").string() + " " + TESSERA_PKG_CONFIG;
    const fs::path program = dir_ / "run_model";
    Output cc = shell(std::string(TESSERA_C_COMPILER) + " -std=c99 -Wall -Wextra -Werror " + TESSERA_RUN_MODEL_SOURCE +
                      " $(" + pc + " --cflags --libs tessera-runtime) -o " + program.string());
    EXPECT_EQ(cc.code, 0) << cc.text;
    Output ldd = shell("ldd " + program.string() + " | grep tessera_runtime");
    EXPECT_NE(ldd.text.find(prefix.string()), std::string::npos) << ldd.text;
    return program;
  }

  // Runs `model` with the installed tessera-run and with the C example, on
  // the same inputs, one thread each, and compares their outputs.
  void run_both_ways(const fs::path& prefix, const fs::path& model, float tolerance) {
    auto exec = tessera::runtime::GraphExecutor::load_file(model.string());
    ASSERT_TRUE(exec.is_ok()) << exec.status().to_string();
    const Inputs inputs = write_inputs(**exec);
    fs::create_directories(dir_ / "cli");
    fs::create_directories(dir_ / "c");
    Output r = shell((prefix / "bin/tessera-run").string() + " " + model.string() + inputs.npy_args +
                     " --threads 1 --output-dir " + (dir_ / "cli").string());
    ASSERT_EQ(r.code, 0) << r.text;
    const fs::path program = build_example(prefix);
    Output run =
        shell(program.string() + " " + model.string() + " " + (dir_ / "c").string() + inputs.raw_args + " --threads 1");
    ASSERT_EQ(run.code, 0) << run.text;
    expect_same_outputs((*exec)->output_info(), dir_ / "cli", dir_ / "c", tolerance);
  }

  fs::path dir_;
};

TEST_F(Install, MovedInstallFolderRunsAModelFromTheCommandLineAndFromC) {
  if (!fs::exists(kConv)) GTEST_SKIP() << "libonnx-testdata is not installed";
  install(dir_ / "staged");
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
  run_both_ways(prefix, model, 0);
}

// The deployment: ResNet-18 compiled by the installed `tessera` (as
// a user compiles it: every default, oneDNN's regions where they pay), run
// by a C program that knows only tessera_runtime.h and pkg-config.
TEST_F(Install, TheCExampleRunsResNet18AsTesseraRunDoes) {
  const fs::path onnx = dir_ / "resnet18.onnx";
  Output made = shell("/usr/bin/python3 " + std::string(TESSERA_SOURCE_DIR) + "/scripts/models/resnet18.py -o " +
                      onnx.string() + " --seed 0");
  if (made.code != 0) GTEST_SKIP() << "python3-onnx cannot write the ResNet-18: " << made.text;
  const fs::path prefix = dir_ / "prefix";
  install(prefix);
  const fs::path model = dir_ / "resnet18.tsr";
  Output c = shell((prefix / "bin/tessera").string() + " compile " + onnx.string() + " --db " +
                   (dir_ / "none.db").string() + " -o " + model.string());
  ASSERT_EQ(c.code, 0) << c.text;
  // Both load the same package into the same runtime; oneDNN's regions, if
  // any, run on OpenMP threads whose sums may split differently.
  run_both_ways(prefix, model, 1e-5f);
}

}  // namespace
