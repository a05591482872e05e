// A model exported the way real ones are: generated at test time by Debian's
// python3-onnx (a ResNet-style stem and basic block with random weights and a
// dynamic batch dimension), with the expected output computed by NumPy.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/frontend/onnx_import.h"
#include "compiler/graph/passes.h"
#include "tests/compiler/graph/graph_test_util.h"

namespace tessera::frontend {
namespace {

namespace fs = std::filesystem;

constexpr char kScript[] = R"PY(
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
out = sys.argv[1]
rng = np.random.default_rng(0)
inits, nodes = [], []
def const(name, a):
    inits.append(numpy_helper.from_array(a.astype(np.float32), name)); return a.astype(np.float32)
def conv_bn(x, name, cin, cout, k, stride, pad):
    w = const(name + ".w", rng.standard_normal((cout, cin, k, k)) * 0.2)
    g = const(name + ".g", rng.uniform(0.5, 1.5, cout)); b = const(name + ".b", rng.standard_normal(cout) * 0.1)
    m = const(name + ".m", rng.standard_normal(cout) * 0.1); v = const(name + ".v", rng.uniform(0.5, 1.5, cout))
    nodes.append(helper.make_node("Conv", [x, name + ".w"], [name + ".c"], name=name, strides=[stride] * 2,
                                  pads=[pad] * 4, kernel_shape=[k, k]))
    nodes.append(helper.make_node("BatchNormalization", [name + ".c", name + ".g", name + ".b", name + ".m", name + ".v"],
                                  [name + ".bn"], name=name + "_bn", epsilon=1e-5))
    return name + ".bn", (w, g, b, m, v, stride, pad)
def np_conv(x, w, stride, pad):
    n, c, h, wd = x.shape; k, _, r, s = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - r) // stride + 1, (wd + 2 * pad - s) // stride + 1
    y = np.zeros((n, k, oh, ow))
    for i in range(r):
        for j in range(s):
            y += np.einsum("nchw,kc->nkhw", xp[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride], w[:, :, i, j])
    return y
def np_conv_bn(x, p):
    w, g, b, m, v, stride, pad = p
    y = np_conv(x, w, stride, pad)
    return (y - m[None, :, None, None]) / np.sqrt(v[None, :, None, None] + 1e-5) * g[None, :, None, None] + b[None, :, None, None]
relu = lambda a: np.maximum(a, 0)
t, p0 = conv_bn("x", "stem", 3, 8, 5, 2, 2)
nodes.append(helper.make_node("Relu", [t], ["stem.r"]))
nodes.append(helper.make_node("MaxPool", ["stem.r"], ["pool"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
t1, p1 = conv_bn("pool", "b1", 8, 8, 3, 1, 1)
nodes.append(helper.make_node("Relu", [t1], ["b1.r"]))
t2, p2 = conv_bn("b1.r", "b2", 8, 8, 3, 1, 1)
nodes.append(helper.make_node("Add", [t2, "pool"], ["res"]))
nodes.append(helper.make_node("Relu", ["res"], ["res.r"]))
nodes.append(helper.make_node("GlobalAveragePool", ["res.r"], ["gap"]))
nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], axis=1))
fw = const("fc.w", rng.standard_normal((10, 8)) * 0.3); fb = const("fc.b", rng.standard_normal(10) * 0.1)
nodes.append(helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["logits"], transB=1))
graph = helper.make_graph(nodes, "mini_resnet",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 16, 16])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(model)
onnx.save(model, out + "/model.onnx")
x = rng.standard_normal((2, 3, 16, 16)).astype(np.float32)
a = relu(np_conv_bn(x.astype(np.float64), p0))
ap = np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
pool = np.full((2, 8, 4, 4), -np.inf)
for i in range(3):
    for j in range(3):
        pool = np.maximum(pool, ap[:, :, i:i + 8:2, j:j + 8:2])
b = relu(np_conv_bn(relu(np_conv_bn(pool, p1)), p2) + pool)
logits = b.mean(axis=(2, 3)) @ fw.T.astype(np.float64) + fb
x.tofile(out + "/input.bin"); logits.astype(np.float32).tofile(out + "/expected.bin")
)PY";

std::vector<float> read_floats(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  const std::string bytes = s.str();
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

class PythonGeneratedModel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
    char tmpl[] = "/tmp/tessera_onnx_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ / "gen.py") << kScript;
    const std::string cmd = "/usr/bin/python3 " + (dir_ / "gen.py").string() + " " + dir_.string() + " 2>&1";
    if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "python3-onnx could not generate the model";
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  fs::path dir_;
};

TEST_F(PythonGeneratedModel, MiniResNetWithBoundBatchMatchesNumPy) {
  auto shapes = parse_input_shapes({"x:2,3,16,16"});
  ASSERT_TRUE(shapes.is_ok());
  auto g = import_onnx_file((dir_ / "model.onnx").string(), ImportOptions{*shapes});
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  auto opt = graph::optimize_graph(*g);
  ASSERT_TRUE(opt.is_ok()) << opt.status().to_string();
  for (const graph::Node& n : opt->nodes()) EXPECT_NE(n.kind, graph::OpKind::kBatchNorm) << n.name;
  const auto groups = graph::fuse_ops(*opt);
  auto tasks = graph::extract_tasks(*opt, groups);
  ASSERT_TRUE(tasks.is_ok()) << tasks.status().to_string();
  std::vector<std::string> names;
  for (const auto& t : tasks->tasks) names.push_back(t.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"fused_conv_relu", "fused_max_pool", "fused_conv_relu", "fused_conv_add_relu",
                                      "fused_global_avg_pool", "fused_reshape", "fused_gemm"}))
      << graph::groups_to_string(*opt, groups);
  auto got = graph::test::run_graph(*opt, {{opt->inputs()[0], graph::test::to_bytes(read_floats(dir_ / "input.bin"))}});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(graph::test::close(graph::test::to_floats((*got)[0]), read_floats(dir_ / "expected.bin"), 1e-3, 1e-4));
}

TEST_F(PythonGeneratedModel, WithoutBindingTheBatchIsAnError) {
  auto g = import_onnx_file((dir_ / "model.onnx").string());
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("input 'x' has unbound dynamic dimensions (batch)"), std::string::npos)
      << g.status().message();
  EXPECT_NE(g.status().message().find("read by node 'stem' (Conv)"), std::string::npos) << g.status().message();
}

}  // namespace
}  // namespace tessera::frontend
