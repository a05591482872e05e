#include "compiler/model/choose_byoc.h"

#include <dlfcn.h>

#include <cstdio>
#include <map>
#include <set>

#include "compiler/external/dnnl.h"
#include "compiler/model/choose_winograd.h"
#include "runtime/external_modules.h"
#include "runtime/graph_executor.h"

namespace tessera::model {
namespace {

using graph::Graph;

// Per call of the package, its median seconds over `runs` runs on random inputs.
Result<std::vector<double>> profile_package(const runtime::PackageContents& package, int runs) {
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<runtime::GraphExecutor> exec, runtime::GraphExecutor::load(package));
  uint64_t seed = 1;
  for (const runtime::TensorInfo& in : exec->input_info()) {
    TESSERA_ASSIGN_OR_RETURN(runtime::NDArray array, runtime::NDArray::create(in.shape, in.dtype));
    array.fill_random(seed++);
    TESSERA_RETURN_IF_ERROR(exec->set_input(in.name, array));
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<runtime::GraphExecutor::CallProfile> profile, exec->profile(runs));
  std::vector<double> seconds;
  for (const auto& p : profile) seconds.push_back(p.median_s);
  return seconds;
}

Result<std::vector<double>> compile_and_profile(const ModelPlan& plan, const Target& target, ScheduleSource* source,
                                                int runs) {
  CompileOptions co;
  co.source = source;
  TESSERA_ASSIGN_OR_RETURN(CompiledModel compiled, compile_model(plan, target, co));
  return profile_package(compiled.package, runs);
}

// The backend with its rules narrowed to the operators of chosen regions.
class RestrictedBackend final : public external::Backend {
 public:
  RestrictedBackend(const external::Backend& inner, std::set<std::string> home)
      : inner_(inner), home_(std::move(home)) {}
  std::string name() const override { return inner_.name(); }
  external::BackendKind kind() const override { return inner_.kind(); }
  graph::PartitionRules partition_rules() const override {
    graph::PartitionRules rules = inner_.partition_rules();
    auto away = [home = home_](const graph::Node& n) { return home.count(n.name) == 0; };
    if (rules.supports)
      rules.supports = [s = rules.supports, away](const Graph& g, const graph::Node& n) { return away(n) && s(g, n); };
    for (graph::CompositePattern& p : rules.patterns) {
      p.anchor = [a = p.anchor, away](const Graph& g, const graph::Node& n) { return away(n) && a(g, n); };
      p.epilogue = [e = p.epilogue, away](const Graph& g, const graph::Node& n, graph::ValueId v) {
        return away(n) && e(g, n, v);
      };
    }
    return rules;
  }
  Result<external::ExternalCode> generate(const Graph& body, const std::string& symbol) const override {
    return inner_.generate(body, symbol);
  }
  std::vector<std::string> link_libraries() const override { return inner_.link_libraries(); }
  std::string runtime_library() const override { return inner_.runtime_library(); }

 private:
  const external::Backend& inner_;
  std::set<std::string> home_;
};

}  // namespace

std::string auto_backend_name() {
  for (const std::string& path : runtime::external_module_candidates(external::kDnnlModuleLibrary)) {
    void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL | RTLD_NODELETE);
    if (handle) {
      dlclose(handle);
      return "dnnl";
    }
  }
  return "none";
}

Result<std::vector<RegionChoice>> choose_regions(const Graph& g, const Target& target, ScheduleSource* source,
                                                 const external::Backend& backend, const PlanOptions& options,
                                                 int runs) {
  PlanOptions with = options, without = options;
  with.byoc = &backend;
  without.byoc = nullptr;
  TESSERA_ASSIGN_OR_RETURN(ModelPlan plan_b, plan_model_from_records(g, target, source, nullptr, with));
  TESSERA_ASSIGN_OR_RETURN(ModelPlan plan_t, plan_model_from_records(g, target, source, nullptr, without));
  std::vector<RegionChoice> choices;
  std::map<std::string, size_t> region_of;  // operator name -> index in choices
  for (size_t i = 0; i < plan_b.groups.size(); ++i) {
    if (plan_b.external_of_group[i] < 0) continue;
    const graph::Node& node = plan_b.graph.nodes()[static_cast<size_t>(plan_b.groups[i].nodes.front())];
    RegionChoice c;
    c.region = node.name;
    for (const graph::Node& inner : std::get<graph::ExternalAttrs>(node.attrs).body->nodes()) {
      c.nodes.push_back(inner.name);
      region_of[inner.name] = choices.size();
    }
    choices.push_back(std::move(c));
  }
  if (choices.empty()) return choices;
  TESSERA_ASSIGN_OR_RETURN(std::vector<double> backend_calls, compile_and_profile(plan_b, target, source, runs));
  TESSERA_ASSIGN_OR_RETURN(std::vector<double> tessera_calls, compile_and_profile(plan_t, target, source, runs));
  for (size_t i = 0, r = 0; i < plan_b.groups.size() && i < backend_calls.size(); ++i)
    if (plan_b.external_of_group[i] >= 0) choices[r++].backend_s = backend_calls[i];
  for (size_t i = 0; i < plan_t.groups.size() && i < tessera_calls.size(); ++i) {
    const graph::Node& anchor = plan_t.graph.nodes()[static_cast<size_t>(plan_t.groups[i].nodes.front())];
    auto it = region_of.find(anchor.name);
    if (it != region_of.end()) choices[it->second].tessera_s += tessera_calls[i];
  }
  for (RegionChoice& c : choices) c.backend = c.backend_s < c.tessera_s;
  return choices;
}

std::unique_ptr<external::Backend> restrict_backend(const external::Backend& backend,
                                                    const std::vector<RegionChoice>& choices) {
  std::set<std::string> home;
  for (const RegionChoice& c : choices)
    if (!c.backend) home.insert(c.nodes.begin(), c.nodes.end());
  return std::make_unique<RestrictedBackend>(backend, std::move(home));
}

std::string format_region_choices(const std::string& backend, const std::vector<RegionChoice>& choices) {
  std::string out;
  char line[256];
  for (const RegionChoice& c : choices) {
    std::snprintf(line, sizeof line, "  %-24s %-8s (%zu operator%s; %s %.3f ms, tessera %.3f ms)\n", c.region.c_str(),
                  c.backend ? backend.c_str() : "tessera", c.nodes.size(), c.nodes.size() == 1 ? "" : "s",
                  backend.c_str(), c.backend_s * 1e3, c.tessera_s * 1e3);
    out += line;
  }
  return out;
}

}  // namespace tessera::model
