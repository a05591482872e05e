#include "compiler/model/choose_winograd.h"

#include <cstdio>
#include <map>
#include <set>

#include "compiler/graph/passes.h"

namespace tessera::model {

namespace {

struct ConvTask {
  std::string key, label;
  int64_t channels = 0, outputs = 0;  // C and K
};

// Without records for either kernel: Winograd when both channel counts are
// at least this. Its fallback ran 1.75-1.97x faster than the direct one's on
// the ResNet-18's 56x56x64, 28x28x128 and 14x14x256 layers (warm, 2
// threads); with few channels its products are too short to pay for the
// transforms.
constexpr int64_t kMinWinogradChannels = 16;

// conv node name -> the task of the group it anchors, for every conv anchor
// that `keep` accepts.
std::map<std::string, ConvTask> conv_tasks(const ModelPlan& plan, const std::function<bool(const graph::Node&)>& keep) {
  std::map<std::string, ConvTask> out;
  for (size_t i = 0; i < plan.groups.size(); ++i) {
    const graph::Node& anchor = plan.graph.nodes()[static_cast<size_t>(plan.groups[i].nodes.front())];
    if (anchor.kind != graph::OpKind::kConv || !keep(anchor)) continue;
    const auto t = static_cast<size_t>(plan.task_of_group[i]);
    const std::vector<int64_t>& w = plan.graph.value(anchor.inputs[1]).shape;  // HWIO, or U: 4 x 4 x C x K
    out[anchor.name] = ConvTask{plan.tasks[t].dag->workload_key(), plan.task_labels[t], w[2], w[3]};
  }
  return out;
}

// The best record's cost of `key` on `target`; 0 when there is none.
Result<double> best_cost(ScheduleSource* source, const std::string& key, const Target& target) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<ScheduleCandidate> found, source->candidates(key, target.to_string()));
  return found.empty() ? 0.0 : found.front().cost_s;
}

bool is_winograd(const graph::Node& n) {
  return std::get<graph::ConvAttrs>(n.attrs).winograd;
}

}  // namespace

Result<std::vector<ModelPlan>> tuning_plans(const PreparedModel& model, const PlanOptions& options) {
  PlanOptions direct = options, all = options;
  direct.winograd = PlanOptions::Winograd::kNone;
  all.winograd = PlanOptions::Winograd::kAll;
  std::vector<ModelPlan> plans;
  TESSERA_ASSIGN_OR_RETURN(ModelPlan first, plan_model(model, direct));
  plans.push_back(std::move(first));
  TESSERA_ASSIGN_OR_RETURN(ModelPlan second, plan_model(model, all));
  if (!conv_tasks(second, is_winograd).empty()) plans.push_back(std::move(second));
  return plans;
}

Result<std::vector<WinogradChoice>> choose_winograd(const PreparedModel& model, const Target& target,
                                                    ScheduleSource* source, const PlanOptions& options) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<ModelPlan> plans, tuning_plans(model, options));
  std::vector<WinogradChoice> choices;
  if (plans.size() < 2) return choices;
  const std::map<std::string, ConvTask> winograd = conv_tasks(plans[1], is_winograd);
  const std::map<std::string, ConvTask> direct =
      conv_tasks(plans[0], [&](const graph::Node& n) { return winograd.count(n.name) > 0; });
  for (const auto& [conv, task] : winograd) {
    WinogradChoice c;
    c.conv = conv;
    auto d = direct.find(conv);
    c.label = d != direct.end() ? d->second.label : task.label;
    if (source) {
      TESSERA_ASSIGN_OR_RETURN(c.winograd_s, best_cost(source, task.key, target));
      if (d != direct.end()) {
        TESSERA_ASSIGN_OR_RETURN(c.direct_s, best_cost(source, d->second.key, target));
      }
    }
    if (c.winograd_s > 0 || c.direct_s > 0)
      c.winograd = c.winograd_s > 0 && (c.direct_s == 0 || c.winograd_s < c.direct_s);
    else
      c.winograd = task.channels >= kMinWinogradChannels && task.outputs >= kMinWinogradChannels;
    choices.push_back(std::move(c));
  }
  return choices;
}

PlanOptions with_winograd(PlanOptions options, const std::vector<WinogradChoice>& choices) {
  options.winograd = PlanOptions::Winograd::kListed;
  options.winograd_convs.clear();
  for (const WinogradChoice& c : choices)
    if (c.winograd) options.winograd_convs.insert(c.conv);
  return options;
}

Result<ModelPlan> plan_model_from_records(const PreparedModel& model, const Target& target, ScheduleSource* source,
                                          std::vector<WinogradChoice>* choices, const PlanOptions& options) {
  // Winograd is a choice among Tessera's kernels: no backend while choosing.
  PlanOptions tessera_only = options;
  tessera_only.byoc = nullptr;
  TESSERA_ASSIGN_OR_RETURN(std::vector<WinogradChoice> chosen, choose_winograd(model, target, source, tessera_only));
  TESSERA_ASSIGN_OR_RETURN(ModelPlan plan, plan_model(model, with_winograd(options, chosen)));
  // A convolution the backend took runs there, direct: not by Winograd.
  std::set<std::string> external;
  for (const graph::Node& n : plan.graph.nodes())
    if (const auto* a = std::get_if<graph::ExternalAttrs>(&n.attrs))
      for (const graph::Node& inner : a->body->nodes()) external.insert(inner.name);
  for (WinogradChoice& c : chosen) {
    c.external = external.count(c.conv) > 0;
    if (c.external) c.winograd = false;
  }
  if (choices) *choices = std::move(chosen);
  return plan;
}

std::string format_winograd_choices(const std::vector<WinogradChoice>& choices) {
  auto ms = [](double s) {
    char b[32];
    if (s > 0)
      std::snprintf(b, sizeof b, "%.3f ms", s * 1e3);
    else
      std::snprintf(b, sizeof b, "no record");
    return std::string(b);
  };
  std::string out;
  for (const WinogradChoice& c : choices) {
    char line[512];
    std::snprintf(line, sizeof line, "  %-28s %-8s (winograd %s, direct %s)\n", c.conv.substr(0, 28).c_str(),
                  c.external   ? "external"
                  : c.winograd ? "winograd"
                               : "direct",
                  ms(c.winograd_s).c_str(), ms(c.direct_s).c_str());
    out += line;
  }
  return out;
}

}  // namespace tessera::model
