// The plotted sections: the model's estimated latency over its tuning, and
// one plot per task of every measurement with its best so far.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "report/plot.h"
#include "report/sections.h"

namespace tessera::report {
namespace {

constexpr const char* kDotColor = "#4a7bd0";
constexpr const char* kBestColor = "#d04a2a";
constexpr const char* kOrtColor = "#2a9d4a";
constexpr const char* kUntunedColor = "#b07d00";
constexpr const char* kPeakColor = "#999";
// Error kinds get colors in the order of their names, over the whole page.
constexpr const char* kErrorColors[] = {"#c0392b", "#8e44ad", "#d35400", "#16a085",
                                        "#7f8c8d", "#2c3e50", "#b7950b", "#e84393"};

std::string error_color(const std::set<std::string>& kinds, const std::string& kind) {
  const auto i = static_cast<size_t>(std::distance(kinds.begin(), kinds.find(kind)));
  return kErrorColors[i % std::size(kErrorColors)];
}

// The model's estimated latency (Σ weight × best so far) after each stored
// measurement of its kernels, from the first moment every kernel has an ok
// record: one point per change, against trials and against seconds since the
// first measurement.
struct LatencyCurve {
  std::vector<Point> by_trial, by_time;  // y in ms
  int64_t trials = 0;
  double seconds = 0;
};

// The model's estimated latency under an untuned compile (Σ weight × the
// baseline compile takes), in ms: the estimate the tuned one compares with.
// Empty unless every kernel's baseline was measured.
std::optional<double> untuned_estimate_ms(const PageContext& page) {
  if (!page.missing.empty()) return std::nullopt;
  double sum = 0;
  for (size_t t = 0; t < page.data.tasks.size(); ++t) {
    if (page.weight[t] <= 0) continue;
    const std::optional<double> untuned = page.data.tasks[t].untuned_s();
    if (!untuned) return std::nullopt;
    sum += page.weight[t] * *untuned;
  }
  return sum * 1e3;
}

LatencyCurve latency_curve(const PageContext& page) {
  const ReportData& d = page.data;
  LatencyCurve curve;
  std::vector<double> best(d.tasks.size(), INFINITY);
  size_t kernels = 0, covered = 0;
  for (double w : page.weight) kernels += w > 0;
  double first = 0, latency = INFINITY;
  for (const Event& e : d.events) {
    if (page.weight[e.task] <= 0 || d.tasks[e.task].target != page.model_target) continue;
    if (first == 0) first = e.timestamp;
    if (!e.infrastructure && !e.baseline) ++curve.trials;
    curve.seconds = std::max(curve.seconds, e.timestamp - first);
    if (!(e.cost_s < best[e.task])) continue;
    if (!std::isfinite(best[e.task])) ++covered;
    best[e.task] = e.cost_s;
    if (covered < kernels || !page.missing.empty()) continue;
    double sum = 0;
    for (size_t t = 0; t < best.size(); ++t)
      if (page.weight[t] > 0) sum += page.weight[t] * best[t];
    if (sum < latency) {
      latency = sum;
      curve.by_trial.push_back({static_cast<double>(curve.trials), sum * 1e3});
      curve.by_time.push_back({e.timestamp - first, sum * 1e3});
    }
  }
  return curve;
}

// The ok dots a plot shows: all of them up to `max_dots`, else every
// best-so-far step and an even sample of the rest.
std::vector<Point> sample_dots(const std::vector<Measurement>& ok, int max_dots,
                               const std::function<double(double)>& y_of) {
  std::vector<Point> out;
  int64_t improved = 0;
  for (const Measurement& m : ok) improved += m.improved;
  const int64_t others = static_cast<int64_t>(ok.size()) - improved;
  const int64_t room = std::max<int64_t>(1, max_dots - improved);
  const int64_t stride = others <= room ? 1 : (others + room - 1) / room;
  int64_t seen = 0;
  for (const Measurement& m : ok)
    if (m.improved || seen++ % stride == 0) out.push_back({static_cast<double>(m.trial), y_of(m.cost_s)});
  return out;
}

std::string task_block(const PageContext& page, int t, const std::set<std::string>& kinds) {
  const TaskRecords& task = page.data.tasks[t];
  const bool have_flops = page.flops[t] > 0;
  auto y_of = [&](double cost) { return have_flops ? gflops_of(page, t, cost) : cost * 1e3; };
  std::string out = "<div class=\"task\" id=\"task-" + std::to_string(t) + "\"><h3>" + escape_html(page.label[t]) +
                    "</h3><p class=\"meta\"><a href=\"#" + escape_html(task.key) + "\"><code>" + escape_html(task.key) +
                    "</code></a> on " + escape_html(task.target) + " · " + std::to_string(task.trials) + " trials" +
                    (task.baselines ? " and " + std::to_string(task.baselines) + " baselines" : std::string()) + ", " +
                    std::to_string(task.ok.size()) + " ok";
  if (task.best) {
    const double cost = task.best->mean_cost();
    out += " · best " + format_number(cost * 1e3, 4) + " ms";
    if (have_flops) {
      const double g = gflops_of(page, t, cost);
      out += ", " + format_number(g, 4) + " GFLOP/s, " +
             (page.options.peak_gflops ? format_number(100 * g / *page.options.peak_gflops, 3) + "% of peak"
                                       : std::string("peak unknown"));
    }
  }
  out += "</p>";
  if (!task.errors_by_kind.empty()) {
    out += "<ul class=\"errors\">";
    for (const auto& [kind, n] : task.errors_by_kind) {
      const std::string& message = task.example_message.at(kind);
      out += "<li><span class=\"swatch\" style=\"background:" + error_color(kinds, kind) + "\"></span>" +
             std::to_string(n) + " × <b>" + escape_html(kind) + "</b>" +
             (message.empty() ? std::string() : ": <span class=\"msg\">" + escape_html(message) + "</span>") + "</li>";
    }
    out += "</ul>";
  }
  Plot plot(640, 260, "trial", have_flops ? "GFLOP/s" : "time per run (ms), flops unknown");
  plot.extend_x(static_cast<double>(task.trials));
  const std::vector<Point> dots = sample_dots(task.ok, page.options.max_dots, y_of);
  plot.add_dots(dots, kDotColor, "measurement");
  std::vector<Point> steps;
  for (const Measurement& m : task.ok)
    if (m.improved) steps.push_back({static_cast<double>(m.trial), y_of(m.cost_s)});
  plot.add_steps(steps, kBestColor, "best so far");
  if (have_flops && page.options.peak_gflops) plot.add_hline(*page.options.peak_gflops, kPeakColor, "FMA peak");
  std::map<std::string, std::vector<double>> marks;
  for (const Failure& f : task.failures) marks[f.kind].push_back(static_cast<double>(f.trial));
  for (auto& [kind, xs] : marks) {
    if (static_cast<int>(xs.size()) > page.options.max_dots) {  // an even sample, as for the dots
      const size_t stride = (xs.size() + page.options.max_dots - 1) / page.options.max_dots;
      std::vector<double> kept;
      for (size_t i = 0; i < xs.size(); i += stride) kept.push_back(xs[i]);
      xs = std::move(kept);
    }
    plot.add_marks(xs, error_color(kinds, kind), kind + " (" + std::to_string(task.errors_by_kind.at(kind)) + ")");
  }
  out += plot.svg("best " + std::string(have_flops ? "GFLOP/s" : "time") + " against trials: " + page.label[t]);
  if (dots.size() < task.ok.size())
    out += "<p class=\"note\">" + std::to_string(dots.size()) + " of " + std::to_string(task.ok.size()) +
           " measurements drawn (an even sample); every best-so-far step is drawn.</p>";
  return out + "</div>\n";
}

// Tasks tuned fewer trials than this share one table: a plot of a few
// dots (the baselines and up to three trials) says nothing a row does not.
constexpr int64_t kTrialsForAPlot = 4;

// One row per task of `few`: its key, target, counts, best and errors, with
// the anchor its plot would have had.
std::string few_trials_table(const PageContext& page, const std::vector<int>& few) {
  std::string out = "<p>" + std::to_string(few.size()) + " task" + (few.size() == 1 ? "" : "s") + " with fewer than " +
                    std::to_string(kTrialsForAPlot) +
                    " trials, in a table rather than a plot each:</p><table class=\"few\"><tr><th>task</th>"
                    "<th>workload</th><th>target</th><th>trials</th><th>baselines</th><th>ok</th><th>best ms</th>"
                    "<th>GFLOP/s</th><th>errors</th></tr>";
  for (int t : few) {
    const TaskRecords& task = page.data.tasks[static_cast<size_t>(t)];
    std::string best = "-", gflops = "-", errors;
    if (task.best) {
      best = format_number(task.best->mean_cost() * 1e3, 4);
      if (page.flops[t] > 0) gflops = format_number(gflops_of(page, t, task.best->mean_cost()), 4);
    }
    for (const auto& [kind, n] : task.errors_by_kind)
      errors += (errors.empty() ? "" : ", ") + std::to_string(n) + " " + escape_html(kind);
    out += "<tr id=\"task-" + std::to_string(t) + "\"><td>" + escape_html(page.label[t]) + "</td><td><a href=\"#" +
           escape_html(task.key) + "\"><code>" + escape_html(task.key.substr(0, 12)) + "</code></a></td><td>" +
           short_target_html(task.target) + "</td><td>" + std::to_string(task.trials) + "</td><td>" +
           std::to_string(task.baselines) + "</td><td>" + std::to_string(task.ok.size()) + "</td><td>" + best +
           "</td><td>" + gflops + "</td><td>" + (errors.empty() ? "-" : errors) + "</td></tr>";
  }
  return out + "</table>\n";
}

}  // namespace

std::string model_section(const PageContext& page) {
  const ReportOptions& o = page.options;
  if (!o.model) return "";
  std::string out = "<section id=\"model\"><h2>Model: " + escape_html(o.model->name) + "</h2>";
  const LatencyCurve curve = latency_curve(page);
  if (curve.by_trial.empty()) {
    out += "<p class=\"unknown\">No estimated latency: " +
           (page.missing.empty()
                ? std::string("not every kernel has an ok record yet")
                : std::to_string(page.missing.size()) + " of its " + std::to_string(o.model->kernels.size()) +
                      " kernels have no records in this database") +
           ".</p>";
  } else {
    // Estimates against estimates: the tuned kernels' sum against the
    // untuned compile's, by the same rule. ONNX Runtime's time, when given,
    // is a measurement of the whole model, and says so.
    const double now = curve.by_trial.back().y;
    const std::optional<double> untuned = untuned_estimate_ms(page);
    out +=
        "<p>Estimated latency: Σ over its kernels of calls per run × best time so far, from the first "
        "moment every kernel had an ok record; now <b>" +
        format_number(now, 4) + " ms</b> after " + std::to_string(curve.trials) + " trials" +
        (untuned ? ", against " + format_number(*untuned, 4) + " ms estimated the same way for an untuned compile (" +
                       format_number(*untuned / now, 3) + "×)"
                 : std::string()) +
        (o.ort_ms ? "; ONNX Runtime measured " + format_number(*o.ort_ms, 4) + " ms for the whole model"
                  : std::string()) +
        ".</p><div class=\"plots\">";
    Plot by_trial(560, 260, "trials (all kernels)", "estimated latency (ms)");
    by_trial.extend_x(static_cast<double>(curve.trials));
    by_trial.set_log_y();
    by_trial.add_steps(curve.by_trial, kBestColor, "Tessera (estimated)");
    if (untuned) by_trial.add_hline(*untuned, kUntunedColor, "untuned compile (estimated)");
    if (o.ort_ms) by_trial.add_hline(*o.ort_ms, kOrtColor, "ONNX Runtime (measured)");
    out += by_trial.svg("estimated model latency against trials");
    Plot by_time(560, 260, "seconds since the first measurement", "estimated latency (ms)");
    by_time.extend_x(curve.seconds);
    by_time.set_log_y();
    by_time.add_steps(curve.by_time, kBestColor, "Tessera (estimated)");
    if (untuned) by_time.add_hline(*untuned, kUntunedColor, "untuned compile (estimated)");
    if (o.ort_ms) by_time.add_hline(*o.ort_ms, kOrtColor, "ONNX Runtime (measured)");
    out += by_time.svg("estimated model latency against wall time") + "</div>";
  }
  double total = 0;
  for (int t : page.order)
    if (page.weight[t] > 0 && page.data.tasks[t].best) total += page.weight[t] * page.data.tasks[t].best->mean_cost();
  out +=
      "<h3>Kernels by share of the model's time</h3><table class=\"sortable\"><thead><tr><th>share</th>"
      "<th>kernel</th><th>calls</th><th>best ms</th><th>× calls ms</th><th>GFLOP/s</th><th>trials</th>"
      "<th>errors</th></tr></thead><tbody>";
  for (int t : page.order) {
    if (page.weight[t] <= 0) continue;
    const TaskRecords& task = page.data.tasks[t];
    int64_t errors = 0;
    for (const auto& [kind, n] : task.errors_by_kind) errors += n;
    const double cost = task.best ? task.best->mean_cost() : INFINITY;
    const double g = gflops_of(page, t, cost);
    out += "<tr><td data-v=\"" + format_number(task.best ? page.weight[t] * cost / total : -1, 6) + "\">" +
           (task.best ? format_number(100 * page.weight[t] * cost / total, 3) + "%" : std::string("-")) +
           "</td><td><a href=\"#" + escape_html(task.key) + "\">" + escape_html(page.label[t]) + "</a></td><td>" +
           format_number(page.weight[t], 3) + "</td><td>" +
           (task.best ? format_number(cost * 1e3, 4) : std::string("no ok record")) + "</td><td>" +
           (task.best ? format_number(page.weight[t] * cost * 1e3, 4) : std::string("-")) + "</td><td>" +
           (g > 0 ? format_number(g, 4) : std::string("-")) + "</td><td>" + std::to_string(task.trials) + "</td><td>" +
           std::to_string(errors) + "</td></tr>";
  }
  for (const ModelKernel* k : page.missing)
    out += "<tr><td data-v=\"-1\">-</td><td><a href=\"#" + escape_html(k->key) + "\">" + escape_html(k->label) +
           "</a></td><td>" + format_number(k->weight, 3) +
           "</td><td colspan=\"5\" class=\"unknown\">no records of this task in the database</td></tr>";
  return out + "</tbody></table></section>\n";
}

std::string tasks_section(const PageContext& page) {
  std::set<std::string> kinds;
  for (const TaskRecords& t : page.data.tasks)
    for (const auto& [kind, n] : t.errors_by_kind) kinds.insert(kind);
  std::string out =
      "<section id=\"tasks\"><h2>Tasks</h2><p>Each measurement is a dot (GFLOP/s, or time per "
      "run where the task's flops are unknown); the line is the best so far; errors are "
      "crosses along the bottom, one color per error kind.</p>";
  for (const ModelKernel* k : page.missing)
    out += "<div class=\"task missing\"><h3>" + escape_html(k->label) + "</h3><p class=\"unknown\"><code>" +
           escape_html(k->key) + "</code>: no records of this task in the database.</p></div>\n";
  std::vector<int> few;
  for (int t : page.order)
    if (page.data.tasks[static_cast<size_t>(t)].trials < kTrialsForAPlot) few.push_back(t);
  for (int t : page.order)
    if (page.data.tasks[static_cast<size_t>(t)].trials >= kTrialsForAPlot) out += task_block(page, t, kinds);
  if (!few.empty()) out += few_trials_table(page, few);
  return out + "</section>\n";
}

}  // namespace tessera::report
