// `tessera run --profile/--trace` and `tessera compile --dump` as a user runs
// them, on an ONNX model built here with the node names an exporter gives.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "runtime/package.h"
#include "tests/compiler/frontend/onnx_test_util.h"
#include "tests/tools/command.h"

namespace {

namespace fs = std::filesystem;
using tessera::test::Output;
using tessera::test::tessera;

// x[1,3,8,8] -> Conv + Relu -> GlobalAveragePool -> Flatten -> Gemm -> y[1,4].
std::string named_model_bytes() {
  tessera::frontend::test::ModelBuilder b;
  b.input("x", {1, 3, 8, 8});
  b.output("y", {1, 4});
  b.floats("conv1.weight", {8, 3, 3, 3}, std::vector<float>(216, 0.05f));
  b.floats("fc.weight", {4, 8}, std::vector<float>(32, 0.5f));
  b.floats("fc.bias", {4}, {0.f, 1.f, 2.f, 3.f});
  auto* conv = b.node("Conv", {"x", "conv1.weight"}, {"c"}, "/layer1/layer1.0/conv1/Conv");
  tessera::frontend::test::attr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
  b.node("Relu", {"c"}, {"r"}, "/layer1/layer1.0/relu/Relu");
  b.node("GlobalAveragePool", {"r"}, {"p"}, "/avgpool/GlobalAveragePool");
  b.node("Flatten", {"p"}, {"f"}, "/Flatten");
  auto* fc = b.node("Gemm", {"f", "fc.weight", "fc.bias"}, {"y"}, "/fc/Gemm");
  tessera::frontend::test::attr(fc, "transB", int64_t{1});
  return b.bytes();
}

class ProfileTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera_profile_trace_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(path("model.onnx"), std::ios::binary) << named_model_bytes();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // Compiles model.onnx into m.tsr with `extra` options, every kernel
  // Tessera's unless they name a backend; the exit code is checked.
  Output compile(const std::string& extra = "") const {
    const std::string byoc = extra.find("--byoc") == std::string::npos ? " --byoc none" : "";
    Output c = tessera("compile " + path("model.onnx") + " -o " + path("m.tsr") + " --no-records" + byoc + " " + extra);
    EXPECT_EQ(c.code, 0) << c.text;
    return c;
  }

  fs::path dir_;
};

TEST_F(ProfileTrace, TheProfileNamesEachKernelsOnnxNodesShapeKeyAndSpeed) {
  compile();
  Output r = tessera("run " + path("m.tsr") + " --random-inputs 1 --profile 3");
  ASSERT_EQ(r.code, 0) << r.text;
  for (const char* column : {"share", "GFLOP/s", "output", "kernel", "workload key", "nodes"})
    EXPECT_NE(r.text.find(column), std::string::npos) << column << "\n" << r.text;
  EXPECT_NE(r.text.find("/layer1/layer1.0/conv1/Conv + relu/Relu"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("/fc/Gemm"), std::string::npos) << r.text;
  // The conv's line: its NHWC output shape and a 32-digit workload key.
  const size_t line = r.text.rfind('\n', r.text.find("/layer1/layer1.0/conv1/Conv"));
  const std::string conv = r.text.substr(line + 1, r.text.find('\n', line + 1) - line - 1);
  EXPECT_NE(conv.find("1x8x8x8"), std::string::npos) << conv;
  EXPECT_NE(conv.find("fused_conv_relu"), std::string::npos) << conv;
  size_t hex = 0;
  for (char c : conv) hex = std::isxdigit(static_cast<unsigned char>(c)) ? hex + 1 : (hex >= 32 ? hex : 0);
  EXPECT_GE(hex, 32u) << conv;
}

// An external backend's region is named by the model's nodes it runs, and
// has no workload key (it is not Tessera's kernel).
TEST_F(ProfileTrace, AnExternalRegionIsNamedByItsNodes) {
  compile("--byoc dnnl");
  Output r = tessera("run " + path("m.tsr") + " --random-inputs 1 --profile 2");
  ASSERT_EQ(r.code, 0) << r.text;
  const size_t at = r.text.find("dnnl_region0");
  ASSERT_NE(at, std::string::npos) << r.text;
  const size_t line = r.text.rfind('\n', at);
  const std::string region = r.text.substr(line + 1, r.text.find('\n', at) - line - 1);
  EXPECT_NE(region.find("/layer1/layer1.0/conv1/Conv"), std::string::npos) << r.text;
  EXPECT_NE(region.find("1x8x8x8"), std::string::npos) << r.text;
}

TEST_F(ProfileTrace, AnOlderPackageWithoutCallMetadataProfilesWithDashes) {
  compile();
  auto contents = tessera::runtime::read_package(path("m.tsr"));
  ASSERT_TRUE(contents.is_ok()) << contents.status().to_string();
  ASSERT_FALSE(contents->call_info.empty());
  contents->call_info.clear();  // as written before call metadata existed
  ASSERT_TRUE(tessera::runtime::write_package(*contents, path("old.tsr")).is_ok());
  Output r = tessera("run " + path("old.tsr") + " --random-inputs 1 --profile 2 --trace " + path("old.json"));
  ASSERT_EQ(r.code, 0) << r.text;
  EXPECT_EQ(r.text.find("/layer1"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("fused_conv_relu  "), std::string::npos) << r.text;  // the symbol, then "-" columns
  EXPECT_NE(r.text.find("  -  "), std::string::npos) << r.text;
  EXPECT_NO_THROW(nlohmann::json::parse(std::ifstream(path("old.json"))));
}

TEST_F(ProfileTrace, TheTraceIsChromeTraceJsonOfOneRunAndSaysWhichRun) {
  compile();
  Output r = tessera("run " + path("m.tsr") + " --random-inputs 1 --bench 2 --trace " + path("t.json"));
  ASSERT_EQ(r.code, 0) << r.text;
  EXPECT_NE(r.text.find("one run after the 2 --bench runs (not one of them)"), std::string::npos) << r.text;
  const nlohmann::json trace = nlohmann::json::parse(std::ifstream(path("t.json")));
  const auto calls = tessera::runtime::read_package(path("m.tsr"))->calls.size();
  size_t complete = 0, thread_names = 0;
  bool named_conv = false;
  for (const nlohmann::json& e : trace.at("traceEvents")) {
    thread_names += e.at("ph") == "M" && e.at("name") == "thread_name";
    // Kernel events, one per call; "pool" events are the threads' shares of parallel loops.
    if (e.at("ph") != "X" || e.at("cat") != "kernel") continue;
    ++complete;
    EXPECT_EQ(e.at("pid"), trace["traceEvents"][0].at("pid"));
    EXPECT_GE(e.at("dur").get<double>(), 0);
    named_conv |= e.at("name") == "/layer1/layer1.0/conv1/Conv + relu/Relu" && e.at("args").at("nodes").size() == 2 &&
                  e.at("args").at("workload_key").get<std::string>().size() == 32;
  }
  EXPECT_EQ(complete, calls);
  EXPECT_GE(thread_names, 1u);
  EXPECT_TRUE(named_conv) << trace.dump(1);
  Output plain = tessera("run " + path("m.tsr") + " --random-inputs 1 --warmup 2 --trace " + path("t2.json"));
  ASSERT_EQ(plain.code, 0) << plain.text;
  EXPECT_NE(plain.text.find("one run after 3 warm-up runs"), std::string::npos) << plain.text;
}

TEST_F(ProfileTrace, AnUnwritableTracePathFailsBeforeRunningAndNamesIt) {
  compile();
  const std::string bad = path("no/such/dir/t.json");
  Output r = tessera("run " + path("m.tsr") + " --random-inputs 1 --trace " + bad);
  EXPECT_EQ(r.code, 1) << r.text;
  EXPECT_NE(r.text.find("cannot write the trace " + bad), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("y: float32"), std::string::npos) << "nothing ran";
}

TEST_F(ProfileTrace, CompileDumpsTheFusedGraphAndEachKernel) {
  Output c = compile("--dump graph=" + path("g.dot") + " --dump ir=" + path("ir") + " --dump asm=" + path("asm"));
  EXPECT_NE(c.text.find("fused graph: " + path("g.dot")), std::string::npos) << c.text;
  std::ifstream dot_file(path("g.dot"));
  const std::string dot((std::istreambuf_iterator<char>(dot_file)), {});
  EXPECT_NE(dot.find("conv + relu\\n/layer1/layer1.0/conv1/Conv\\n/layer1/layer1.0/relu/Relu\\n"), std::string::npos)
      << dot;
  EXPECT_NE(dot.find("fc.weight <4x8>"), std::string::npos) << dot;
  for (const char* dir : {"ir", "asm"}) {
    std::ifstream index_file(path(dir) + "/index.tsv");
    const std::string index((std::istreambuf_iterator<char>(index_file)), {});
    EXPECT_NE(index.find("/layer1/layer1.0/conv1/Conv; /layer1/layer1.0/relu/Relu"), std::string::npos) << index;
    size_t kernels = 0;
    for (const auto& entry : fs::directory_iterator(path(dir))) kernels += entry.path().filename() != "index.tsv";
    EXPECT_EQ(kernels + 1, static_cast<size_t>(std::count(index.begin(), index.end(), '\n'))) << index;
  }
  // The graph file form of the issue: --dump FILE.dot.
  Output short_form = compile("--dump " + path("short.dot"));
  EXPECT_TRUE(fs::exists(path("short.dot"))) << short_form.text;
}

TEST_F(ProfileTrace, BadDumpRequestsAreRefusedBeforeCompiling) {
  Output kind = tessera("compile " + path("model.onnx") + " -o " + path("m.tsr") + " --no-records --dump bogus=x");
  EXPECT_EQ(kind.code, 2) << kind.text;
  EXPECT_NE(kind.text.find("--dump 'bogus=x'"), std::string::npos) << kind.text;
  std::ofstream(path("afile")) << "x";
  const std::string bad_dir = path("afile/asm");
  Output dir =
      tessera("compile " + path("model.onnx") + " -o " + path("m.tsr") + " --no-records --dump asm=" + bad_dir);
  EXPECT_EQ(dir.code, 1) << dir.text;
  EXPECT_NE(dir.text.find(bad_dir), std::string::npos) << dir.text;
  const std::string bad_file = path("none/g.dot");
  Output file =
      tessera("compile " + path("model.onnx") + " -o " + path("m.tsr") + " --no-records --dump graph=" + bad_file);
  EXPECT_EQ(file.code, 1) << file.text;
  EXPECT_NE(file.text.find("cannot write the graph dump " + bad_file), std::string::npos) << file.text;
  EXPECT_FALSE(fs::exists(path("m.tsr"))) << "nothing was compiled";
}

}  // namespace
