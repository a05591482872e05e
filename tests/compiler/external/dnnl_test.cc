// The dnnl backend: its partition and payload, a model compiled with --byoc
// dnnl matching the all-Tessera compile and the reference through a package
// file, the payload section's round trip, and the load errors (a missing
// runtime module, a corrupt payload); what it cannot generate falls back.
#include "compiler/external/dnnl.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "compiler/codegen/llvm_target.h"
#include "compiler/external/offload.h"
#include "compiler/model/choose_byoc.h"
#include "compiler/model/compile_model.h"
#include "runtime/graph_executor.h"
#include "tests/compiler/external/dnnl_test_model.h"
#include "tests/compiler/external/external_test_util.h"

namespace tessera::external {
namespace {

using graph::Graph;
using graph::OpKind;
using graph::ValueId;
namespace gt = graph::test;

using gt::conv;
using gt::conv_model;
using gt::unary;
using gt::weight;
using gt::window;

using gt::array_of;
using gt::Outputs;

Result<Outputs> run_package(const runtime::PackageContents& package, const std::vector<float>& x) {
  const std::string path = ::testing::TempDir() + "/dnnl_" + std::to_string(::getpid()) + ".tsr";
  TESSERA_RETURN_IF_ERROR(runtime::write_package(package, path));
  auto exec = runtime::GraphExecutor::load_file(path, {});
  std::remove(path.c_str());
  if (!exec.is_ok()) return exec.status();
  const runtime::TensorInfo in = (*exec)->input_info().at(0);
  TESSERA_RETURN_IF_ERROR((*exec)->set_input(in.name, array_of(in.shape, x)));
  Outputs out;
  for (int run = 0; run < 2; ++run) {  // the primitives are built once and run on every call
    TESSERA_RETURN_IF_ERROR((*exec)->run());
    for (const std::string& name : (*exec)->output_names()) {
      TESSERA_ASSIGN_OR_RETURN(runtime::NDArray y, (*exec)->get_output(name));
      out[name].resize(static_cast<size_t>(y.numel()));
      std::memcpy(out[name].data(), y.raw_data(), out[name].size() * sizeof(float));
    }
  }
  return out;
}

Result<model::CompiledModel> compile(const Graph& g, const Backend* backend, bool nhwc, model::ModelPlan* plan_out) {
  model::PlanOptions po;
  po.byoc = backend;
  po.nhwc_layout = nhwc;
  TESSERA_ASSIGN_OR_RETURN(*plan_out, model::plan_model(g, po));
  return model::compile_model(*plan_out, host_target(), {nullptr, 2});
}

::testing::AssertionResult near(const std::vector<float>& got, const std::vector<float>& want) {
  return gt::close(got, want, 1e-3, 1e-4);  // oneDNN sums in its own order
}

class DnnlModel : public ::testing::TestWithParam<bool> {};

TEST_P(DnnlModel, MatchesTesseraAndTheReference) {
  const bool nhwc = GetParam();
  const Graph g = conv_model();
  const auto x = gt::random_floats(3 * 16 * 16, 7);
  const std::unique_ptr<Backend> dnnl = make_dnnl_backend();
  model::ModelPlan plan, plain_plan;
  auto compiled = compile(g, dnnl.get(), nhwc, &plan);
  ASSERT_TRUE(compiled.is_ok()) << compiled.status().to_string();
  EXPECT_TRUE(plan.warnings.empty());
  // The convolutional trunk is one region, the dense head another; the flatten is Tessera's.
  ASSERT_EQ(plan.externals.size(), 2u);
  EXPECT_EQ(plan.externals[0].kind, BackendKind::kGraphPayload);
  ASSERT_EQ(compiled->package.payloads.size(), 2u);
  EXPECT_EQ(compiled->package.payloads[0].backend, "dnnl");
  EXPECT_EQ(compiled->package.payloads[0].version, kDnnlPayloadVersion);
  ASSERT_EQ(compiled->package.externals.size(), 1u);
  EXPECT_EQ(compiled->package.externals[0], (runtime::ExternalModule{"dnnl", "graph-payload", kDnnlModuleLibrary}));
  auto got = run_package(compiled->package, x);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();

  auto tessera = compile(g, nullptr, nhwc, &plain_plan);
  ASSERT_TRUE(tessera.is_ok()) << tessera.status().to_string();
  auto want_tessera = run_package(tessera->package, x);
  ASSERT_TRUE(want_tessera.is_ok()) << want_tessera.status().to_string();
  auto want = gt::run_graph(g, {{g.inputs()[0], gt::to_bytes(x)}});
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  EXPECT_TRUE(near(got->at("y"), gt::to_floats((*want)[0])));
  EXPECT_TRUE(near(got->at("features"), gt::to_floats((*want)[1])));
  EXPECT_TRUE(near(got->at("y"), want_tessera->at("y")));
  EXPECT_TRUE(near(got->at("features"), want_tessera->at("features")));
}

INSTANTIATE_TEST_SUITE_P(Layouts, DnnlModel, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Nhwc" : "Nchw"; });

// run_with on the caller's buffers (what the Python module does): a region's
// pointers are fixed when it is created, so its inputs and outputs are
// copied, and the outputs are those of run().
TEST(DnnlRegions, RunWithTheCallersBuffersReachesTheRegions) {
  const Graph g = conv_model();
  const auto x = gt::random_floats(3 * 16 * 16, 11);
  const std::unique_ptr<Backend> dnnl = make_dnnl_backend();
  model::ModelPlan plan;
  auto compiled = compile(g, dnnl.get(), true, &plan);
  ASSERT_TRUE(compiled.is_ok()) << compiled.status().to_string();
  ASSERT_EQ(plan.externals.size(), 2u);  // the input and both outputs touch a region
  auto want = run_package(compiled->package, x);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();

  auto exec = runtime::GraphExecutor::load(compiled->package);
  ASSERT_TRUE(exec.is_ok()) << exec.status().to_string();
  const runtime::TensorInfo in = (*exec)->input_info().at(0);
  runtime::NDArray input = array_of(in.shape, x);
  std::vector<runtime::NDArray> outputs;
  std::vector<void*> out_ptrs;
  for (const runtime::TensorInfo& o : (*exec)->output_info()) {
    outputs.push_back(runtime::NDArray::create(o.shape, o.dtype).value());
    out_ptrs.push_back(outputs.back().raw_data());
  }
  for (int run = 0; run < 2; ++run) {
    ASSERT_TRUE((*exec)->run_with({input.raw_data()}, out_ptrs).is_ok());
    for (size_t i = 0; i < outputs.size(); ++i) {
      const std::string name = (*exec)->output_info()[i].name;
      const std::vector<float> got(outputs[i].data<float>(), outputs[i].data<float>() + outputs[i].numel());
      EXPECT_EQ(got, want->at(name)) << name << ", run " << run;
    }
  }
}

// conv + bias add + relu is one composite: one oneDNN op with two post-ops;
// the softmax between the two convs is Tessera's, so there are two regions.
TEST(DnnlBackend, PartitionAndPayloadFoldPostOps) {
  Graph g;
  ValueId x = g.add_input("x", {1, 4, 6, 6}, DType::f32());
  ValueId c = conv(g, "c0", x, 4, 4, 3, 1, false, 1);
  c = g.add_op("bias", OpKind::kAdd, graph::NoAttrs{}, {c, weight(g, "b", {4, 1, 1}, 2)}, {1, 4, 6, 6}, DType::f32());
  c = unary(g, "relu", OpKind::kRelu, c);
  ValueId s = g.add_op("softmax", OpKind::kSoftmax, graph::AxisAttrs{3}, {c}, {1, 4, 6, 6}, DType::f32());
  ValueId d = conv(g, "c1", s, 2, 4, 1, 1, true, 3);
  g.set_outputs({d});
  const std::unique_ptr<Backend> dnnl = make_dnnl_backend();
  EXPECT_EQ(gt::regions_to_string(g, graph::find_regions(g, dnnl->partition_rules())),
            "dnnl_region0: c0 bias relu (in %0 %1 %3) -> %5\n"
            "dnnl_region1: c1 (in %6 %7 %8) -> %9\n");
  auto offloaded = offload_regions(g, *dnnl);
  ASSERT_TRUE(offloaded.is_ok()) << offloaded.status().to_string();
  ASSERT_EQ(offloaded->regions.size(), 2u);
  const auto payload = nlohmann::json::parse(offloaded->regions[0].code.source);
  ASSERT_EQ(payload.at("ops").size(), 1u) << payload.dump();
  const auto& op = payload.at("ops")[0];
  EXPECT_EQ(op.at("op"), "conv");
  ASSERT_EQ(op.at("post_ops").size(), 2u);
  EXPECT_EQ(op.at("post_ops")[0].at("kind"), "add");
  EXPECT_EQ(op.at("post_ops")[1].at("kind"), "relu");
  // x is data, the conv's weight a weight (reordered once at load), the bias operand data.
  EXPECT_EQ(payload.at("inputs")[0].at("weight"), false);
  EXPECT_EQ(payload.at("inputs")[1].at("weight"), true);
  EXPECT_EQ(payload.at("inputs")[2].at("weight"), false);
  EXPECT_EQ(payload.at("symbol"), "tsr_x0_dnnl_region0");
}

// A downsampling residual block in ResNet's node order: the 1x1 conv comes
// after the block's second conv, so the add goes with the later conv (a
// oneDNN sum) and the block stays one region.
TEST(DnnlBackend, DownsamplingBlockIsOneRegion) {
  Graph g;
  ValueId x = g.add_input("x", {1, 4, 8, 8}, DType::f32());
  ValueId h = unary(g, "relu1", OpKind::kRelu, conv(g, "conv1", x, 8, 4, 3, 1, true, 1));
  ValueId c2 = conv(g, "conv2", h, 8, 8, 3, 1, true, 2);
  ValueId ds = conv(g, "down", x, 8, 4, 1, 1, true, 3);
  ValueId y = g.add_op("add", OpKind::kAdd, graph::NoAttrs{}, {c2, ds}, {1, 8, 8, 8}, DType::f32());
  y = unary(g, "relu2", OpKind::kRelu, y);
  g.set_outputs({y}, {"y"});
  const std::unique_ptr<Backend> dnnl = make_dnnl_backend();
  EXPECT_EQ(gt::regions_to_string(g, graph::find_regions(g, dnnl->partition_rules())),
            "dnnl_region0: conv1 relu1 conv2 down add relu2 (in %0 %1 %2 %5 %6 %8 %9) -> %12\n");
  model::ModelPlan plan;
  auto compiled = compile(g, dnnl.get(), true, &plan);
  ASSERT_TRUE(compiled.is_ok()) << compiled.status().to_string();
  const auto data = gt::random_floats(4 * 8 * 8, 9);
  auto got = run_package(compiled->package, data);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  auto want = gt::run_graph(g, {{x, gt::to_bytes(data)}});
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  EXPECT_TRUE(near(got->at("y"), gt::to_floats((*want)[0])));
}

// Both operands of the add broadcast ([4, 1] + [1, 4]): the predicate takes
// it, the payload writer cannot (oneDNN broadcasts the second only).
TEST(DnnlBackend, RegionItCannotGenerateFallsBackWithAWarning) {
  Graph g;
  ValueId a = g.add_input("a", {4, 1}, DType::f32());
  ValueId b = g.add_input("b", {1, 4}, DType::f32());
  ValueId y = g.add_op("outer", OpKind::kAdd, graph::NoAttrs{}, {a, b}, {4, 4}, DType::f32());
  y = unary(g, "relu", OpKind::kRelu, y);
  g.set_outputs({y}, {"y"});
  const std::unique_ptr<Backend> dnnl = make_dnnl_backend();
  model::ModelPlan plan;
  auto compiled = compile(g, dnnl.get(), true, &plan);
  ASSERT_TRUE(compiled.is_ok()) << compiled.status().to_string();
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_NE(plan.warnings[0].find("dnnl_region0"), std::string::npos) << plan.warnings[0];
  EXPECT_NE(plan.warnings[0].find("both operands broadcast"), std::string::npos) << plan.warnings[0];
  EXPECT_TRUE(plan.externals.empty());
  EXPECT_TRUE(compiled->package.payloads.empty());
}

// ONNX's Clip with one bound (a ReLU6's min alone, a floor from a
// ReduceMax): the other is infinite, which JSON cannot write. As a conv's
// post-op and as an op of its own, on the backend, matching the reference.
TEST(DnnlBackend, AClipWithOneBoundRunsOnTheBackend) {
  const double inf = std::numeric_limits<double>::infinity();
  Graph g;
  ValueId x = g.add_input("x", {1, 4, 8, 8}, DType::f32());
  ValueId y = unary(g, "floor", OpKind::kClip, conv(g, "conv", x, 8, 4, 3, 1, true, 1), graph::AffineAttrs{0.0, inf});
  y = g.add_op("pool", OpKind::kMaxPool, window(2), {y}, {1, 8, 4, 4}, DType::f32());
  y = unary(g, "ceiling", OpKind::kClip, y, graph::AffineAttrs{-inf, 0.25});
  g.set_outputs({y}, {"y"});
  const std::unique_ptr<Backend> dnnl = make_dnnl_backend();
  model::ModelPlan plan;
  auto compiled = compile(g, dnnl.get(), false, &plan);
  ASSERT_TRUE(compiled.is_ok()) << compiled.status().to_string();
  EXPECT_TRUE(plan.warnings.empty());
  ASSERT_EQ(plan.externals.size(), 1u);
  const auto x_data = gt::random_floats(4 * 8 * 8, 3);
  auto got = run_package(compiled->package, x_data);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  auto want = gt::run_graph(g, {{g.inputs()[0], gt::to_bytes(x_data)}});
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  EXPECT_TRUE(near(got->at("y"), gt::to_floats((*want)[0])));
}

runtime::PackageContents dnnl_package() {
  const Graph g = conv_model();
  const std::unique_ptr<Backend> dnnl = make_dnnl_backend();
  model::ModelPlan plan;
  return compile(g, dnnl.get(), true, &plan).value().package;
}

TEST(DnnlBackend, PayloadSectionRoundTripsThroughThePackage) {
  const runtime::PackageContents package = dnnl_package();
  auto bytes = runtime::write_package_bytes(package);
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().to_string();
  EXPECT_EQ(static_cast<uint8_t>((*bytes)[8]), 3u);  // the format version: 3 with payloads
  auto back = runtime::read_package_bytes(*bytes);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(*back, package);
  // A payload naming a backend the package does not list is refused.
  runtime::PackageContents orphan = package;
  orphan.payloads[0].backend = "other";
  EXPECT_EQ(runtime::write_package_bytes(orphan).status().code(), ErrorCode::kParseError);
}

TEST(DnnlBackend, MissingModuleFailsAtLoadNamingTheBackendAndTheLibrary) {
  runtime::PackageContents package = dnnl_package();
  package.externals[0].library = "libtessera_dnnl_hidden.so";  // the module as if not installed
  auto exec = runtime::GraphExecutor::load(package);
  ASSERT_FALSE(exec.is_ok());
  EXPECT_EQ(exec.status().code(), ErrorCode::kNotFound);
  const std::string& message = exec.status().message();
  EXPECT_NE(message.find("dnnl backend"), std::string::npos) << message;
  EXPECT_NE(message.find("libtessera_dnnl_hidden.so"), std::string::npos) << message;
}

TEST(DnnlBackend, CorruptPayloadIsALoadError) {
  runtime::PackageContents package = dnnl_package();
  package.payloads[0].data = package.payloads[0].data.substr(0, package.payloads[0].data.size() / 2);
  auto exec = runtime::GraphExecutor::load(package);
  ASSERT_FALSE(exec.is_ok());
  EXPECT_EQ(exec.status().code(), ErrorCode::kParseError);
  EXPECT_NE(exec.status().message().find("malformed payload"), std::string::npos) << exec.status().message();
  package = dnnl_package();
  package.payloads[0].version = "99";
  exec = runtime::GraphExecutor::load(package);
  ASSERT_FALSE(exec.is_ok());
  EXPECT_NE(exec.status().message().find("payload version 99"), std::string::npos) << exec.status().message();
}

// Every region of `g` timed both ways now, as tune times them.
Result<std::vector<model::RegionChoice>> measured_regions(const Graph& g, const Backend& backend,
                                                          ScheduleSource* source = nullptr) {
  TESSERA_ASSIGN_OR_RETURN(const model::PreparedModel prepared, model::prepare_model(g));
  TESSERA_ASSIGN_OR_RETURN(model::RegionPlans plans, model::plan_regions(prepared, host_target(), source, backend));
  runtime::InProcessPackageTimer timer;
  TESSERA_RETURN_IF_ERROR(model::measure_regions(plans, host_target(), source, timer, 3));
  return std::move(plans.regions);
}

// --byoc auto: every region measured both ways, decided by the faster; a
// backend restricted to the regions it won takes exactly those.
TEST(DnnlAuto, RegionsAreMeasuredBothWaysAndTheRestrictedBackendTakesTheChosen) {
  const Graph g = conv_model();
  const std::unique_ptr<Backend> dnnl = make_dnnl_backend();
  auto choices = measured_regions(g, *dnnl);
  ASSERT_TRUE(choices.is_ok()) << choices.status().to_string();
  ASSERT_EQ(choices->size(), 2u);  // the trunk and the dense head
  for (const model::RegionChoice& c : *choices) {
    EXPECT_GT(c.backend_s, 0) << c.region;
    EXPECT_GT(c.tessera_s, 0) << c.region;
    // Where it was faster, unless the whole model was faster all one way.
    EXPECT_EQ(c.backend != (c.backend_s < c.tessera_s), c.by_whole_model) << c.region;
  }
  // Overruled, every region goes the same way.
  if ((*choices)[0].by_whole_model || (*choices)[1].by_whole_model)
    EXPECT_EQ((*choices)[0].backend, (*choices)[1].backend);
  EXPECT_NE(model::format_region_choices("dnnl", *choices).find("dnnl_region0"), std::string::npos);

  // Each region forced either way: the restricted backend takes those given
  // to it, and the package still matches the reference.
  const auto x = gt::random_floats(3 * 16 * 16, 7);
  auto want = gt::run_graph(g, {{g.inputs()[0], gt::to_bytes(x)}});
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  for (int mask = 0; mask < 4; ++mask) {
    std::vector<model::RegionChoice> forced = *choices;
    forced[0].backend = mask & 1;
    forced[1].backend = mask & 2;
    const std::unique_ptr<Backend> chosen = model::restrict_backend(*dnnl, forced);
    model::ModelPlan plan;
    auto compiled = compile(g, chosen.get(), true, &plan);
    ASSERT_TRUE(compiled.is_ok()) << compiled.status().to_string();
    EXPECT_EQ(plan.externals.size(), static_cast<size_t>((mask & 1) + ((mask >> 1) & 1))) << mask;
    auto got = run_package(compiled->package, x);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    EXPECT_TRUE(near(got->at("y"), gt::to_floats((*want)[0]))) << mask;
  }
}

// The real oneDNN backend whose payload for a region holding `node` is
// cut short, so its module refuses that region at build time (as it
// refused a Clip whose bound was written as null).
class RefusedRegion final : public Backend {
 public:
  RefusedRegion(const Backend& inner, std::string node) : inner_(inner), node_(std::move(node)) {}
  std::string name() const override { return inner_.name(); }
  external::BackendKind kind() const override { return inner_.kind(); }
  graph::PartitionRules partition_rules() const override { return inner_.partition_rules(); }
  Result<external::ExternalCode> generate(const Graph& body, const std::string& symbol) const override {
    TESSERA_ASSIGN_OR_RETURN(external::ExternalCode code, inner_.generate(body, symbol));
    for (const graph::Node& n : body.nodes())
      if (n.name == node_) code.source = code.source.substr(0, code.source.size() / 2);
    return code;
  }
  std::vector<std::string> link_libraries() const override { return inner_.link_libraries(); }
  std::string runtime_library() const override { return inner_.runtime_library(); }

 private:
  const Backend& inner_;
  std::string node_;
};

// --byoc auto never fails where the backend does: a region its module
// refuses to build is Tessera's, with one warning giving the module's
// message; the other region is still measured and decided, and the model
// built from the choices runs and matches the reference.
TEST(DnnlAuto, ARegionTheBackendRefusesToBuildIsTesserasWithAWarning) {
  const Graph g = conv_model();
  const std::unique_ptr<Backend> dnnl = make_dnnl_backend();
  const RefusedRegion broken(*dnnl, "fc");
  auto choices = measured_regions(g, broken);
  ASSERT_TRUE(choices.is_ok()) << choices.status().to_string();
  ASSERT_EQ(choices->size(), 2u);
  const model::RegionChoice& head = choices->back();
  EXPECT_NE(std::find(head.nodes.begin(), head.nodes.end(), "fc"), head.nodes.end());
  EXPECT_FALSE(head.backend);
  EXPECT_NE(head.refused.find("malformed payload"), std::string::npos) << head.refused;
  EXPECT_TRUE(choices->front().refused.empty());
  EXPECT_GT(choices->front().backend_s, 0);
  const std::string text = model::format_region_choices("dnnl", *choices);
  EXPECT_NE(text.find("warning: dnnl refused to build"), std::string::npos) << text;

  const std::unique_ptr<Backend> chosen = model::restrict_backend(broken, *choices);
  model::ModelPlan plan;
  auto compiled = compile(g, chosen.get(), true, &plan);
  ASSERT_TRUE(compiled.is_ok()) << compiled.status().to_string();
  const auto x = gt::random_floats(3 * 16 * 16, 7);
  auto want = gt::run_graph(g, {{g.inputs()[0], gt::to_bytes(x)}});
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  auto got = run_package(compiled->package, x);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(near(got->at("y"), gt::to_floats((*want)[0])));
}

// A schedule source that also stores region times, as the records do.
class StoredRegions final : public ScheduleSource {
 public:
  FixedScheduleSource schedules;
  std::map<std::string, RegionMeasurement> times;  // by region key
  Result<std::vector<ScheduleCandidate>> candidates(const std::string& key, const std::string& target) override {
    return schedules.candidates(key, target);
  }
  Result<std::optional<RegionMeasurement>> region_measurement(const std::string& key, const std::string&,
                                                              const std::string& backend) override {
    auto it = times.find(key);
    if (backend != "dnnl" || it == times.end()) return std::optional<RegionMeasurement>();
    return std::optional<RegionMeasurement>(it->second);
  }
};

// Times tune stored decide each region while the schedules behind Tessera's
// side are the ones they were timed with; when those change, the regions
// are Tessera's and untimed until tune times them again.
TEST(DnnlAuto, StoredTimesDecideWhileTheSchedulesTheyTimedStillHold) {
  const Graph graph = conv_model();
  const model::PreparedModel g = model::prepare_model(graph).value();
  const std::unique_ptr<Backend> dnnl = make_dnnl_backend();
  StoredRegions source;
  auto plans = model::plan_regions(g, host_target(), &source, *dnnl);
  ASSERT_TRUE(plans.is_ok()) << plans.status().to_string();
  ASSERT_EQ(plans->regions.size(), 2u);
  auto again = model::plan_regions(g, host_target(), &source, *dnnl);
  ASSERT_TRUE(again.is_ok());
  for (size_t r = 0; r < 2; ++r) {
    const model::RegionChoice& c = plans->regions[r];
    EXPECT_EQ(c.key.size(), 32u);
    EXPECT_EQ(c.key, again->regions[r].key) << "a region's key is its code, the same every time";
    EXPECT_EQ(c.tessera_basis, again->regions[r].tessera_basis);
  }
  EXPECT_NE(plans->regions[0].key, plans->regions[1].key);

  // Stored times that say the trunk is the backend's and the head Tessera's;
  // then the head's decision overruled by the whole model's time.
  source.times[plans->regions[0].key] = {1e-3, 2e-3, plans->regions[0].tessera_basis, true, 4, 1.7e9};
  source.times[plans->regions[1].key] = {2e-3, 1e-3, plans->regions[1].tessera_basis, false, 4, 1.7e9};
  auto stored = model::stored_region_choices(g, host_target(), &source, *dnnl);
  ASSERT_TRUE(stored.is_ok()) << stored.status().to_string();
  ASSERT_EQ(stored->size(), 2u);
  EXPECT_TRUE((*stored)[0].stored && (*stored)[0].backend && !(*stored)[0].by_whole_model);
  EXPECT_TRUE((*stored)[1].stored && !(*stored)[1].backend && !(*stored)[1].by_whole_model);
  source.times[plans->regions[1].key].on_backend = true;
  auto overruled = model::stored_region_choices(g, host_target(), &source, *dnnl);
  ASSERT_TRUE(overruled.is_ok()) << overruled.status().to_string();
  EXPECT_TRUE((*overruled)[1].backend && (*overruled)[1].by_whole_model);
  EXPECT_NE(model::format_region_choices("dnnl", *overruled).find("the whole model was faster so"), std::string::npos);
  EXPECT_DOUBLE_EQ((*stored)[0].backend_s, 1e-3);
  EXPECT_EQ((*stored)[1].session_id, 4);
  EXPECT_NE(model::format_region_choices("dnnl", *stored).find("tuning session 4"), std::string::npos);

  // A record for the trunk's conv changes the schedules Tessera's side would
  // run: its stored time no longer holds, so the trunk is Tessera's and
  // untimed; timed again (as tune does), both regions have times of now.
  for (const graph::GraphTask& task : plans->without_backend.tasks)
    source.schedules.add(task.dag->workload_key(), host_target().to_string(),
                         {"[]", 1e-3, "", TargetMatch::kExact, "", 7, "", 0});
  auto changed = model::plan_regions(g, host_target(), &source, *dnnl);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_NE(changed->regions[0].tessera_basis, plans->regions[0].tessera_basis);
  EXPECT_EQ(changed->regions[0].key, plans->regions[0].key);
  auto untimed = model::stored_region_choices(g, host_target(), &source, *dnnl);
  ASSERT_TRUE(untimed.is_ok()) << untimed.status().to_string();
  EXPECT_TRUE((*untimed)[0].untimed && !(*untimed)[0].backend && !(*untimed)[0].stored);
  auto timed = measured_regions(graph, *dnnl, &source);
  ASSERT_TRUE(timed.is_ok()) << timed.status().to_string();
  for (const model::RegionChoice& c : *timed) {
    EXPECT_FALSE(c.stored) << c.region;
    EXPECT_GT(c.backend_s, 0) << c.region;
    EXPECT_NE(c.backend_s, 1e-3) << c.region;
  }
}

// Compile times nothing: a region tune timed follows its stored time, one
// without a time that holds is Tessera's, marked untimed, and the lines say
// so; without records every region is Tessera's.
TEST(DnnlAuto, CompileTakesStoredTimesOnlyAndLeavesTheRestToTessera) {
  const Graph graph = conv_model();
  const model::PreparedModel g = model::prepare_model(graph).value();
  const std::unique_ptr<Backend> dnnl = make_dnnl_backend();
  StoredRegions source;
  auto plans = model::plan_regions(g, host_target(), &source, *dnnl);
  ASSERT_TRUE(plans.is_ok()) << plans.status().to_string();
  ASSERT_EQ(plans->regions.size(), 2u);
  source.times[plans->regions[0].key] = {1e-3, 2e-3, plans->regions[0].tessera_basis, true, 4, 1.7e9};
  auto choices = model::stored_region_choices(g, host_target(), &source, *dnnl);
  ASSERT_TRUE(choices.is_ok()) << choices.status().to_string();
  ASSERT_EQ(choices->size(), 2u);
  EXPECT_TRUE((*choices)[0].stored && (*choices)[0].backend && !(*choices)[0].untimed);
  EXPECT_TRUE((*choices)[1].untimed && !(*choices)[1].backend && !(*choices)[1].stored);
  EXPECT_EQ((*choices)[1].backend_s, 0) << "nothing was timed";
  const std::string text = model::format_region_choices("dnnl", *choices);
  EXPECT_NE(text.find("not timed: tessera tune times it"), std::string::npos) << text;
  EXPECT_NE(text.find("tuning session 4"), std::string::npos) << text;
  const std::unique_ptr<Backend> chosen = model::restrict_backend(*dnnl, *choices);
  model::ModelPlan plan;
  ASSERT_TRUE(compile(graph, chosen.get(), true, &plan).is_ok());
  EXPECT_EQ(plan.externals.size(), 1u);

  auto none = model::stored_region_choices(g, host_target(), nullptr, *dnnl);
  ASSERT_TRUE(none.is_ok()) << none.status().to_string();
  for (const model::RegionChoice& c : *none) EXPECT_TRUE(c.untimed && !c.backend) << c.region;
}

}  // namespace
}  // namespace tessera::external
