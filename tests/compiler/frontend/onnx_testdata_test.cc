// Debian's libonnx-testdata node tests (files no one here wrote): each is a
// model.onnx with input_N.pb / output_N.pb TensorProtos. Import, optimize,
// run every fused group through lower + the reference interpreter, compare
// (onnx_node_test_util.h; tests/conformance/ runs them all natively).
#include <gtest/gtest.h>

#include "compiler/graph/passes.h"
#include "tests/compiler/frontend/onnx_node_test_util.h"
#include "tests/compiler/graph/graph_test_util.h"

namespace tessera::frontend {
namespace {

namespace fs = std::filesystem;
using test::kNodeTestDir;
const char* const kNodeDir = kNodeTestDir;

// Runs one node test; an error says which step failed.
Status run_node_test(const std::string& name, const fs::path& root = kNodeDir) {
  TESSERA_ASSIGN_OR_RETURN(test::NodeTestCase tc, test::load_node_test(root / name));
  if (!tc.unsupported.empty()) return Status(ErrorCode::kInvalidArgument, tc.unsupported);
  TESSERA_ASSIGN_OR_RETURN(graph::Graph imported, import_onnx_file(tc.model.string(), tc.options));
  TESSERA_ASSIGN_OR_RETURN(graph::Graph g, graph::optimize_graph(imported));
  std::map<graph::ValueId, graph::test::Bytes> inputs;
  for (graph::ValueId v : g.inputs()) {
    auto it = tc.inputs.find(g.value(v).name);
    if (it == tc.inputs.end() || it->second.dtype != g.value(v).dtype || it->second.shape != g.value(v).shape)
      return Status(ErrorCode::kInvalidArgument, "input " + g.value(v).name + " does not match the model");
    inputs[v] = it->second.bytes;
  }
  TESSERA_ASSIGN_OR_RETURN(auto outputs, graph::test::run_graph(g, inputs));
  if (outputs.size() != tc.outputs.size())
    return Status(ErrorCode::kInvalidArgument,
                  std::to_string(outputs.size()) + " outputs, want " + std::to_string(tc.outputs.size()));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const graph::Value& v = g.value(g.outputs()[i]);
    TESSERA_RETURN_IF_ERROR(test::compare_output(i, graph::Constant{v.dtype, v.shape, outputs[i]}, tc.outputs[i]));
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
    ::testing::Values(
        "test_relu", "test_add_bcast", "test_sub_bcast", "test_mul_bcast", "test_div_bcast", "test_pow_bcast_array",
        "test_conv_with_strides_padding", "test_conv_with_strides_and_asymmetric_padding",
        "test_conv_with_autopad_same", "test_basic_conv_with_padding", "test_maxpool_2d_pads",
        "test_maxpool_2d_same_upper", "test_maxpool_2d_dilations", "test_maxpool_2d_ceil", "test_averagepool_2d_pads",
        "test_averagepool_2d_pads_count_include_pad", "test_averagepool_2d_same_lower", "test_globalaveragepool",
        "test_batchnorm_example", "test_batchnorm_epsilon", "test_gemm_all_attributes", "test_gemm_transposeA",
        "test_gemm_default_scalar_bias", "test_matmul_2d", "test_matmul_4d", "test_softmax_axis_1",
        "test_softmax_default_axis", "test_transpose_all_permutations_3", "test_concat_3d_axis_negative_2",
        "test_flatten_axis2", "test_flatten_negative_axis3", "test_reshape_reordered_all_dims",
        "test_reshape_zero_and_negative_dim", "test_squeeze_negative_axes", "test_unsqueeze_unsorted_axes",
        "test_slice_neg_steps", "test_slice_default_axes", "test_slice_end_out_of_bounds",
        "test_split_variable_parts_2d", "test_split_equal_parts_default_axis", "test_convtranspose",
        "test_convtranspose_pads", "test_convtranspose_dilations", "test_convtranspose_kernel_shape",
        "test_convtranspose_output_shape", "test_convtranspose_with_kernel", "test_convtranspose_autopad_same",
        "test_convtranspose_pad", "test_resize_downsample_scales_linear",
        "test_resize_downsample_scales_linear_align_corners", "test_resize_downsample_scales_nearest",
        "test_resize_downsample_sizes_linear_pytorch_half_pixel", "test_resize_downsample_sizes_nearest",
        "test_resize_downsample_sizes_nearest_tf_half_pixel_for_nn", "test_resize_upsample_scales_linear",
        "test_resize_upsample_scales_linear_align_corners", "test_resize_upsample_scales_nearest",
        "test_resize_upsample_sizes_nearest", "test_resize_upsample_sizes_nearest_ceil_half_pixel",
        "test_resize_upsample_sizes_nearest_floor_align_corners",
        "test_resize_upsample_sizes_nearest_round_prefer_ceil_asymmetric", "test_reduce_sum_keepdims_random",
        "test_reduce_max_do_not_keepdims_random", "test_clip_default_int8_inbounds",
        "test_layer_normalization_4d_axis_negative_2", "test_layer_normalization_3d_axis1_epsilon",
        "test_dropout_default_mask", "test_max_example", "test_min_two_inputs", "test_gather_2d_indices",
        "test_gather_negative_indices", "test_sigmoid", "test_tanh", "test_erf", "test_hardswish", "test_hardsigmoid",
        "test_leakyrelu", "test_clip", "test_clip_default_min", "test_reduce_mean_keepdims_random",
        "test_reduce_mean_do_not_keepdims_random", "test_shape", "test_cast_FLOAT_to_DOUBLE"),
    [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param).substr(5); });

TEST(OnnxNodeFiles, ReshapeToAShapeFedAtRunTimeIsNotStatic) {
  if (!fs::exists(kNodeDir)) GTEST_SKIP() << "libonnx-testdata is not installed";
  Status st = import_onnx_file(std::string(kNodeDir) + "/test_reshape_reordered_all_dims/model.onnx").status();
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("(Reshape): the target shape is not static"), std::string::npos) << st.message();
}

// 3-D convolutions: PyTorch's exports of Conv3d (strides, padding, dilation,
// groups, no bias) and the node suite's 3-D ConvTranspose.
TEST(OnnxNodeFiles, Conv3dExportsMatchTheirExpectedOutputs) {
  if (!fs::exists(kNodeDir)) GTEST_SKIP() << "libonnx-testdata is not installed";
  const fs::path pytorch = fs::path(kNodeDir).parent_path() / "pytorch-converted";
  for (const char* name : {"test_Conv3d", "test_Conv3d_dilated", "test_Conv3d_dilated_strided", "test_Conv3d_groups",
                           "test_Conv3d_no_bias", "test_Conv3d_stride", "test_Conv3d_stride_padding"}) {
    Status st = run_node_test(name, pytorch);
    EXPECT_TRUE(st.is_ok()) << name << ": " << st.to_string();
  }
  Status st = run_node_test("test_convtranspose_3d");
  EXPECT_TRUE(st.is_ok()) << st.to_string();
}

// Not a check: counts how many node tests pass through the reference
// interpreter (run with --gtest_also_run_disabled_tests), with the same
// classes as the native conformance runner (tests/conformance/), and also
// over the PyTorch exports beside the node tests.
TEST(OnnxNodeTestsSurvey, DISABLED_CountAll) {
  for (const char* sub : {"node", "pytorch-converted", "pytorch-operator"}) {
    const fs::path root = fs::path(kNodeDir).parent_path() / sub;
    int passed = 0, failed = 0, unsupported = 0;
    for (const auto& entry : fs::directory_iterator(root)) {
      const std::string name = entry.path().filename().string();
      Status st = run_node_test(name, root);
      if (st.is_ok())
        ++passed;
      else if (st.message().rfind("unsupported ", 0) == 0)
        ++unsupported;  // test::unsupported_reason()
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
