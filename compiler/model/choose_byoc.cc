#include "compiler/model/choose_byoc.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "compiler/codegen/llvm_target.h"
#include "compiler/external/dnnl.h"
#include "compiler/model/choose_winograd.h"
#include "compiler/te/workload_key.h"
#include "runtime/external_modules.h"
#include "runtime/graph_executor.h"
#include "runtime/package_timing.h"

namespace tessera::model {
namespace {

using graph::Graph;

// A region's key: its backend and the code generated for it (the symbol,
// which numbers regions in partition order, left out).
std::string region_key(const external::OffloadedRegion& region) {
  std::string code = region.code.source;
  for (size_t at = code.find(region.code.symbol); !region.code.symbol.empty() && at != std::string::npos;
       at = code.find(region.code.symbol, at + 1))
    code.replace(at, region.code.symbol.size(), "@region");
  return workload_key_of(region.backend + "\n" + region.code.version + "\n" + code);
}

// The region (index into the regions, by `region_of`: operator name -> index)
// whose operators group `i` of the all-Tessera plan mostly computes, or -1.
// A group is a region's when its operators are: a fused kernel whose first
// node is a layout change or an elementwise operator outside the region
// still runs the region's convolution.
int region_of_group(const ModelPlan& plan, size_t i, const std::map<std::string, size_t>& region_of) {
  std::map<size_t, int> count;
  for (int n : plan.groups[i].nodes) {
    auto it = region_of.find(plan.graph.nodes()[static_cast<size_t>(n)].name);
    if (it != region_of.end()) ++count[it->second];
  }
  int best = -1, most = 0;
  for (const auto& [region, n] : count)
    if (n > most) best = static_cast<int>(region), most = n;
  return best;
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

std::string auto_backend_name(const Target& target) {
  if (!target.is_x86() || !host_target().is_x86()) return "none";
  for (const std::string& path : runtime::external_module_candidates(external::kDnnlModuleLibrary)) {
    void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL | RTLD_NODELETE);
    if (handle) {
      dlclose(handle);
      return "dnnl";
    }
  }
  return "none";
}

Result<RegionPlans> plan_regions(const PreparedModel& model, const Target& target, ScheduleSource* source,
                                 const external::Backend& backend, const PlanOptions& options) {
  // Winograd is a choice among Tessera's kernels, the same for both plans.
  PlanOptions without = options;
  without.byoc = nullptr;
  TESSERA_ASSIGN_OR_RETURN(std::vector<WinogradChoice> winograd, choose_winograd(model, target, source, without));
  without = with_winograd(without, winograd);
  PlanOptions with = without;
  with.byoc = &backend;
  RegionPlans plans;
  plans.model = &model;
  plans.backend = &backend;
  plans.options = options;
  TESSERA_ASSIGN_OR_RETURN(plans.with_backend, plan_model(model, with));
  TESSERA_ASSIGN_OR_RETURN(plans.without_backend, plan_model(model, without));
  const ModelPlan& plan_b = plans.with_backend;
  std::map<std::string, size_t> region_of;  // operator name -> index in plans.regions
  for (size_t i = 0; i < plan_b.groups.size(); ++i) {
    if (plan_b.external_of_group[i] < 0) continue;
    const graph::Node& node = plan_b.graph.nodes()[static_cast<size_t>(plan_b.groups[i].nodes.front())];
    const external::OffloadedRegion& offloaded = plan_b.externals[static_cast<size_t>(plan_b.external_of_group[i])];
    RegionChoice c;
    c.region = node.name;
    c.key = region_key(offloaded);
    for (const graph::Node& inner : std::get<graph::ExternalAttrs>(node.attrs).body->nodes()) {
      c.nodes.push_back(inner.name);
      region_of[inner.name] = plans.regions.size();
    }
    plans.regions.push_back(std::move(c));
  }
  // The basis of each region: the record each of its Tessera kernels would use.
  std::vector<std::vector<std::string>> kernels(plans.regions.size());
  const ModelPlan& plan_t = plans.without_backend;
  const std::string target_text = target.to_string();
  for (size_t i = 0; i < plan_t.groups.size(); ++i) {
    const int r = region_of_group(plan_t, i, region_of);
    if (r < 0 || plan_t.task_of_group[i] < 0) continue;
    const std::string& key = plan_t.tasks[static_cast<size_t>(plan_t.task_of_group[i])].dag->workload_key();
    int64_t record = 0;
    if (source) {
      TESSERA_ASSIGN_OR_RETURN(std::vector<ScheduleCandidate> candidates, source->candidates(key, target_text));
      if (!candidates.empty()) record = candidates.front().record_id;
    }
    kernels[static_cast<size_t>(r)].push_back(key + ":" + std::to_string(record));
  }
  for (size_t r = 0; r < plans.regions.size(); ++r) {
    std::sort(kernels[r].begin(), kernels[r].end());
    std::string text;
    for (const std::string& k : kernels[r]) text += k + "\n";
    plans.regions[r].tessera_basis = workload_key_of(text);
  }
  return plans;
}

namespace {

double sum(const std::vector<double>& v) {
  double total = 0;
  for (double x : v) total += x;
  return total;
}

// The whole model each region its faster way, against all one way: the
// fastest of the three decides every region.
Status decide_by_whole_model(RegionPlans& plans, double all_tessera, double all_backend,
                             const runtime::PackageContents& tessera_package,
                             const runtime::PackageContents& backend_package, const Target& target,
                             ScheduleSource* source, runtime::PackageTimer& timer, int runs) {
  plans.tessera_total_s = all_tessera;
  plans.backend_total_s = all_backend;
  plans.mixed_total_s = 0;
  const auto on_backend =
      std::count_if(plans.regions.begin(), plans.regions.end(), [](const RegionChoice& c) { return c.backend; });
  const auto refused = std::count_if(plans.regions.begin(), plans.regions.end(),
                                     [](const RegionChoice& c) { return !c.refused.empty(); });
  double mixed = on_backend == 0 ? all_tessera : all_backend;
  if (on_backend > 0 && on_backend + refused < static_cast<long>(plans.regions.size())) {
    const std::unique_ptr<external::Backend> chosen = restrict_backend(*plans.backend, plans.regions);
    PlanOptions options = plans.options;
    options.byoc = chosen.get();
    TESSERA_ASSIGN_OR_RETURN(ModelPlan plan, plan_model_from_records(*plans.model, target, source, nullptr, options));
    TESSERA_ASSIGN_OR_RETURN(runtime::PackageContents mixed_package, compile_package(plan, target, source));
    // The three totals from one alternating profile, so that they compare.
    TESSERA_ASSIGN_OR_RETURN(std::vector<std::vector<double>> calls,
                             timer.profile_alternately({&mixed_package, &tessera_package, &backend_package}, runs));
    mixed = plans.mixed_total_s = sum(calls[0]);
    all_tessera = plans.tessera_total_s = sum(calls[1]);
    all_backend = plans.backend_total_s = sum(calls[2]);
  }
  if (mixed <= all_tessera && mixed <= all_backend) return Status::ok();
  const bool backend = all_backend < all_tessera;
  for (RegionChoice& c : plans.regions) {
    if (!c.refused.empty()) continue;
    c.by_whole_model = c.backend != backend;
    c.backend = backend;
  }
  return Status::ok();
}

// The index in plans.regions of the region `message` (a failed load) names
// as refused by its module, or -1.
int refused_region(const RegionPlans& plans, const std::string& message) {
  const ModelPlan& plan_b = plans.with_backend;
  for (size_t i = 0, r = 0; i < plan_b.groups.size(); ++i) {
    if (plan_b.external_of_group[i] < 0) continue;
    const std::string& symbol = plan_b.externals[static_cast<size_t>(plan_b.external_of_group[i])].code.symbol;
    if (message.find("cannot build region " + symbol + ":") != std::string::npos) return static_cast<int>(r);
    ++r;
  }
  return -1;
}

// The packages with the backend's regions and without, profiled in turn: a
// region whose module refuses to build it (the backend package's load
// fails naming it) becomes Tessera's (RegionChoice::refused) and the model
// is planned again without it, until every region left builds. The refused
// regions follow the others in plans.regions.
struct Profiled {
  runtime::PackageContents backend_package, tessera_package;
  std::vector<std::vector<double>> calls;                        // each call's median, the backend package's first
  std::vector<size_t> backend_group_calls, tessera_group_calls;  // per group of each plan: its call
};

Result<Profiled> profile_buildable(RegionPlans& plans, const Target& target, ScheduleSource* source,
                                   runtime::PackageTimer& timer, int runs) {
  Profiled p;
  TESSERA_ASSIGN_OR_RETURN(p.tessera_package,
                           compile_package(plans.without_backend, target, source, &p.tessera_group_calls));
  std::vector<RegionChoice> refused;
  for (;;) {
    TESSERA_ASSIGN_OR_RETURN(p.backend_package,
                             compile_package(plans.with_backend, target, source, &p.backend_group_calls));
    auto calls = timer.profile_alternately({&p.backend_package, &p.tessera_package}, runs);
    const int r = calls.is_ok() ? -1 : refused_region(plans, calls.status().message());
    if (r < 0) {
      if (!calls.is_ok()) return calls.status();
      plans.regions.insert(plans.regions.end(), refused.begin(), refused.end());
      p.calls = std::move(calls).value();
      return p;
    }
    RegionChoice c = plans.regions[static_cast<size_t>(r)];
    c.refused = calls.status().message();
    c.backend = false;
    refused.push_back(std::move(c));
    const std::unique_ptr<external::Backend> restricted = restrict_backend(*plans.backend, refused);
    TESSERA_ASSIGN_OR_RETURN(RegionPlans again, plan_regions(*plans.model, target, source, *restricted, plans.options));
    plans.with_backend = std::move(again.with_backend);
    plans.regions = std::move(again.regions);
  }
}

}  // namespace

Status measure_regions(RegionPlans& plans, const Target& target, ScheduleSource* source, runtime::PackageTimer& timer,
                       int runs) {
  if (plans.regions.empty()) return Status::ok();
  if (!plans.model || !plans.backend)
    return Status(ErrorCode::kInternal, "measure_regions needs plans from plan_regions");
  TESSERA_ASSIGN_OR_RETURN(Profiled profiled, profile_buildable(plans, target, source, timer, runs));
  const std::vector<std::vector<double>>& calls = profiled.calls;
  std::map<std::string, size_t> region_of;
  for (size_t r = 0; r < plans.regions.size(); ++r)
    for (const std::string& node : plans.regions[r].nodes) region_of[node] = r;
  const std::vector<double>& backend_calls = calls[0];
  const std::vector<double>& tessera_calls = calls[1];
  for (RegionChoice& c : plans.regions) {
    c.backend_s = c.tessera_s = 0;
    c.stored = c.by_whole_model = false;
    c.session_id = 0;
  }
  const ModelPlan& plan_b = plans.with_backend;
  // Regions are top-level groups; a group's call is found by group_calls
  // (control flow lays out several calls for one group).
  for (size_t i = 0, r = 0; i < plan_b.groups.size() && i < profiled.backend_group_calls.size(); ++i)
    if (plan_b.external_of_group[i] >= 0) plans.regions[r++].backend_s = backend_calls[profiled.backend_group_calls[i]];
  const ModelPlan& plan_t = plans.without_backend;
  for (size_t i = 0; i < plan_t.groups.size() && i < profiled.tessera_group_calls.size(); ++i) {
    const int r = region_of_group(plan_t, i, region_of);
    if (r >= 0) plans.regions[static_cast<size_t>(r)].tessera_s += tessera_calls[profiled.tessera_group_calls[i]];
  }
  for (RegionChoice& c : plans.regions) c.backend = c.refused.empty() && c.backend_s < c.tessera_s;
  return decide_by_whole_model(plans, sum(tessera_calls), sum(backend_calls), profiled.tessera_package,
                               profiled.backend_package, target, source, timer, runs);
}

namespace {

// Decides `c` by its stored measurement when one holds (the same basis
// behind Tessera's side); false when none does.
Result<bool> apply_stored_time(RegionChoice& c, const Target& target, ScheduleSource* source,
                               const external::Backend& backend) {
  if (source == nullptr) return false;
  TESSERA_ASSIGN_OR_RETURN(std::optional<RegionMeasurement> stored,
                           source->region_measurement(c.key, target.to_string(), backend.name()));
  if (!stored || stored->tessera_basis != c.tessera_basis) return false;
  c.backend_s = stored->backend_s;
  c.tessera_s = stored->tessera_s;
  c.backend = stored->on_backend;
  c.by_whole_model = c.backend != (c.backend_s < c.tessera_s);
  c.stored = true;
  c.session_id = stored->session_id;
  return true;
}

}  // namespace

Result<std::vector<RegionChoice>> stored_region_choices(const PreparedModel& model, const Target& target,
                                                        ScheduleSource* source, const external::Backend& backend,
                                                        const PlanOptions& options) {
  TESSERA_ASSIGN_OR_RETURN(RegionPlans plans, plan_regions(model, target, source, backend, options));
  for (RegionChoice& c : plans.regions) {
    TESSERA_ASSIGN_OR_RETURN(bool held, apply_stored_time(c, target, source, backend));
    if (!held) {
      c.backend = false;
      c.untimed = true;
    }
  }
  return std::move(plans.regions);
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
  char line[320];
  for (const RegionChoice& c : choices) {
    std::string when = !c.stored
                           ? "measured now"
                           : (c.session_id > 0 ? "tuning session " + std::to_string(c.session_id) : "from the records");
    if (c.by_whole_model) when += "; the whole model was faster so";
    if (!c.refused.empty()) when = backend + " refused to build it";
    if (c.untimed) {
      std::snprintf(line, sizeof line, "  %-24s %-8s (%zu operator%s; not timed: tessera tune times it)\n",
                    c.region.c_str(), "tessera", c.nodes.size(), c.nodes.size() == 1 ? "" : "s");
      out += line;
      continue;
    }
    std::snprintf(line, sizeof line, "  %-24s %-8s (%zu operator%s; %s %.3f ms, tessera %.3f ms; %s)\n",
                  c.region.c_str(), c.backend ? backend.c_str() : "tessera", c.nodes.size(),
                  c.nodes.size() == 1 ? "" : "s", backend.c_str(), c.backend_s * 1e3, c.tessera_s * 1e3, when.c_str());
    out += line;
  }
  for (const RegionChoice& c : choices)
    if (!c.refused.empty())
      out += "  warning: " + backend + " refused to build " + c.region + ", so Tessera runs it: " + c.refused + "\n";
  return out;
}

}  // namespace tessera::model
