// Real models end to end against ONNX Runtime: import → plan → compile (no
// records: every kernel from its fallback; the ResNet also with its convs by
// Winograd) → graph executor, on the same
// input as ORT, outputs within a stated tolerance. The ResNet-18 is generated
// here (python3-onnx), the PP-OCR models come from npm (install-deps.sh).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>

#include "base/half.h"
#include "bench/ort_peer.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/model/compile_model.h"
#include "runtime/graph_executor.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using runtime::NDArray;

// |ours - ort| <= kAbs + kRel * |ort| everywhere (float32 sums in another order).
constexpr double kAbs = 1e-4, kRel = 1e-3;

class MatchOrt : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!bench::ort_available(&why)) GTEST_SKIP() << why;
    std::string pattern = ::testing::TempDir() + "/tessera_match_XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  // Compiles `model` with `shapes`, runs it and ORT on one random input named
  // `input`, and compares every output: within kAbs + kRel * |ort| at every
  // element, or, with `scale_tol` > 0, max |ours - ort| <= scale_tol * max |ort|.
  void check(const std::string& model, const std::string& input, const std::vector<int64_t>& shape,
             const model::PlanOptions& plan_options = {}, double scale_tol = 0) {
    frontend::ImportOptions options;
    options.input_shapes[input] = shape;
    auto graph = frontend::import_onnx_file(model, options);
    ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
    auto plan = model::plan_model(*graph, plan_options);
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    auto compiled = model::compile_model(*plan, target_);
    ASSERT_TRUE(compiled.is_ok()) << compiled.status().to_string();
    runtime::ExecutorOptions eo;
    eo.num_threads = 2;
    auto exec = runtime::GraphExecutor::load(compiled->package, eo);
    ASSERT_TRUE(exec.is_ok()) << exec.status().to_string();

    // The model's input type: float32, or float16 for a float16 model.
    DType input_type = DType::f32();
    for (const auto& info : (*exec)->input_info()) input_type = info.name == input ? info.dtype : input_type;
    NDArray x = NDArray::create(shape, input_type).value();
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-1, 1);
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (input_type == DType::f16())
        x.data<uint16_t>()[i] = float_to_half(u(rng));
      else
        x.data<float>()[i] = u(rng);
    }
    const std::string x_path = dir_ + "/x.npy";
    ASSERT_TRUE(runtime::save_npy(x, x_path).is_ok());
    ASSERT_TRUE((*exec)->set_input(input, x).is_ok());
    ASSERT_TRUE((*exec)->run().is_ok());
    Status ort = bench::ort_run_outputs(model, {{input, x_path}}, dir_ + "/ort", 2, {{input, shape}});
    ASSERT_TRUE(ort.is_ok()) << ort.to_string();

    for (const std::string& name : (*exec)->output_names()) {
      auto ours = (*exec)->get_output(name);
      ASSERT_TRUE(ours.is_ok());
      std::string file = name;
      for (char& c : file)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
      auto want = runtime::load_npy(dir_ + "/ort/" + file + ".npy");
      ASSERT_TRUE(want.is_ok()) << want.status().to_string();
      ASSERT_EQ(ours->shape(), want->shape()) << name;
      ASSERT_EQ(ours->dtype(), want->dtype()) << name;
      const std::vector<float> want_values = want->to_float32(), our_values = ours->to_float32();
      double worst = 0, max_err = 0, scale = 0;
      for (int64_t i = 0; i < want->numel(); ++i) {
        const double w = want_values[i], g = our_values[i];
        worst = std::max(worst, std::fabs(g - w) - kRel * std::fabs(w));
        max_err = std::max(max_err, std::fabs(g - w));
        scale = std::max(scale, std::fabs(w));
      }
      if (compare_top1_) {
        // Row by row (an image each), the index of the largest score.
        const int64_t rows = want->shape()[0], cols = want->numel() / rows;
        int64_t agree = 0;
        for (int64_t r = 0; r < rows; ++r) {
          const float* w = want_values.data() + r * cols;
          const float* g = our_values.data() + r * cols;
          agree += std::max_element(w, w + cols) - w == std::max_element(g, g + cols) - g;
        }
        EXPECT_EQ(agree, rows) << name << ": top-1 agrees on " << agree << " of " << rows << " inputs";
      } else if (scale_tol > 0) {
        EXPECT_LE(max_err, scale_tol * scale)
            << name << ": max |error| beyond " << scale_tol << " * max |ort| = " << scale_tol * scale;
      } else {
        EXPECT_LE(worst, kAbs) << name << ": beyond " << kAbs << " + " << kRel << " * |ort|";
      }
    }
  }

  std::string dir_;
  Target target_ = host_target();  // what check() compiles for
  bool compare_top1_ = false;      // check() compares each row's largest score's index
};

TEST_F(MatchOrt, ResNet18) {
  const std::string model = dir_ + "/resnet18.onnx";
  Status st = bench::write_resnet18(model, 3);
  if (!st.is_ok()) GTEST_SKIP() << st.to_string();
  check(model, "input", {1, 3, 224, 224});
}

// Every 3x3 stride-1 conv of its first three stages by Winograd (ten of
// them; the 7x7 stage has odd tiles), within the same tolerance.
TEST_F(MatchOrt, ResNet18ByWinograd) {
  const std::string model = dir_ + "/resnet18.onnx";
  Status st = bench::write_resnet18(model, 3);
  if (!st.is_ok()) GTEST_SKIP() << st.to_string();
  model::PlanOptions all;
  all.winograd = model::PlanOptions::Winograd::kAll;
  check(model, "input", {1, 3, 224, 224}, all);
}

// A transformer encoder as PyTorch exports one (scripts/models/transformer.py):
// LayerNorm as primitive nodes, erf GELU, attention with a key-padding mask.
// Issue 17's bound: max abs error <= 1e-4 of the output's scale.
TEST_F(MatchOrt, TransformerEncoder) {
  const std::string model = dir_ + "/transformer.onnx";
  Status st = bench::write_transformer(model, 3);
  if (!st.is_ok()) GTEST_SKIP() << st.to_string();
  check(model, "input", {1, 128, 256}, {}, 1e-4);
}

// The same encoder at sizes that no tile divides: 77 tokens, 6 heads of 64,
// feed-forward 1536 (the untuned kernels take padded tiles and rows of
// partial sums there).
TEST_F(MatchOrt, TransformerEncoderOfOddSizes) {
  const std::string model = dir_ + "/transformer_odd.onnx";
  Status st = bench::write_transformer(
      model, 3, {"--seq", "77", "--d-model", "384", "--heads", "6", "--ff", "1536", "--pad", "5"});
  if (!st.is_ok()) GTEST_SKIP() << st.to_string();
  check(model, "input", {1, 77, 384}, {}, 1e-4);
}

// A Whisper-like speech encoder, its attention fused (scores, softmax and
// context in one kernel, a block of rows at a time: 6 heads of 500 x 500
// scores, 6 MB, are past the 4 MiB at which they fuse), blocks of 10 rows,
// keys that whole vectors do not divide.
TEST_F(MatchOrt, SpeechEncoderWithFusedAttention) {
  const std::string model = dir_ + "/speech.onnx";
  Status st = bench::write_generated_model("speech_transformer.py", model, 3, {"--positions", "500", "--layers", "2"});
  if (!st.is_ok()) GTEST_SKIP() << st.to_string();
  check(model, "mel", {1, 80, 1000}, {}, 1e-4);
}

// A wav2vec2-style feature encoder: seven 1-D convs, the first followed by
// GroupNorm as torch exports it (Reshape, InstanceNormalization, Reshape,
// Mul, Add) and GELU, and the features transposed to [N, T, C]. The convs
// run channels last and the GroupNorm with them, normalized over time in
// [1, 1, W, C]; the features are already [N, T, C]: no transpose at all.
TEST_F(MatchOrt, AudioEncoderWithItsGroupNormChannelsLast) {
  const std::string model = dir_ + "/audio.onnx";
  Status st = bench::write_generated_model("audio_encoder.py", model, 4, {"--channels", "48", "--hidden", "64"});
  if (!st.is_ok()) GTEST_SKIP() << st.to_string();
  frontend::ImportOptions options;
  auto graph = frontend::import_onnx_file(model, options);
  ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
  auto plan = model::plan_model(*graph, {});
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  int transposes = 0;
  for (const graph::Node& n : plan->graph.nodes()) transposes += n.kind == graph::OpKind::kTranspose;
  // The input's [N, 1, W] -> [N, 1, W, 1], a copy; no other.
  EXPECT_LE(transposes, 1) << graph::groups_to_string(plan->graph, plan->groups);
  check(model, "audio", {1, 16000}, {}, 1e-4);
}

// Quantized models as ONNX Runtime's quantization tool writes them
// (scripts/models/quantize_*.py). ONNX Runtime runs their integer products
// with integer kernels; a rounding that falls the other way in one layer
// moves an output by a quantization step or a few.

// Static QDQ (per-channel int8 weights, uint8 activations): within 2% of the
// output's scale (0.8% measured on ten inputs).
TEST_F(MatchOrt, ResNet18QuantizedToQdq) {
  const std::string model = dir_ + "/resnet18_qdq.onnx";
  Status st = bench::write_generated_model("quantize_static.py", model, 3, {"--model", "resnet18"});
  if (!st.is_ok()) GTEST_SKIP() << st.to_string();
  check(model, "input", {1, 3, 224, 224}, {}, 2e-2);
}

// The same with int8 activations (ONNX Runtime's S8S8 form): shifted to
// uint8 for the dot product.
TEST_F(MatchOrt, ResNet18QuantizedToQdqWithInt8Activations) {
  const std::string model = dir_ + "/resnet18_qdq_s8.onnx";
  Status st = bench::write_generated_model("quantize_static.py", model, 3,
                                           {"--model", "resnet18", "--activation-type", "int8"});
  if (!st.is_ok()) GTEST_SKIP() << st.to_string();
  check(model, "input", {1, 3, 224, 224}, {}, 2e-2);
}

// The same on this CPU with its dot-product instruction turned off: the
// portable widening path gives the same integers.
TEST_F(MatchOrt, ResNet18QuantizedToQdqWithoutVnni) {
  const std::string model = dir_ + "/resnet18_qdq.onnx";
  Status st = bench::write_generated_model("quantize_static.py", model, 3, {"--model", "resnet18"});
  if (!st.is_ok()) GTEST_SKIP() << st.to_string();
  if (target_.is_x86()) {
    target_.features.push_back("-avx512vnni");
    target_.features.push_back("-avxvnni");
  }
  check(model, "input", {1, 3, 224, 224}, {}, 2e-2);
}

// Top-1 on 100 random inputs (one batch, calibrated on one other batch of
// 100): every image's class is ONNX Runtime's.
TEST_F(MatchOrt, ResNet18QuantizedToQdqAgreesOnTop1Of100Inputs) {
  const std::string model = dir_ + "/resnet18_qdq_100.onnx";
  Status st = bench::write_generated_model("quantize_static.py", model, 3,
                                           {"--model", "resnet18", "--batch", "100", "--calibration", "1"});
  if (!st.is_ok()) GTEST_SKIP() << st.to_string();
  compare_top1_ = true;
  check(model, "input", {100, 3, 224, 224});
}

// Dynamic (DynamicQuantizeLinear, ConvInteger, Cast, Mul, Add): the int32
// products are exact, so only the float rescale's rounding differs.
TEST_F(MatchOrt, ConvNetQuantizedDynamically) {
  const std::string model = dir_ + "/convnet_dynamic.onnx";
  Status st = bench::write_generated_model("quantize_dynamic.py", model, 3, {"--model", "convnet"});
  if (!st.is_ok()) GTEST_SKIP() << st.to_string();
  check(model, "input", {1, 3, 64, 64}, {}, 1e-4);
}

// The transformer encoder with every weight MatMul a MatMulInteger: within
// 1% of the output's scale.
TEST_F(MatchOrt, TransformerQuantizedDynamically) {
  const std::string model = dir_ + "/transformer_dynamic.onnx";
  Status st = bench::write_generated_model("quantize_dynamic.py", model, 3, {"--model", "transformer"});
  if (!st.is_ok()) GTEST_SKIP() << st.to_string();
  check(model, "input", {1, 128, 256}, {}, 1e-2);
}

// float16 models as onnxconverter-common's convert_float_to_float16 writes
// them (scripts/models/float16.py): computed in float32 between the model's
// Casts, as ONNX Runtime's CPU provider runs most of their operators on x86;
// within 1e-2 of the output's scale.
TEST_F(MatchOrt, ResNet18InFloat16) {
  const std::string model = dir_ + "/resnet18_fp16.onnx";
  Status st = bench::write_generated_model("float16.py", model, 3, {"--model", "resnet18"});
  if (!st.is_ok()) GTEST_SKIP() << st.to_string();
  check(model, "input", {1, 3, 224, 224}, {}, 1e-2);
}

// keep_io_types (float32 input and output, Casts at the boundary), the
// 1.14 converter (its Casts to float turned to float16).
TEST_F(MatchOrt, TransformerInFloat16WithFloat32InputsAndOutputs) {
  const std::string model = dir_ + "/transformer_fp16.onnx";
  Status st = bench::write_generated_model("float16.py", model, 3,
                                           {"--model", "transformer", "--keep-io-types", "--release", "1.14"});
  if (!st.is_ok()) GTEST_SKIP() << st.to_string();
  check(model, "input", {1, 128, 256}, {}, 1e-2);
}

// Recurrent speech models as torch.onnx.export writes nn.LSTM / nn.GRU
// (scripts/models/lstm_speech.py, gru_speech.py): two layers, input [1, 100,
// 64], hidden 128, batch_first; unrolled over the 100 steps. Within 1e-4 of
// the output's scale.
TEST_F(MatchOrt, LstmSpeechModel) {
  for (const std::vector<std::string>& variant : {std::vector<std::string>{}, {"--bidirectional"}, {"--unfolded"}}) {
    SCOPED_TRACE(variant.empty() ? "plain" : variant[0]);
    const std::string model = dir_ + "/lstm.onnx";
    Status st = bench::write_generated_model("lstm_speech.py", model, 3, variant);
    if (!st.is_ok()) GTEST_SKIP() << st.to_string();
    check(model, "input", {1, 100, 64}, {}, 1e-4);
  }
}

TEST_F(MatchOrt, GruSpeechModel) {
  const std::string model = dir_ + "/gru.onnx";
  Status st = bench::write_generated_model("gru_speech.py", model, 3, {});
  if (!st.is_ok()) GTEST_SKIP() << st.to_string();
  check(model, "input", {1, 100, 64}, {}, 1e-4);
}

// A scripted for-loop as torch.onnx.export writes it (scripts/models/
// loop_model.py: Loop over x.size(0) with a carried state and a scan
// output; with --sequence, opset 13's form, the list a carried sequence
// appended to and stacked by ConcatFromSequence), unrolled at import.
TEST_F(MatchOrt, LoopModelUnrolled) {
  for (const std::vector<std::string>& variant :
       {std::vector<std::string>{}, {"--trip-count", "constant"}, {"--sequence"}}) {
    const std::string model = dir_ + "/loop.onnx";
    Status st = bench::write_generated_model("loop_model.py", model, 3, variant);
    if (!st.is_ok()) GTEST_SKIP() << st.to_string();
    check(model, "input", {10, 1, 16}, {}, 1e-5);
  }
}

// The scripted RNN returning its hidden state alone, its trip count an
// input (loop_model.py --trip-count input --hidden-only): the device runs
// the Loop as many times as the input says, and ONNX Runtime agrees.
TEST_F(MatchOrt, LoopModelOnDataRunsOnTheDevice) {
  const std::string model = dir_ + "/loop_on_data.onnx";
  Status st = bench::write_generated_model("loop_model.py", model, 3, {"--trip-count", "input", "--hidden-only"});
  if (!st.is_ok()) GTEST_SKIP() << st.to_string();
  auto graph = frontend::import_onnx_file(model);
  ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
  auto plan = model::plan_model(*graph);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  auto compiled = model::compile_model(*plan, target_);
  ASSERT_TRUE(compiled.is_ok()) << compiled.status().to_string();
  auto exec = runtime::GraphExecutor::load(compiled->package, {});
  ASSERT_TRUE(exec.is_ok()) << exec.status().to_string();
  NDArray x = NDArray::create({10, 1, 16}, DType::f32()).value();
  x.fill_random(9);
  const std::string x_path = dir_ + "/x.npy", steps_path = dir_ + "/steps.npy";
  ASSERT_TRUE(runtime::save_npy(x, x_path).is_ok());
  ASSERT_TRUE((*exec)->set_input("input", x).is_ok());
  for (int64_t steps : {10, 3, 0}) {
    NDArray m = NDArray::create({}, DType::i64()).value();
    *m.data<int64_t>() = steps;
    ASSERT_TRUE(runtime::save_npy(m, steps_path).is_ok());
    ASSERT_TRUE((*exec)->set_input("steps", m).is_ok());
    ASSERT_TRUE((*exec)->run().is_ok());
    Status ort = bench::ort_run_outputs(model, {{"input", x_path}, {"steps", steps_path}}, dir_ + "/ort", 2);
    ASSERT_TRUE(ort.is_ok()) << ort.to_string();
    auto want = runtime::load_npy(dir_ + "/ort/hidden.npy");
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    const std::vector<float> ours = (*exec)->get_output("hidden")->to_float32(), theirs = want->to_float32();
    ASSERT_EQ(ours.size(), theirs.size());
    for (size_t i = 0; i < ours.size(); ++i) EXPECT_NEAR(ours[i], theirs[i], 1e-5) << steps << " steps, [" << i << "]";
  }
}

// A classifier whose second head is an If on its first head's score
// (scripts/models/gated_classifier.py): both ways the gate can go.
TEST_F(MatchOrt, GatedClassifierIfOnData) {
  for (const std::vector<std::string>& variant : {std::vector<std::string>{}, {"--threshold", "0"}}) {
    const std::string model = dir_ + "/gated.onnx";
    Status st = bench::write_generated_model("gated_classifier.py", model, 3, variant);
    if (!st.is_ok()) GTEST_SKIP() << st.to_string();
    check(model, "input", {1, 3, 32, 32});
  }
}

// A cumulative sum over time as a Scan (forward and reverse), unrolled.
TEST_F(MatchOrt, ScanModelUnrolled) {
  for (const std::vector<std::string>& variant :
       {std::vector<std::string>{"--kind", "scan"}, {"--kind", "scan", "--reverse"}}) {
    const std::string model = dir_ + "/scan.onnx";
    Status st = bench::write_generated_model("loop_model.py", model, 3, variant);
    if (!st.is_ok()) GTEST_SKIP() << st.to_string();
    check(model, "input", {1, 10, 8}, {}, 1e-5);
  }
}

TEST_F(MatchOrt, PPOCRTextRecognition) {
  const std::string model = bench::ocr_models_dir() + "/ch_PP-OCRv4_rec_infer.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << model << " is missing: run scripts/install-deps.sh";
  check(model, "x", {1, 3, 48, 320});
}

TEST_F(MatchOrt, PPOCRDirectionClassifier) {
  const std::string model = bench::ocr_models_dir() + "/ch_ppocr_mobile_v2.0_cls_infer.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << model << " is missing: run scripts/install-deps.sh";
  check(model, "x", {1, 3, 48, 192});
}

TEST_F(MatchOrt, PPOCRTextDetection) {
  const std::string model = bench::ocr_models_dir() + "/ch_PP-OCRv4_det_infer.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << model << " is missing: run scripts/install-deps.sh";
  check(model, "x", {1, 3, 320, 320});
}

}  // namespace
}  // namespace tessera
