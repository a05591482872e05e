// The PP-OCR models compile with every convolution on its knob template:
// their depthwise convs (multiplier 1, stride 1 and 2), their squeeze-excite
// convs with the x * hardsigmoid(...) scale and their plain convs, untuned,
// with no "template's fallback failed" warning. Skips where the models are
// missing (scripts/install-deps.sh), as the other model tests do.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "bench/ort_peer.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/model/compile_model.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

void expect_every_conv_on_its_template(const std::string& file, const std::vector<int64_t>& shape) {
  const std::string model = bench::ocr_models_dir() + "/" + file;
  if (!fs::exists(model)) GTEST_SKIP() << model << " is missing: run scripts/install-deps.sh";
  frontend::ImportOptions options;
  options.input_shapes["x"] = shape;
  auto graph = frontend::import_onnx_file(model, options);
  ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
  auto plan = model::plan_model(*graph);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  int depthwise = 0;
  for (const std::string& op : plan->task_ops) depthwise += op == "depthwise_conv2d" || op == "depthwise_conv2d_nhwc";
  EXPECT_GT(depthwise, 0) << "no depthwise task: the model or its import changed";
  auto compiled = model::compile_model(*plan, host_target());
  ASSERT_TRUE(compiled.is_ok()) << compiled.status().to_string();
  for (const std::string& w : compiled->report.warnings) EXPECT_EQ(w.find("fallback failed"), std::string::npos) << w;
  for (size_t t = 0; t < plan->tasks.size(); ++t) {
    const std::string& op = plan->task_ops[t];
    if (op.find("conv") == std::string::npos) continue;
    EXPECT_EQ(compiled->kernels[t].source, ScheduleChoice::Source::kTemplateFallback)
        << compiled->kernels[t].label << " (" << op << "): " << compiled->kernels[t].explanation;
  }
}

TEST(PPOCRTemplates, DirectionClassifierConvsAllFitTheirTemplates) {
  expect_every_conv_on_its_template("ch_ppocr_mobile_v2.0_cls_infer.onnx", {1, 3, 48, 192});
}

TEST(PPOCRTemplates, TextDetectionConvsAllFitTheirTemplates) {
  expect_every_conv_on_its_template("ch_PP-OCRv4_det_infer.onnx", {1, 3, 320, 320});
}

}  // namespace
}  // namespace tessera
