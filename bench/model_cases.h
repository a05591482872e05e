// The models bench_model benchmarks, listed once: the benchmark registers
// each, and the model tests compile each with the default flags.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

// The tuned budget registered for every model: an estimated 10-15 minutes of
// `tessera tune` for the ResNet-18 on this 2-core machine (a 96-trial run took
// 56 s at load 5, ~0.5 s per trial before the cost model grows; docs/benchmark-history.md).
constexpr int kTunedTrials = 1000;

/// One model to benchmark.
struct ModelCase {
  std::string input_name;
  std::vector<int64_t> input_shape;
  /// Where the model comes from: a generator of scripts/models/ run into
  /// the temp dir (bench::write_generated_model, seed 7), or, "", a file.
  std::string generator;
  std::string file;  ///< without a generator: a file in bench::ocr_models_dir()
  std::string byoc;  ///< an external backend compiled and timed beside the all-Tessera package
                     ///< ("dnnl"), or ""
  std::vector<std::string> generator_options;  ///< the generator's options
  /// 0: every output element within kAbsTol + kRelTol * |ort|. Otherwise max
  /// |tessera - ort| <= scale_tol * max |ort| (quantized models, whose
  /// outputs may differ from ONNX Runtime's by a few quantization steps).
  double scale_tol = 0;
  /// tessera compile/tune --precision: "fp32", "bf16" or "fp16" (then
  /// Tessera's float32 package is timed beside it too: counter vs_float32).
  std::string precision = "fp32";
};

/// A benchmark: its name, its model, and the trial budgets it runs (empty:
/// 0 and kTunedTrials).
struct BenchmarkedModel {
  std::string name;
  ModelCase model;
  std::vector<int64_t> trials;
};

/// Every model bench_model benchmarks, in registration order.
std::vector<BenchmarkedModel> benchmarked_models();

}  // namespace tessera
