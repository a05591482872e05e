// A model compiled for aarch64 (`tessera compile --target aarch64...`) runs on
// the device's package runner, tessera-run cross-built for aarch64, under
// qemu-aarch64 — and gives the outputs the same model gives compiled for and
// run on this machine.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>

#include "runtime/ndarray.h"
#include "tests/tools/command.h"

namespace {

namespace fs = std::filesystem;
using tessera::test::Output;
using tessera::test::shell;

tessera::runtime::NDArray random_input(const std::vector<int64_t>& shape, uint32_t seed) {
  auto a = tessera::runtime::NDArray::create(shape, tessera::DType::f32()).value();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int64_t i = 0; i < a.numel(); ++i) a.data<float>()[i] = u(rng);
  return a;
}

// Compiles `model` for the host and for aarch64, runs both, compares outputs.
struct Input {
  std::string name;
  std::vector<int64_t> shape;
};

void check_model(const fs::path& dir, const std::string& model, const std::vector<Input>& inputs,
                 const std::string& extra, const std::string& arm_compile_says = "",
                 const std::string& arm_features = "+neon") {
  const std::string tessera = TESSERA_BINARY, board = TESSERA_AARCH64_RUN;
  std::string feed;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string file = (dir / (inputs[i].name + ".npy")).string();
    ASSERT_TRUE(tessera::runtime::save_npy(random_input(inputs[i].shape, 11 + i), file).is_ok());
    feed += " --input " + inputs[i].name + "=" + file;
  }
  const std::string aarch64 =
      "'llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -mattr=" + arm_features + " -num-cores=1'";
  Output c1 = shell(tessera + " compile " + model + extra + " --no-records -o " + (dir / "host.tsr").string());
  ASSERT_EQ(c1.code, 0) << c1.text;
  Output c2 = shell(tessera + " compile " + model + extra + " --no-records --target " + aarch64 + " -o " +
                    (dir / "arm.tsr").string());
  ASSERT_EQ(c2.code, 0) << c2.text;
  if (!arm_compile_says.empty()) EXPECT_NE(c2.text.find(arm_compile_says), std::string::npos) << c2.text;
  Output r1 =
      shell(tessera + " run " + (dir / "host.tsr").string() + feed + " --output-dir " + (dir / "host").string());
  ASSERT_EQ(r1.code, 0) << r1.text;
  // One thread, as the target says (-num-cores=1); the pool's two threads
  // under emulation are Aarch64Package.TwoThreadsUnderQemuTakeAtMostTwiceOne's.
  Output r2 = shell(
      "/usr/bin/qemu-aarch64 -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib:"
      "/usr/lib/aarch64-linux-gnu " +
      board + " " + (dir / "arm.tsr").string() + " --threads 1" + feed + " --output-dir " + (dir / "arm").string());
  ASSERT_EQ(r2.code, 0) << r2.text;
  int outputs = 0;
  for (const auto& entry : fs::directory_iterator(dir / "host")) {
    ++outputs;
    auto want = tessera::runtime::load_npy(entry.path().string());
    auto got = tessera::runtime::load_npy((dir / "arm" / entry.path().filename()).string());
    ASSERT_TRUE(want.is_ok() && got.is_ok()) << entry.path();
    ASSERT_EQ(want->shape(), got->shape());
    for (int64_t i = 0; i < want->numel(); ++i) {
      const float w = want->data<float>()[i], g = got->data<float>()[i];
      ASSERT_NEAR(g, w, 1e-4 + 1e-3 * std::fabs(w)) << entry.path().filename() << "[" << i << "]";
    }
  }
  EXPECT_GE(outputs, 1);
}

class Aarch64Package : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(TESSERA_AARCH64_RUN, X_OK) != 0)
      GTEST_SKIP() << TESSERA_AARCH64_RUN << " is missing: run `make worker-aarch64` first";
    if (::access("/usr/bin/qemu-aarch64", X_OK) != 0) GTEST_SKIP() << "qemu-aarch64 is missing (Debian qemu-user)";
    dir_ = fs::temp_directory_path() / ("tessera_arm_pkg_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(Aarch64Package, ConvModelRunsUnderQemu) {
  const std::string model = "/usr/share/libonnx-testdata/data/node/test_basic_conv_with_padding/model.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << "libonnx-testdata is not installed";
  check_model(dir_, model, {{"x", {1, 1, 5, 5}}, {"W", {1, 1, 3, 3}}}, "");
}

TEST_F(Aarch64Package, PPOCRClassifierRunsUnderQemu) {
  const fs::path model =
      fs::path(TESSERA_SOURCE_DIR) / ".cache/ocr-models/package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << model << " is missing: run scripts/install-deps.sh";
  check_model(dir_, model.string(), {{"x", {1, 3, 48, 192}}}, " --input-shape x:1,3,48,192");
}

// The median of `tessera-run --bench`'s "latency: median X ms" line, in ms; -1 when absent.
double median_ms(const std::string& text) {
  const size_t at = text.find("latency: median ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + 16));
}

// The thread pool under emulation: qemu-user runs each guest thread as a
// host thread, and a worker it deschedules must not stall a launch (the
// launcher takes over a share no worker has started). Once, 2 threads made
// no progress for 60 s where 1 took 1.1 s; the bound is 2x, with the host's
// two cores shared with the emulator's own threads.
TEST_F(Aarch64Package, TwoThreadsUnderQemuTakeAtMostTwiceOne) {
  const fs::path model =
      fs::path(TESSERA_SOURCE_DIR) / ".cache/ocr-models/package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << model << " is missing: run scripts/install-deps.sh";
  const std::string package = (dir_ / "arm2.tsr").string();
  Output c = shell(std::string(TESSERA_BINARY) + " compile " + model.string() +
                   " --input-shape x:1,3,48,192 --no-records --target 'llvm -mtriple=aarch64-linux-gnu "
                   "-mcpu=cortex-a72 -mattr=+neon -num-cores=2' -o " +
                   package);
  ASSERT_EQ(c.code, 0) << c.text;
  auto run = [&](int threads) {
    return shell(
        "timeout 120 /usr/bin/qemu-aarch64 -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/"
        "lib:/usr/lib/aarch64-linux-gnu " +
        std::string(TESSERA_AARCH64_RUN) + " " + package + " --random-inputs 1 --bench 5 --threads " +
        std::to_string(threads));
  };
  Output one = run(1), two = run(2);
  ASSERT_EQ(one.code, 0) << one.text;
  ASSERT_EQ(two.code, 0) << two.text;
  const double one_ms = median_ms(one.text), two_ms = median_ms(two.text);
  ASSERT_GT(one_ms, 0) << one.text;
  ASSERT_GT(two_ms, 0) << two.text;
  EXPECT_LE(two_ms, 2 * one_ms) << "1 thread " << one_ms << " ms, 2 threads " << two_ms << " ms";
}

// The classifier's dense head through the cblas backend: its C cross-compiled
// with aarch64-linux-gnu-gcc and linked with the arm64 OpenBLAS.
TEST_F(Aarch64Package, DenseLayersThroughCblasRunUnderQemu) {
  const fs::path model =
      fs::path(TESSERA_SOURCE_DIR) / ".cache/ocr-models/package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << model << " is missing: run scripts/install-deps.sh";
  if (!fs::exists("/usr/lib/aarch64-linux-gnu/libopenblas.so"))
    GTEST_SKIP() << "the arm64 OpenBLAS is missing (libopenblas-dev:arm64, scripts/install-deps.sh)";
  check_model(dir_, model.string(), {{"x", {1, 3, 48, 192}}}, " --input-shape x:1,3,48,192 --byoc cblas --verbose",
              "external: cblas (2 operators)");
}

// The ResNet-18 quantized to QDQ, its convs on the dot-product unit: SDOT
// (+dotprod, unsigned bytes shifted into int8) and USDOT (+i8mm) give the
// integers x86's vpdpbusd gives.
TEST_F(Aarch64Package, QuantizedResNetOnTheDotProductUnitRunsUnderQemu) {
  const fs::path model = dir_ / "resnet18_qdq.onnx";
  const std::string make = std::string("/usr/bin/python3 ") + TESSERA_SOURCE_DIR +
                           "/scripts/models/quantize_static.py --model resnet18 --seed 3 -o " + model.string();
  Output made = shell(make);
  if (made.code != 0 && made.text.find("No module named") != std::string::npos) GTEST_SKIP() << made.text;
  ASSERT_EQ(made.code, 0) << made.text;
  for (const char* features : {"+neon,+dotprod", "+neon,+i8mm"}) {
    SCOPED_TRACE(features);
    fs::remove_all(dir_ / "host");
    fs::remove_all(dir_ / "arm");
    check_model(dir_, model.string(), {{"input", {1, 3, 224, 224}}}, "", "", features);
  }
}

// A transformer quantized dynamically (MatMulInteger), its int8 products in
// 2 x 2 tiles on USMMLA (+i8mm) and on SDOT (+dotprod): the host's outputs.
TEST_F(Aarch64Package, DynamicallyQuantizedTransformerOnTheMatrixUnitRunsUnderQemu) {
  const fs::path model = dir_ / "transformer_dyn.onnx";
  const std::string make = std::string("/usr/bin/python3 ") + TESSERA_SOURCE_DIR +
                           "/scripts/models/quantize_dynamic.py --model transformer --seq 16 --layers 1 --d-model 64 "
                           "--heads 2 --ff 128 -o " +
                           model.string();
  Output made = shell(make);
  if (made.code != 0 && made.text.find("No module named") != std::string::npos) GTEST_SKIP() << made.text;
  ASSERT_EQ(made.code, 0) << made.text;
  for (const char* features : {"+neon,+i8mm", "+neon,+dotprod"}) {
    SCOPED_TRACE(features);
    fs::remove_all(dir_ / "host");
    fs::remove_all(dir_ / "arm");
    check_model(dir_, model.string(), {{"input", {1, 16, 64}}}, "", "", features);
  }
}

}  // namespace
