// Every model bench_model benchmarks compiles with the default flags, as a
// new user's first `tessera compile MODEL.onnx` does (--byoc auto, which
// times nothing: without stored times every region is Tessera's, every
// kernel from its fallback),
// and its package loads and runs: the default path never fails where a
// model runs at all.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <tuple>

#include "bench/model_cases.h"
#include "bench/ort_peer.h"
#include "driver/compile.h"
#include "runtime/graph_executor.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

// The benchmarked models, each once (the *_Dnnl and bf16 variants time a
// model already listed; the default precision is float32).
std::vector<BenchmarkedModel> distinct_models() {
  std::vector<BenchmarkedModel> out;
  std::set<std::tuple<std::string, std::string, std::vector<std::string>>> seen;
  for (const BenchmarkedModel& m : benchmarked_models())
    if (seen.insert({m.model.generator, m.model.file, m.model.generator_options}).second) out.push_back(m);
  return out;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s;
}

class DefaultCompile : public ::testing::TestWithParam<BenchmarkedModel> {};

TEST_P(DefaultCompile, CompilesLoadsAndRunsWithTheDefaultFlags) {
  const ModelCase& mc = GetParam().model;
  std::string path;
  if (!mc.generator.empty()) {
    path = ::testing::TempDir() + "/default_compile_" + std::to_string(::getpid()) + ".onnx";
    const Status st = bench::write_generated_model(mc.generator, path, 7, mc.generator_options);
    if (!st.is_ok()) GTEST_SKIP() << st.to_string();
  } else {
    path = bench::ocr_models_dir() + "/" + mc.file;
    if (!fs::exists(path)) GTEST_SKIP() << path << " missing: run scripts/install-deps.sh";
  }
  driver::ModelCompileArgs args;  // the defaults, but no records database
  args.model = path;
  args.input_shapes = {mc.input_name + ":" + shape_text(mc.input_shape)};
  args.use_records = false;
  auto compiled = driver::compile_model_file(args);
  if (!mc.generator.empty()) fs::remove(path);
  ASSERT_TRUE(compiled.is_ok()) << GetParam().name << ": " << compiled.status().to_string();
  auto exec = runtime::GraphExecutor::load(compiled->compiled.package);
  ASSERT_TRUE(exec.is_ok()) << exec.status().to_string();
  uint64_t seed = 1;
  for (const runtime::TensorInfo& in : (*exec)->input_info()) {
    auto x = runtime::NDArray::create(in.shape, in.dtype);
    ASSERT_TRUE(x.is_ok());
    x->fill_random(seed++);
    ASSERT_TRUE((*exec)->set_input(in.name, *x).is_ok());
  }
  EXPECT_TRUE((*exec)->run().is_ok());
}

INSTANTIATE_TEST_SUITE_P(Benchmarked, DefaultCompile, ::testing::ValuesIn(distinct_models()),
                         [](const ::testing::TestParamInfo<BenchmarkedModel>& info) {
                           return info.param.name.substr(std::string("BM_Model_").size());
                         });

}  // namespace
}  // namespace tessera
