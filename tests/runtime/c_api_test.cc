// The C API (runtime/tessera_runtime.h): a model compiled by the real
// compiler runs through the C example program and matches the graph
// executor, and every misuse fails with a status and a message, never a crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "runtime/graph_executor.h"
#include "runtime/tessera_runtime.h"
#include "tests/tools/command.h"

namespace {

namespace fs = std::filesystem;
using tessera::runtime::GraphExecutor;
using tessera::runtime::NDArray;
using tessera::test::Output;
using tessera::test::shell;

const fs::path kConv = "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding/model.onnx";

tessera::runtime::ExecutorOptions two_threads() {
  tessera::runtime::ExecutorOptions o;
  o.num_threads = 2;
  return o;
}

std::string error() {
  return tessera_last_error();
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

class CApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("tessera_c_api_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    if (!fs::exists(kConv)) return;
    Output c = shell(std::string(TESSERA_BINARY) + " compile " + kConv.string() + " -o " + model().string());
    ASSERT_EQ(c.code, 0) << c.text;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static fs::path model() { return dir_ / "conv.tsr"; }
  void need_model() {
    if (!fs::exists(model())) GTEST_SKIP() << "libonnx-testdata is not installed";
  }
  static fs::path dir_;
};
fs::path CApi::dir_;

TEST_F(CApi, ExampleProgramMatchesTheGraphExecutor) {
  need_model();
  auto exec = GraphExecutor::load_file(model().string(), two_threads());
  ASSERT_TRUE(exec.is_ok()) << exec.status().to_string();
  std::string inputs;
  uint64_t seed = 1;
  for (const auto& in : (*exec)->input_info()) {
    auto a = NDArray::create(in.shape, in.dtype);
    ASSERT_TRUE(a.is_ok());
    a->fill_random(seed++);
    ASSERT_TRUE((*exec)->set_input(in.name, *a).is_ok());
    const fs::path file = dir_ / (in.name + ".in");
    std::ofstream(file, std::ios::binary).write(static_cast<const char*>(a->raw_data()), a->nbytes());
    inputs += " " + in.name + "=" + file.string();
  }
  ASSERT_TRUE((*exec)->run().is_ok());
  const fs::path out = dir_ / "out";
  fs::create_directories(out);
  Output r =
      shell(std::string(TESSERA_RUN_MODEL) + " " + model().string() + " " + out.string() + inputs + " --threads 2");
  ASSERT_EQ(r.code, 0) << r.text;
  ASSERT_FALSE((*exec)->output_info().empty());
  for (const auto& o : (*exec)->output_info()) {
    auto expected = (*exec)->get_output(o.name);
    ASSERT_TRUE(expected.is_ok());
    const std::string got = read_all(out / (o.name + ".bin"));
    ASSERT_EQ(static_cast<int64_t>(got.size()), expected->nbytes()) << o.name;
    const float* e = static_cast<const float*>(expected->raw_data());
    const float* g = reinterpret_cast<const float*>(got.data());
    for (int64_t i = 0; i < expected->numel(); ++i) ASSERT_NEAR(g[i], e[i], 1e-5f) << o.name << "[" << i << "]";
    EXPECT_NE(r.text.find(o.name + ": float32["), std::string::npos) << r.text;
  }
}

TEST_F(CApi, InfoGetAndCopyAgree) {
  need_model();
  TesseraModel* m = nullptr;
  ASSERT_EQ(tessera_model_load(model().c_str(), 1, &m), TESSERA_OK) << error();
  int32_t n_in = 0, n_out = 0;
  ASSERT_EQ(tessera_model_num_inputs(m, &n_in), TESSERA_OK);
  ASSERT_EQ(tessera_model_num_outputs(m, &n_out), TESSERA_OK);
  ASSERT_GT(n_in, 0);
  ASSERT_EQ(n_out, 1);
  for (int32_t i = 0; i < n_in; ++i) {
    TesseraTensorInfo info;
    ASSERT_EQ(tessera_model_input_info(m, i, &info), TESSERA_OK);
    EXPECT_STREQ(info.dtype, "float32");
    std::string zeros(info.nbytes, '\0');
    ASSERT_EQ(tessera_model_set_input(m, info.name, zeros.data(), zeros.size()), TESSERA_OK) << error();
  }
  ASSERT_EQ(tessera_model_run(m), TESSERA_OK) << error();
  TesseraTensorInfo out;
  ASSERT_EQ(tessera_model_output_info(m, 0, &out), TESSERA_OK);
  const void* data = nullptr;
  TesseraTensorInfo got;
  ASSERT_EQ(tessera_model_get_output(m, out.name, &data, &got), TESSERA_OK) << error();
  EXPECT_EQ(got.nbytes, out.nbytes);
  EXPECT_EQ(got.ndim, out.ndim);
  std::string copy(out.nbytes, '\x7f');
  ASSERT_EQ(tessera_model_copy_output(m, out.name, copy.data(), copy.size()), TESSERA_OK) << error();
  EXPECT_EQ(std::memcmp(copy.data(), data, copy.size()), 0);
  tessera_model_free(m);
}

TEST_F(CApi, MissingFileSaysSo) {
  TesseraModel* m = reinterpret_cast<TesseraModel*>(1);
  const std::string path = (dir_ / "absent.tsr").string();
  EXPECT_EQ(tessera_model_load(path.c_str(), 0, &m), TESSERA_ERROR_NOT_FOUND);
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(error().find("absent.tsr"), std::string::npos) << error();
}

TEST_F(CApi, CorruptPackageIsAParseError) {
  const fs::path junk = dir_ / "junk.tsr";
  std::ofstream(junk) << "TSRPKG01 and then nothing a package holds";
  TesseraModel* m = nullptr;
  EXPECT_EQ(tessera_model_load(junk.c_str(), 0, &m), TESSERA_ERROR_PARSE);
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(error().find("junk.tsr"), std::string::npos) << error();
  if (fs::exists(model())) {  // a real package with a flipped byte: the checksum catches it
    std::string bytes = read_all(model());
    bytes[bytes.size() / 2] ^= 0x5a;
    std::ofstream(dir_ / "flipped.tsr", std::ios::binary) << bytes;
    EXPECT_EQ(tessera_model_load((dir_ / "flipped.tsr").c_str(), 0, &m), TESSERA_ERROR_PARSE);
    EXPECT_NE(error().find("checksum"), std::string::npos) << error();
  }
}

TEST_F(CApi, WrongNamesAndSizesAreRefused) {
  need_model();
  TesseraModel* m = nullptr;
  ASSERT_EQ(tessera_model_load(model().c_str(), 1, &m), TESSERA_OK) << error();
  TesseraTensorInfo in;
  ASSERT_EQ(tessera_model_input_info(m, 0, &in), TESSERA_OK);
  std::string buf(in.nbytes + 4, '\0');
  EXPECT_EQ(tessera_model_set_input(m, "nope", buf.data(), in.nbytes), TESSERA_ERROR_NOT_FOUND);
  EXPECT_NE(error().find("no input 'nope'; its inputs: '" + std::string(in.name) + "'"), std::string::npos) << error();
  EXPECT_EQ(tessera_model_set_input(m, in.name, buf.data(), buf.size()), TESSERA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find(std::to_string(in.nbytes) + " bytes; the buffer has " + std::to_string(buf.size())),
            std::string::npos)
      << error();
  EXPECT_EQ(tessera_model_run(m), TESSERA_ERROR_INVALID_ARGUMENT) << "no input was set";
  EXPECT_NE(error().find("never set"), std::string::npos) << error();
  const void* data = nullptr;
  EXPECT_EQ(tessera_model_get_output(m, "nope", &data, nullptr), TESSERA_ERROR_NOT_FOUND);
  EXPECT_EQ(tessera_model_input_info(m, 99, &in), TESSERA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error().find("out of range"), std::string::npos) << error();
  tessera_model_free(m);
}

TEST_F(CApi, NullHandlesAreErrorsNotCrashes) {
  int32_t n = 0;
  TesseraTensorInfo info;
  const void* data = nullptr;
  char buf[4];
  EXPECT_EQ(tessera_model_num_inputs(nullptr, &n), TESSERA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "tessera_model_num_inputs: the model is NULL");
  EXPECT_EQ(tessera_model_num_outputs(nullptr, &n), TESSERA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tessera_model_input_info(nullptr, 0, &info), TESSERA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tessera_model_output_info(nullptr, 0, &info), TESSERA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tessera_model_set_input(nullptr, "x", buf, 4), TESSERA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tessera_model_run(nullptr), TESSERA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "tessera_model_run: the model is NULL");
  EXPECT_EQ(tessera_model_get_output(nullptr, "y", &data, &info), TESSERA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tessera_model_copy_output(nullptr, "y", buf, 4), TESSERA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tessera_model_load(nullptr, 0, nullptr), TESSERA_ERROR_INVALID_ARGUMENT);
  TesseraModel* m = nullptr;
  EXPECT_EQ(tessera_model_load(nullptr, 0, &m), TESSERA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "tessera_model_load: the path is NULL");
  tessera_model_free(nullptr);
  EXPECT_STREQ(tessera_status_name(TESSERA_ERROR_NOT_FOUND), "not found");
  EXPECT_EQ(tessera_model_carry(nullptr, "y", "x"), TESSERA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "tessera_model_carry: the model is NULL");
}

// A streaming model (the voice-activity detector of
// scripts/models/streaming_vad.py, its sample rate bound at compile time)
// called ten times: with its state carried by tessera_model_carry, and with
// the caller copying each state output back in, the same bytes every call.
TEST_F(CApi, ACarriedStateGivesWhatTheCallerCopyingItGives) {
  const fs::path onnx = dir_ / "vad.onnx", package = dir_ / "vad.tsr";
  Output g = shell("/usr/bin/python3 " + std::string(TESSERA_SOURCE_DIR) + "/scripts/models/streaming_vad.py -o " +
                   onnx.string() + " --seed 3");
  ASSERT_EQ(g.code, 0) << g.text;
  Output c = shell(std::string(TESSERA_BINARY) + " compile " + onnx.string() + " -o " + package.string() +
                   " --input-value sr=16000 --byoc none");
  ASSERT_EQ(c.code, 0) << c.text;
  TesseraModel *carried = nullptr, *copied = nullptr;
  ASSERT_EQ(tessera_model_load(package.c_str(), 1, &carried), TESSERA_OK) << error();
  ASSERT_EQ(tessera_model_load(package.c_str(), 1, &copied), TESSERA_OK) << error();
  EXPECT_EQ(tessera_model_carry(carried, "output", "state"), TESSERA_ERROR_INVALID_ARGUMENT);  // [1, 1] vs [2, 1, 128]
  EXPECT_EQ(tessera_model_carry(carried, "stateN", "nope"), TESSERA_ERROR_NOT_FOUND);
  EXPECT_NE(error().find("its inputs"), std::string::npos) << error();
  ASSERT_EQ(tessera_model_carry(carried, "stateN", "state"), TESSERA_OK) << error();
  std::vector<float> state(2 * 128, 0.0f), audio(512);
  for (TesseraModel* m : {carried, copied})
    ASSERT_EQ(tessera_model_set_input(m, "state", state.data(), state.size() * 4), TESSERA_OK) << error();
  for (int call = 0; call < 10; ++call) {
    for (size_t i = 0; i < audio.size(); ++i) audio[i] = 0.3f * std::sin(0.05f * static_cast<float>(call * 512 + i));
    for (TesseraModel* m : {carried, copied}) {
      ASSERT_EQ(tessera_model_set_input(m, "input", audio.data(), audio.size() * 4), TESSERA_OK) << error();
      ASSERT_EQ(tessera_model_run(m), TESSERA_OK) << error();
    }
    ASSERT_EQ(tessera_model_copy_output(copied, "stateN", state.data(), state.size() * 4), TESSERA_OK);
    ASSERT_EQ(tessera_model_set_input(copied, "state", state.data(), state.size() * 4), TESSERA_OK);
    for (const char* name : {"output", "stateN"}) {
      const void *a = nullptr, *b = nullptr;
      TesseraTensorInfo info;
      ASSERT_EQ(tessera_model_get_output(carried, name, &a, &info), TESSERA_OK) << error();
      ASSERT_EQ(tessera_model_get_output(copied, name, &b, nullptr), TESSERA_OK) << error();
      EXPECT_EQ(std::memcmp(a, b, info.nbytes), 0) << name << " at call " << call;
    }
  }
  tessera_model_free(carried);
  tessera_model_free(copied);
}

// The same detector with its sample rate left an input: the If on it runs
// on the device. At 16 kHz it gives what the package compiled for 16 kHz
// gives; at 8 kHz it takes the other branch.
TEST_F(CApi, AnIfOnASampleRateInputRunsOnTheDevice) {
  const fs::path onnx = dir_ / "vad.onnx", bound = dir_ / "vad16k.tsr", open = dir_ / "vad.tsr";
  Output g = shell("/usr/bin/python3 " + std::string(TESSERA_SOURCE_DIR) + "/scripts/models/streaming_vad.py -o " +
                   onnx.string() + " --seed 3");
  ASSERT_EQ(g.code, 0) << g.text;
  for (const auto& [package, flags] : {std::pair{bound, " --input-value sr=16000"}, {open, ""}}) {
    Output c = shell(std::string(TESSERA_BINARY) + " compile " + onnx.string() + " -o " + package.string() + flags +
                     " --byoc none");
    ASSERT_EQ(c.code, 0) << c.text;
  }
  EXPECT_NE(shell(std::string(TESSERA_BINARY) + " compile " + onnx.string() + " -o " + open.string() + " --byoc none")
                .text.find("control steps"),
            std::string::npos);
  TesseraModel *b = nullptr, *o = nullptr;
  ASSERT_EQ(tessera_model_load(bound.c_str(), 1, &b), TESSERA_OK) << error();
  ASSERT_EQ(tessera_model_load(open.c_str(), 1, &o), TESSERA_OK) << error();
  std::vector<float> state(2 * 128, 0.0f), audio(512);
  for (size_t i = 0; i < audio.size(); ++i) audio[i] = 0.3f * std::sin(0.05f * static_cast<float>(i));
  std::vector<std::vector<float>> outputs;
  for (int64_t rate : {16000, 8000}) {
    for (TesseraModel* m : {b, o}) {
      if (m == b && rate != 16000) continue;
      ASSERT_EQ(tessera_model_set_input(m, "state", state.data(), state.size() * 4), TESSERA_OK) << error();
      ASSERT_EQ(tessera_model_set_input(m, "input", audio.data(), audio.size() * 4), TESSERA_OK) << error();
      if (m == o) {
        ASSERT_EQ(tessera_model_set_input(m, "sr", &rate, sizeof rate), TESSERA_OK) << error();
      }
      ASSERT_EQ(tessera_model_run(m), TESSERA_OK) << error();
      std::vector<float> out(2 * 128);
      ASSERT_EQ(tessera_model_copy_output(m, "stateN", out.data(), out.size() * 4), TESSERA_OK) << error();
      outputs.push_back(out);
    }
  }
  ASSERT_EQ(outputs.size(), 3u);
  for (size_t i = 0; i < outputs[0].size(); ++i)
    EXPECT_NEAR(outputs[1][i], outputs[0][i], 1e-5f + 1e-5f * std::fabs(outputs[0][i])) << i;
  EXPECT_NE(outputs[2], outputs[1]);  // 8 kHz: the other branch
  tessera_model_free(b);
  tessera_model_free(o);
}

}  // namespace
