#include "bench/model_cases.h"

namespace tessera {

std::vector<BenchmarkedModel> benchmarked_models() {
  std::vector<BenchmarkedModel> models;
  models.push_back({"BM_Model_ResNet18", ModelCase{"input", {1, 3, 224, 224}, "resnet18.py", "", ""}});
  models.push_back({"BM_Model_PPOCRDet", ModelCase{"x", {1, 3, 640, 640}, "", "ch_PP-OCRv4_det_infer.onnx", ""}});
  // The classifier also has a 16-trial run: a quick check that tuning works end to end.
  models.push_back({"BM_Model_PPOCRCls",
                    ModelCase{"x", {1, 3, 48, 192}, "", "ch_ppocr_mobile_v2.0_cls_infer.onnx", ""},
                    {0, 16, kTunedTrials}});
  // scripts/models/transformer.py: 2 post-norm layers, d_model 256, 4 heads,
  // feed-forward 1024, erf GELU, sequence 128, batch 1 (issue 17).
  models.push_back({"BM_Model_Transformer", ModelCase{"input", {1, 128, 256}, "transformer.py", "", ""}});
  // The same encoder at sizes nobody rounds: CLIP's text length (77), 6
  // heads of 64, feed-forward 1536, 5 padded keys.
  models.push_back({"BM_Model_TransformerOdd",
                    ModelCase{"input",
                              {1, 77, 384},
                              "transformer.py",
                              "",
                              "",
                              {"--seq", "77", "--d-model", "384", "--heads", "6", "--ff", "1536", "--pad", "5"}}});
  // The PP-OCR recognizer: a convolutional trunk, then attention and
  // layer norms over 40 columns, and a softmax over 6,625 characters.
  models.push_back({"BM_Model_PPOCRRec", ModelCase{"x", {1, 3, 48, 320}, "", "ch_PP-OCRv4_rec_infer.onnx", ""}});
  // Quantized as ONNX Runtime's quantization tool writes them
  // (scripts/models/quantize_*.py): the ResNet-18 in QDQ form (per-channel
  // int8 weights, uint8 activations), and dynamically (DynamicQuantizeLinear
  // with ConvInteger / MatMulInteger) a small conv net and the encoder.
  models.push_back({"BM_Model_ResNet18Int8",
                    ModelCase{"input", {1, 3, 224, 224}, "quantize_static.py", "", "", {"--model", "resnet18"}, 2e-2}});
  // MobileNetV2 (scripts/models/mobilenet_v2.py, torchvision's network as
  // the exporter writes it) in float and in QDQ: depthwise convs.
  models.push_back({"BM_Model_MobileNetV2", ModelCase{"input", {1, 3, 224, 224}, "mobilenet_v2.py", "", ""}});
  models.push_back(
      {"BM_Model_MobileNetV2Int8",
       ModelCase{"input", {1, 3, 224, 224}, "quantize_static.py", "", "", {"--model", "mobilenet_v2"}, 2e-2}});
  // The same with int8 activations (ONNX Runtime's S8S8 QDQ form).
  models.push_back({"BM_Model_ResNet18S8S8", ModelCase{"input",
                                                       {1, 3, 224, 224},
                                                       "quantize_static.py",
                                                       "",
                                                       "",
                                                       {"--model", "resnet18", "--activation-type", "int8"},
                                                       2e-2}});
  models.push_back({"BM_Model_ConvNetDynInt8",
                    ModelCase{"input", {1, 3, 64, 64}, "quantize_dynamic.py", "", "", {"--model", "convnet"}, 1e-3}});
  models.push_back(
      {"BM_Model_TransformerDynInt8",
       ModelCase{"input", {1, 128, 256}, "quantize_dynamic.py", "", "", {"--model", "transformer"}, 1e-2}});
  // Converted to float16 as onnxconverter-common writes it
  // (scripts/models/float16.py): the ResNet-18 with float16 inputs and
  // outputs, the encoder with keep_io_types.
  models.push_back({"BM_Model_ResNet18Fp16",
                    ModelCase{"input", {1, 3, 224, 224}, "float16.py", "", "", {"--model", "resnet18"}, 1e-2}});
  models.push_back(
      {"BM_Model_TransformerFp16",
       ModelCase{"input", {1, 128, 256}, "float16.py", "", "", {"--model", "transformer", "--keep-io-types"}, 1e-2}});
  // Issue 34: speech, audio and segmentation models as torch.onnx.export
  // writes them (scripts/models/): a log-mel front end (the STFT as two 1-D
  // convs, n_fft 512, hop 160, 1 s at 16 kHz), a wav2vec2-style feature
  // encoder, a Whisper-tiny-like encoder (1,500 positions) and a U2-Net RSU
  // block at 320 x 320; within 1e-3 of the output's scale.
  models.push_back({"BM_Model_MelFrontEnd", ModelCase{"audio", {1, 1, 16000}, "mel_frontend.py", "", "", {}, 1e-3}});
  models.push_back({"BM_Model_AudioEncoder", ModelCase{"audio", {1, 16000}, "audio_encoder.py", "", "", {}, 1e-3}});
  models.push_back(
      {"BM_Model_SpeechTransformer", ModelCase{"mel", {1, 80, 3000}, "speech_transformer.py", "", "", {}, 1e-3}});
  models.push_back(
      {"BM_Model_SegmentationBlock", ModelCase{"input", {1, 3, 320, 320}, "segmentation_block.py", "", "", {}, 1e-3}});
  // Issue 33: the float32 models with --precision bf16 (products by
  // weights in bfloat16, float32 sums), against ONNX Runtime's float32 and
  // Tessera's float32 package (vs_float32). Skipped where the CPU lacks a
  // bfloat16 dot product.
  models.push_back(
      {"BM_Model_ResNet18Bf16", ModelCase{"input", {1, 3, 224, 224}, "resnet18.py", "", "", {}, 2e-2, "bf16"}});
  models.push_back(
      {"BM_Model_TransformerBf16", ModelCase{"input", {1, 128, 256}, "transformer.py", "", "", {}, 2e-2, "bf16"}});
  // The same with --precision fp16 (their weights stored in float16, widened
  // as read): half the weights' bytes; skipped where the CPU lacks F16C.
  models.push_back(
      {"BM_Model_ResNet18Fp16Weights", ModelCase{"input", {1, 3, 224, 224}, "resnet18.py", "", "", {}, 1e-2, "fp16"}});
  models.push_back({"BM_Model_TransformerFp16Weights",
                    ModelCase{"input", {1, 128, 256}, "transformer.py", "", "", {}, 1e-2, "fp16"}});
  // Recurrent speech models as torch.onnx.export writes them
  // (scripts/models/lstm_speech.py, gru_speech.py): two layers over
  // [1, 100, 64], hidden 128, unrolled over the 100 steps.
  models.push_back({"BM_Model_LstmSpeech", ModelCase{"input", {1, 100, 64}, "lstm_speech.py", "", "", {}, 1e-4}});
  models.push_back({"BM_Model_GruSpeech", ModelCase{"input", {1, 100, 64}, "gru_speech.py", "", "", {}, 1e-4}});
  // Issue 20: the same models with their regions through oneDNN, beside the all-Tessera package.
  models.push_back({"BM_Model_ResNet18_Dnnl", ModelCase{"input", {1, 3, 224, 224}, "resnet18.py", "", "dnnl"}});
  models.push_back(
      {"BM_Model_PPOCRDet_Dnnl", ModelCase{"x", {1, 3, 640, 640}, "", "ch_PP-OCRv4_det_infer.onnx", "dnnl"}});
  models.push_back(
      {"BM_Model_PPOCRCls_Dnnl", ModelCase{"x", {1, 3, 48, 192}, "", "ch_ppocr_mobile_v2.0_cls_infer.onnx", "dnnl"}});
  return models;
}

}  // namespace tessera
