// Debian's libonnx-testdata node tests (files no one here wrote): each is a
// model.onnx with input_N.pb / output_N.pb TensorProtos. Import, optimize,
// run every fused group through lower + the reference interpreter, compare.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/frontend/onnx_context.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/graph/passes.h"
#include "tests/compiler/graph/graph_test_util.h"

namespace tessera::frontend {
namespace {

namespace fs = std::filesystem;
const char kNodeDir[] = "/usr/share/libonnx-testdata/data/node";

Result<graph::Constant> read_tensor(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  onnx::TensorProto t;
  if (!in || !t.ParseFromString(s.str())) return Status(ErrorCode::kParseError, path.string() + ": not a TensorProto");
  return detail::constant_of_tensor(t);
}

// Runs one node test; an error says which step failed.
Status run_node_test(const std::string& name, const fs::path& root = kNodeDir) {
  const fs::path dir = root / name;
  // int64 inputs are shape parameters (Reshape's shape, axes, starts, ...),
  // and so are Resize's scales and roi: they become constants; the rest are
  // fed at run time, matched by name.
  std::map<std::string, graph::Constant> data;
  ImportOptions options;
  {
    onnx::ModelProto model;
    std::ifstream in(dir / "model.onnx", std::ios::binary);
    if (!model.ParseFromIstream(&in)) return Status(ErrorCode::kParseError, "model.onnx");
    int index = 0;
    for (const auto& input : model.graph().input()) {
      auto c = read_tensor(dir / "test_data_set_0" / ("input_" + std::to_string(index++) + ".pb"));
      if (!c.is_ok()) continue;  // an initializer listed as an input
      if (c->dtype == DType::i64() || input.name() == "scales" || input.name() == "roi")
        options.constant_inputs[input.name()] = *c;
      else data[input.name()] = *c;
    }
  }
  TESSERA_ASSIGN_OR_RETURN(graph::Graph imported, import_onnx_file((dir / "model.onnx").string(), options));
  TESSERA_ASSIGN_OR_RETURN(graph::Graph g, graph::optimize_graph(imported));
  std::map<graph::ValueId, graph::test::Bytes> inputs;
  for (graph::ValueId v : g.inputs()) {
    auto it = data.find(g.value(v).name);
    if (it == data.end() || it->second.dtype != g.value(v).dtype || it->second.shape != g.value(v).shape)
      return Status(ErrorCode::kInvalidArgument, "input " + g.value(v).name + " does not match the model");
    inputs[v] = it->second.bytes;
  }
  TESSERA_ASSIGN_OR_RETURN(auto outputs, graph::test::run_graph(g, inputs));
  for (size_t i = 0; i < outputs.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(graph::Constant want,
                             read_tensor(dir / "test_data_set_0" / ("output_" + std::to_string(i) + ".pb")));
    const graph::Value& v = g.value(g.outputs()[i]);
    const graph::Constant got{v.dtype, v.shape, outputs[i]};
    if (got.shape != want.shape)
      return Status(ErrorCode::kInvalidArgument, "output " + std::to_string(i) + " has shape " +
                                                     graph::shape_string(got.shape) + ", want " +
                                                     graph::shape_string(want.shape));
    const auto a = got.to_doubles(), b = want.to_doubles();
    for (size_t j = 0; j < a.size(); ++j)
      if (!(std::fabs(a[j] - b[j]) <= 1e-4 + 1e-3 * std::fabs(b[j])) && !(std::isnan(a[j]) && std::isnan(b[j])))
        return Status(ErrorCode::kInvalidArgument, "output " + std::to_string(i) + "[" + std::to_string(j) +
                                                       "] is " + std::to_string(a[j]) + ", want " + std::to_string(b[j]));
  }
  return Status::ok();
}

class OnnxNodeTests : public ::testing::TestWithParam<const char*> {};

TEST_P(OnnxNodeTests, ImportRunAndMatchExpectedOutputs) {
  if (!fs::exists(kNodeDir)) GTEST_SKIP() << "libonnx-testdata is not installed";
  Status st = run_node_test(GetParam());
  EXPECT_TRUE(st.is_ok()) << GetParam() << ": " << st.to_string();
}

INSTANTIATE_TEST_SUITE_P(
    Debian, OnnxNodeTests,
    ::testing::Values("test_relu", "test_add_bcast", "test_sub_bcast", "test_mul_bcast", "test_div_bcast",
                      "test_pow_bcast_array", "test_conv_with_strides_padding",
                      "test_conv_with_strides_and_asymmetric_padding", "test_conv_with_autopad_same",
                      "test_basic_conv_with_padding", "test_maxpool_2d_pads", "test_maxpool_2d_same_upper",
                      "test_maxpool_2d_dilations", "test_maxpool_2d_ceil", "test_averagepool_2d_pads",
                      "test_averagepool_2d_pads_count_include_pad", "test_averagepool_2d_same_lower",
                      "test_globalaveragepool", "test_batchnorm_example", "test_batchnorm_epsilon",
                      "test_gemm_all_attributes", "test_gemm_transposeA", "test_gemm_default_scalar_bias",
                      "test_matmul_2d", "test_matmul_4d", "test_softmax_axis_1", "test_softmax_default_axis",
                      "test_transpose_all_permutations_3", "test_concat_3d_axis_negative_2",
                      "test_flatten_axis2", "test_flatten_negative_axis3", "test_reshape_reordered_all_dims",
                      "test_reshape_zero_and_negative_dim", "test_squeeze_negative_axes", "test_unsqueeze_unsorted_axes",
                      "test_slice_neg_steps", "test_slice_default_axes", "test_slice_end_out_of_bounds",
                      "test_split_variable_parts_2d", "test_split_equal_parts_default_axis",
                      "test_convtranspose", "test_convtranspose_pads", "test_convtranspose_dilations",
                      "test_convtranspose_kernel_shape", "test_convtranspose_output_shape",
                      "test_convtranspose_with_kernel", "test_convtranspose_autopad_same", "test_convtranspose_pad",
                      "test_resize_downsample_scales_linear", "test_resize_downsample_scales_linear_align_corners",
                      "test_resize_downsample_scales_nearest", "test_resize_downsample_sizes_linear_pytorch_half_pixel",
                      "test_resize_downsample_sizes_nearest", "test_resize_downsample_sizes_nearest_tf_half_pixel_for_nn",
                      "test_resize_upsample_scales_linear", "test_resize_upsample_scales_linear_align_corners",
                      "test_resize_upsample_scales_nearest", "test_resize_upsample_sizes_nearest",
                      "test_resize_upsample_sizes_nearest_ceil_half_pixel",
                      "test_resize_upsample_sizes_nearest_floor_align_corners",
                      "test_resize_upsample_sizes_nearest_round_prefer_ceil_asymmetric",
                      "test_reduce_sum_keepdims_random", "test_reduce_max_do_not_keepdims_random",
                      "test_clip_default_int8_inbounds", "test_layer_normalization_4d_axis_negative_2",
                      "test_layer_normalization_3d_axis1_epsilon", "test_dropout_default_mask", "test_max_example", "test_min_two_inputs",
                      "test_gather_2d_indices", "test_gather_negative_indices", "test_sigmoid", "test_tanh",
                      "test_erf", "test_hardswish", "test_hardsigmoid", "test_leakyrelu", "test_clip",
                      "test_clip_default_min", "test_reduce_mean_keepdims_random",
                      "test_reduce_mean_do_not_keepdims_random", "test_shape", "test_cast_FLOAT_to_DOUBLE"),
    [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param).substr(5); });

TEST(OnnxNodeFiles, ReshapeToAShapeFedAtRunTimeIsNotStatic) {
  if (!fs::exists(kNodeDir)) GTEST_SKIP() << "libonnx-testdata is not installed";
  Status st = import_onnx_file(std::string(kNodeDir) + "/test_reshape_reordered_all_dims/model.onnx").status();
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("(Reshape): the target shape is not static"), std::string::npos) << st.message();
}

// Not a check: counts how many node tests of the supported operators pass
// (run with --gtest_also_run_disabled_tests); the conformance runner proper
// is a later ctest target.
TEST(OnnxNodeTestsSurvey, DISABLED_CountAll) {
  for (const char* sub : {"node", "pytorch-converted", "pytorch-operator"}) {
    const fs::path root = fs::path(kNodeDir).parent_path() / sub;
    int passed = 0, failed = 0, unsupported = 0;
    for (const auto& entry : fs::directory_iterator(root)) {
      const std::string name = entry.path().filename().string();
      Status st = run_node_test(name, root);
      if (st.is_ok()) ++passed;
      else if (st.message().find("unsupported operator") != std::string::npos) ++unsupported;
      else {
        ++failed;
        std::printf("FAIL %s/%s: %s\n", sub, name.c_str(), st.to_string().substr(0, 300).c_str());
      }
    }
    std::printf("%s: %d passed, %d failed, %d unsupported\n", sub, passed, failed, unsupported);
  }
}

}  // namespace
}  // namespace tessera::frontend
