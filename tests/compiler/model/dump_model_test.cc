// What `tessera compile` records for profiles (call metadata) and dumps
// (--dump ir|ll|asm): real kernels compiled from a small graph.
#include "compiler/model/dump_model.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "compiler/codegen/llvm_target.h"
#include "compiler/external/cblas.h"
#include "tests/compiler/graph/graph_test_util.h"

namespace tessera::model {
namespace {

namespace fs = std::filesystem;

// conv + relu twice (one kernel, two calls), named as an ONNX exporter names them.
graph::Graph two_blocks() {
  graph::Graph g;
  graph::ValueId v = g.add_input("x", {1, 4, 6, 6}, DType::f32());
  for (int i = 0; i < 2; ++i) {
    const std::string s = std::to_string(i);
    graph::ValueId w =
        g.add_constant("w" + s, graph::Constant::from_floats({4, 4, 1, 1}, graph::test::random_floats(16, i)));
    graph::ValueId c = g.add_op("/block" + s + "/conv/Conv", graph::OpKind::kConv, graph::ConvAttrs{}, {v, w},
                                {1, 4, 6, 6}, DType::f32());
    v = g.add_op("/block" + s + "/relu/Relu", graph::OpKind::kRelu, graph::NoAttrs{}, {c}, {1, 4, 6, 6}, DType::f32());
  }
  g.set_outputs({v}, {"y"});
  return g;
}

std::string read(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class DumpModel : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("tessera_dump_" + std::to_string(::getpid()) + "_" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    PlanOptions no_layout;
    no_layout.nhwc_layout = false;  // the convs stay as named, no transposes around them
    auto plan = plan_model(two_blocks(), no_layout);
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    key_ = plan->tasks.at(0).dag->workload_key();
    auto compiled = compile_model(*plan, host_target());
    ASSERT_TRUE(compiled.is_ok()) << compiled.status().to_string();
    model_ = std::move(compiled).value();
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::string key_;  // the one task's workload key
  CompiledModel model_;
};

TEST_F(DumpModel, EveryCallCarriesItsNodesKeyAndFlops) {
  const runtime::PackageContents& p = model_.package;
  ASSERT_EQ(p.call_info.size(), p.calls.size());
  ASSERT_EQ(model_.kernels.size(), 1u);
  for (size_t i = 0; i < 2; ++i) {
    const runtime::CallInfo& info = p.call_info[i];
    const std::string s = std::to_string(i);
    EXPECT_EQ(info.nodes, (std::vector<std::string>{"/block" + s + "/conv/Conv", "/block" + s + "/relu/Relu"}));
    EXPECT_EQ(info.name, "fused_conv_relu");
    EXPECT_EQ(info.workload_key, key_);
    EXPECT_EQ(info.flops, model_.kernels[0].flops);
    EXPECT_GT(info.flops, 0);
    EXPECT_EQ(info.num_outputs, 1u);
  }
  // And through the file format.
  auto back = runtime::read_package_bytes(runtime::write_package_bytes(p).value());
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back->call_info, p.call_info);
}

// An external region's call lists the model nodes inside the region and
// every value it writes; it has no task, so no workload key.
TEST(CallMetadata, AnExternalRegionNamesItsNodesAndOutputs) {
  graph::Graph g;
  graph::ValueId x = g.add_input("x", {4, 6}, DType::f32());
  graph::ValueId wa = g.add_constant("wa", graph::Constant::from_floats({6, 6}, graph::test::random_floats(36, 1)));
  graph::ValueId wb = g.add_constant("wb", graph::Constant::from_floats({6, 3}, graph::test::random_floats(18, 2)));
  graph::ValueId a = g.add_op("/mm_a/MatMul", graph::OpKind::kMatMul, graph::NoAttrs{}, {x, wa}, {4, 6}, DType::f32());
  graph::ValueId b = g.add_op("/mm_b/MatMul", graph::OpKind::kMatMul, graph::NoAttrs{}, {a, wb}, {4, 3}, DType::f32());
  graph::ValueId s =
      g.add_op("/softmax/Softmax", graph::OpKind::kSoftmax, graph::AxisAttrs{1}, {a}, {4, 6}, DType::f32());
  g.set_outputs({b, s}, {"b", "s"});
  const std::unique_ptr<external::Backend> cblas = external::make_cblas_backend();
  PlanOptions options;
  options.byoc = cblas.get();
  auto plan = plan_model(g, options);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  ASSERT_EQ(plan->externals.size(), 1u);
  auto compiled = compile_model(*plan, host_target());
  ASSERT_TRUE(compiled.is_ok()) << compiled.status().to_string();
  const runtime::PackageContents& p = compiled->package;
  ASSERT_EQ(p.call_info.size(), p.calls.size());
  size_t region = 0;
  while (region < p.calls.size() && p.calls[region].symbol != plan->externals[0].code.symbol) ++region;
  ASSERT_LT(region, p.calls.size());
  const runtime::CallInfo& info = p.call_info[region];
  EXPECT_EQ(info.name, plan->externals[0].name);
  EXPECT_EQ(info.nodes, (std::vector<std::string>{"/mm_a/MatMul", "/mm_b/MatMul"}));
  EXPECT_EQ(info.num_outputs, 2u);
  EXPECT_TRUE(info.workload_key.empty());
  EXPECT_EQ(info.flops, 0);
  EXPECT_TRUE(runtime::validate_package(p).is_ok());
}

TEST_F(DumpModel, EachFormWritesOneFilePerKernelAndAnIndex) {
  const std::string symbol = model_.kernels[0].symbol;
  const std::string key = model_.package.call_info[0].workload_key;
  for (DumpKind kind : {DumpKind::kIr, DumpKind::kLlvmIr, DumpKind::kAssembly}) {
    const fs::path dir = dir_ / dump_kind_name(kind);
    ASSERT_TRUE(dump_kernels(model_, host_target(), kind, dir.string()).is_ok()) << dump_kind_name(kind);
    const std::string index = read(dir / "index.tsv");
    EXPECT_EQ(index.rfind("symbol\tfile\tworkload_key\tlabel\tnodes\n", 0), 0u) << index;
    EXPECT_NE(index.find(symbol + "\t"), std::string::npos) << index;
    EXPECT_NE(index.find("\t" + key + "\t"), std::string::npos) << index;
    EXPECT_NE(index.find("/block0/conv/Conv; /block0/relu/Relu | /block1/conv/Conv; /block1/relu/Relu"),
              std::string::npos)
        << index;
  }
  const std::string ir = read(dir_ / "ir" / (symbol + ".ir"));
  EXPECT_NE(ir.find("func " + symbol), std::string::npos) << ir;
  const std::string ll = read(dir_ / "ll" / (symbol + ".ll"));
  EXPECT_NE(ll.find("define"), std::string::npos);
  EXPECT_NE(ll.find("@" + symbol), std::string::npos);
  const std::string s = read(dir_ / "asm" / (symbol + ".s"));
  EXPECT_NE(s.find(symbol + ":"), std::string::npos) << "the assembly defines the kernel's symbol";
  if (std::system("command -v llvm-as-19 >/dev/null 2>&1") == 0) {
    const fs::path ll_path = dir_ / "ll" / (symbol + ".ll");
    EXPECT_EQ(std::system(("llvm-as-19 " + ll_path.string() + " -o /dev/null").c_str()), 0) << "the .ll parses";
  }
}

TEST_F(DumpModel, ADirectoryThatCannotBeMadeIsAnIOErrorNamingIt) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "file") << "x";
  const std::string bad = (dir_ / "file" / "asm").string();
  const Status st = dump_kernels(model_, host_target(), DumpKind::kAssembly, bad);
  EXPECT_EQ(st.code(), ErrorCode::kIOError);
  EXPECT_NE(st.message().find(bad), std::string::npos) << st.message();
}

}  // namespace
}  // namespace tessera::model
