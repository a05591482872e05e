// ONNX Runtime as a peer for whole models: runs scripts/ort_run.js under
// node with the onnxruntime-node that scripts/install-deps.sh puts in
// <repo>/.cache/onnxruntime (docs/models.md). Used by the model-level tests
// and benchmarks; built as its own small library, tessera_ort_peer, so tests
// can link it without the BLAS peers.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace tessera::bench {

/// Model input name -> path of a .npy file holding its value.
using NpyInputs = std::map<std::string, std::string>;
/// Model input name -> shape of its random value (needed where the model's
/// input has a dynamic dimension).
using InputShapes = std::map<std::string, std::vector<int64_t>>;

/// The repository root this library was built from (scripts/, .cache/).
std::string source_dir();

/// The folder of the PP-OCR models (ch_PP-OCRv4_det_infer.onnx,
/// ch_ppocr_mobile_v2.0_cls_infer.onnx, ch_PP-OCRv4_rec_infer.onnx) that
/// scripts/install-deps.sh unpacks; it may not exist.
std::string ocr_models_dir();

/// Whether ONNX Runtime can run here: node starts and onnxruntime-node is
/// installed. If not, `why` (when non-null) says what is missing and how to
/// get it.
bool ort_available(std::string* why);

/// Median milliseconds of `runs` ONNX Runtime inferences of `model_path` after
/// `warmup` untimed ones, with `threads` intra-op threads (inter-op 1,
/// sequential, all graph optimizations). Inputs not in `inputs` get seeded
/// random values (seed 0) of the shape in `input_shapes` or the model's.
/// Errors: kNotFound (no model), kUnavailable (no node or ORT),
/// kInvalidArgument (threads/runs < 1, warmup < 0), kRuntimeError (ORT or the
/// script failed; the message holds its error).
Result<double> ort_median_ms(const std::string& model_path, const NpyInputs& inputs, const InputShapes& input_shapes,
                             int threads, int runs, int warmup);

/// A streaming model called `calls` times in a row in one session
/// (ort_run.js --stream): each input in `per_call` takes slice k of its file
/// at call k, each carried output (`carry`: output -> input) is the next
/// call's input, and every output is written stacked [calls, ...] to
/// `output_dir`. Returns the median milliseconds of one call. Errors as for
/// ort_median_ms.
Result<double> ort_stream_median_ms(const std::string& model_path, const NpyInputs& inputs,
                                    const std::vector<std::string>& per_call,
                                    const std::map<std::string, std::string>& carry, int calls, int threads,
                                    const std::string& output_dir);

/// Runs `model_path` once and writes each output as `output_dir`/<name>.npy
/// (names made file-safe: characters other than [A-Za-z0-9._-] become '_').
/// Inputs as for ort_median_ms. Errors as for ort_median_ms.
Status ort_run_outputs(const std::string& model_path, const NpyInputs& inputs, const std::string& output_dir,
                       int threads, const InputShapes& input_shapes = {});

/// Runs the model generator scripts/models/`script` under Debian's
/// /usr/bin/python3 with `-o path --seed seed` and `options`
/// (quantize_static.py with {"--model", "resnet18"}: the QDQ ResNet-18).
/// Errors: kUnavailable (no /usr/bin/python3 with onnx), kRuntimeError.
Status write_generated_model(const std::string& script, const std::string& path, int seed,
                             const std::vector<std::string>& options = {});

/// Writes a ResNet-18 ONNX model with seeded random weights to `path`
/// (scripts/models/resnet18.py under Debian's /usr/bin/python3): input
/// `input` [batch,3,224,224], output `output` [batch,1000].
/// Errors: kUnavailable (no /usr/bin/python3 with onnx), kRuntimeError.
Status write_resnet18(const std::string& path, int seed, int batch = 1);

/// Writes the transformer encoder of scripts/models/transformer.py (2 layers,
/// d_model 256, 4 heads, feed-forward 1024, GELU, LayerNorm as primitive
/// nodes) with seeded random weights to `path`: input `input` [1,128,256],
/// output `output` [1,128,256]. `options` go to the script as they are
/// ({"--seq", "77", "--d-model", "384", ...}: other sizes). Errors as for
/// write_resnet18.
Status write_transformer(const std::string& path, int seed, const std::vector<std::string>& options = {});

}  // namespace tessera::bench
