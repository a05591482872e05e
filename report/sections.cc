// The summary, time, workers and best-kernel sections, and the context they
// share. The plots (model and per task) are in task_plots.cc.
#include "report/sections.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "base/target.h"
#include "compiler/schedule/step.h"
#include "report/plot.h"

namespace tessera::report {
namespace {

std::string utc(double unix_seconds) {
  if (unix_seconds <= 0) return "-";
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

// A workload key by its first 12 digits, the whole key as its tooltip.
std::string short_key_html(const std::string& key) {
  return "<code title=\"" + escape_html(key) + "\">" + escape_html(key.substr(0, 12)) + "</code>";
}

std::string duration(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return "-";
  if (seconds < 120) return format_number(seconds, 3) + " s";
  if (seconds < 7200) return format_number(seconds / 60, 3) + " min";
  return format_number(seconds / 3600, 3) + " h";
}

// The model's target: the one asked for, else the one holding most records of its kernels.
std::string choose_model_target(const ReportData& data, const ReportOptions& options) {
  if (!options.target.empty() || !options.model) return options.target;
  std::set<std::string> keys;
  for (const ModelKernel& k : options.model->kernels) keys.insert(k.key);
  std::map<std::string, int64_t> per_target;
  for (const TaskRecords& t : data.tasks)
    if (keys.count(t.key)) per_target[t.target] += t.trials;
  std::string best;
  int64_t most = -1;
  for (const auto& [target, n] : per_target)
    if (n > most) most = n, best = target;
  return best;
}

// A record's steps one per line, as a person reads them ("split(stage=1,
// iter=0, factors=[32, 4])"); steps this build cannot read stay JSON.
std::string steps_lines(const std::string& steps_json) {
  std::string out;
  if (auto parsed = steps_from_json(steps_json); parsed.is_ok()) {
    if (parsed->empty()) return "the default schedule";
    for (const Step& step : *parsed) out += step.to_string() + "\n";
    return out;
  }
  auto steps = nlohmann::json::parse(steps_json, nullptr, false);
  if (steps.is_discarded() || !steps.is_array()) return steps_json;
  for (const auto& s : steps) out += s.dump() + "\n";
  return out;
}

}  // namespace

std::string short_target_html(const std::string& target) {
  return "<span title=\"" + escape_html(target) + "\">" + escape_html(short_target_name(target)) + "</span>";
}

double gflops_of(const PageContext& page, int t, double cost_s) {
  const double flops = page.flops[t];
  if (!(flops > 0) || !(cost_s > 0) || !std::isfinite(cost_s)) return 0;
  return flops / cost_s / 1e9;
}

PageContext make_context(const ReportData& data, const ReportOptions& options) {
  PageContext page{data, options, {}, {}, {}, {}, {}, {}};
  const size_t n = data.tasks.size();
  page.weight.assign(n, 0);
  page.label.resize(n);
  page.flops.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const TaskRecords& t = data.tasks[i];
    page.label[i] = t.op_name.empty() ? "workload " + t.key.substr(0, 12) : t.op_name + " " + t.shapes;
    page.flops[i] = t.flop_count;
  }
  page.model_target = choose_model_target(data, options);
  if (options.model) {
    for (const ModelKernel& k : options.model->kernels) {
      const int t = find_task(data, k.key, page.model_target);
      if (t < 0) {
        page.missing.push_back(&k);
        continue;
      }
      page.weight[t] = k.weight;
      page.label[t] = k.label;
      if (!(page.flops[t] > 0)) page.flops[t] = k.flops;
    }
  }
  for (size_t i = 0; i < n; ++i) page.order.push_back(static_cast<int>(i));
  // The model's tasks first, by their share of its time (weight x best);
  // then every other task by key.
  auto time_in_model = [&](int t) {
    const auto& best = data.tasks[t].best;
    return page.weight[t] > 0 && best ? page.weight[t] * best->mean_cost() : -1.0;
  };
  std::stable_sort(page.order.begin(), page.order.end(), [&](int a, int b) {
    const bool ma = page.weight[a] > 0, mb = page.weight[b] > 0;
    if (ma != mb) return ma;
    return time_in_model(a) > time_in_model(b);
  });
  return page;
}

std::string summary_section(const PageContext& page) {
  const ReportData& d = page.data;
  const ReportOptions& o = page.options;
  std::set<std::string> targets;
  int64_t ok = 0;
  double first = 0, last = 0;
  for (const TaskRecords& t : d.tasks) {
    targets.insert(t.target);
    ok += static_cast<int64_t>(t.ok.size());
  }
  for (const Event& e : d.events) {
    if (first == 0 || e.timestamp < first) first = e.timestamp;
    last = std::max(last, e.timestamp);
  }
  std::string out = "<section id=\"summary\"><h2>Summary</h2><table class=\"kv\">";
  auto row = [&](const std::string& k, const std::string& v) {
    out += "<tr><th>" + k + "</th><td>" + v + "</td></tr>";
  };
  row("database", escape_html(o.db_label));
  row("records", std::to_string(d.total_records) + " (" + std::to_string(ok) + " ok)");
  row("tasks", std::to_string(d.tasks.size()) + " (workload × target)");
  std::string target_list;
  for (const auto& t : targets) target_list += (target_list.empty() ? "" : "<br>") + short_target_html(t);
  row("targets", target_list.empty() ? "-" : target_list);
  if (!o.target.empty()) row("shown", "records of target " + short_target_html(o.target) + " only");
  row("sessions", std::to_string(d.sessions.size()));
  row("measured", utc(first) + " to " + utc(last));
  row("machine peak", o.peak_gflops ? format_number(*o.peak_gflops, 4) + " GFLOP/s (given with --peak-gflops)"
                                    : "peak unknown (give it with --peak-gflops to see % of peak)");
  if (o.model) row("model", escape_html(o.model->name) + " on " + short_target_html(page.model_target));
  if (o.ort_ms) row("ONNX Runtime", format_number(*o.ort_ms, 4) + " ms (given with --ort-ms)");
  out += "</table><nav>Sections: ";
  if (o.model) out += "<a href=\"#model\">model</a> · ";
  out +=
      "<a href=\"#time\">where the time went</a> · <a href=\"#tasks\">tasks</a> · "
      "<a href=\"#best\">best kernels</a></nav></section>\n";
  return out;
}

namespace {

// A bar split into the four phases, each as wide as its share.
std::string phase_bar(const records::PhaseTimes& p) {
  const double parts[] = {p.search_seconds, p.build_seconds, p.measure_seconds, p.store_seconds};
  const char* colors[] = {"#8e44ad", "#d35400", "#2980b9", "#27ae60"};
  const char* names[] = {"search", "build", "measure", "store"};
  double total = 0;
  for (double v : parts) total += v;
  if (!(total > 0)) return "";
  std::string out = "<svg class=\"bar\" width=\"200\" height=\"12\">";
  double x = 0;
  for (int i = 0; i < 4; ++i) {
    const double w = 200 * parts[i] / total;
    out += "<rect x=\"" + format_number(x, 4) + "\" y=\"0\" width=\"" + format_number(w, 4) +
           "\" height=\"12\" fill=\"" + colors[i] + "\"><title>" + names[i] + " " +
           format_number(100 * parts[i] / total, 3) + "%</title></rect>";
    x += w;
  }
  return out + "</svg>";
}

}  // namespace

std::string time_section(const PageContext& page) {
  const ReportData& d = page.data;
  std::string out =
      "<section id=\"time\"><h2>Where the time went</h2>"
      "<p>Per session, as <code>tessera tune</code> clocked it (wall seconds over all its tasks): "
      "<b>search</b> (proposing candidates, the cost model), <b>build</b>, <b>measure</b> (queueing "
      "included) and <b>store</b> (writing records); the bar splits them "
      "(<span style=\"color:#8e44ad\">search</span>, <span style=\"color:#d35400\">build</span>, "
      "<span style=\"color:#2980b9\">measure</span>, <span style=\"color:#27ae60\">store</span>). "
      "Sessions from before the database kept these (schema 7), and records of no session, show them as "
      "<i>unknown</i>: never estimated. The last two columns sum each record's own build and run time; "
      "builds and measurements run on several workers at once, so those sums may exceed the wall time.</p>"
      "<table class=\"sortable\"><thead><tr><th>session</th><th>command</th><th>host</th><th>started</th>"
      "<th>wall</th><th>records</th><th>ok</th><th>search</th><th>build</th><th>measure</th><th>store</th>"
      "<th>split</th><th>Σ record build</th><th>Σ record run</th></tr></thead><tbody>";
  auto seconds_cell = [](double s) { return "<td data-v=\"" + format_number(s, 6) + "\">" + duration(s) + "</td>"; };
  auto row = [&](const std::string& id, const std::string& command, const std::string& host, double started,
                 std::optional<double> ended, const SessionRecords& s) {
    const std::string wall = ended ? duration(*ended - started)
                                   : "not ended (" + duration(s.last - s.first) + " between its first and last record)";
    out += "<tr><td>" + id + "</td><td class=\"cmd\">" + escape_html(command) + "</td><td>" + escape_html(host) +
           "</td><td>" + utc(started) + "</td><td>" + wall + "</td><td data-v=\"" + std::to_string(s.records) + "\">" +
           std::to_string(s.records) + "</td><td>" + std::to_string(s.ok) + "</td>";
    if (s.phases) {
      const records::PhaseTimes& p = *s.phases;
      out += seconds_cell(p.search_seconds) + seconds_cell(p.build_seconds) + seconds_cell(p.measure_seconds) +
             seconds_cell(p.store_seconds) + "<td>" + phase_bar(p) + "</td>";
    } else {
      for (int i = 0; i < 4; ++i) out += "<td class=\"unknown\">unknown</td>";
      out += "<td></td>";
    }
    out += seconds_cell(s.build_s) + seconds_cell(s.measure_s) + "</tr>";
  };
  for (const SessionRecords& s : d.sessions)
    if (s.records > 0)
      row(std::to_string(s.info.id), s.info.command_line, s.info.host, s.info.started, s.info.ended, s);
  if (d.orphans.records > 0)
    row("-", "(records of no session: imported or appended directly)", "", d.orphans.first, d.orphans.last, d.orphans);
  out +=
      "</tbody></table><h3 id=\"workers\">Measurements per worker</h3>"
      "<table class=\"sortable\"><thead><tr><th>worker</th><th>records</th><th>ok</th><th>errors</th>"
      "<th>infrastructure errors</th></tr></thead><tbody>";
  for (const auto& [worker, w] : d.workers)
    out += "<tr><td>" +
           (worker.empty() ? std::string("<i>none recorded</i> (local workers, build errors, or records from "
                                         "before schema 6)")
                           : escape_html(worker)) +
           "</td><td>" + std::to_string(w.records) + "</td><td>" + std::to_string(w.ok) + "</td><td>" +
           std::to_string(w.errors) + "</td><td>" + std::to_string(w.infrastructure) + "</td></tr>";
  return out + "</tbody></table></section>\n";
}

std::string best_section(const PageContext& page) {
  const ReportData& d = page.data;
  const auto& peak = page.options.peak_gflops;
  std::string out =
      "<section id=\"best\"><h2>Best kernel per task</h2><p>The record compile time uses (the ok record with "
      "the lowest mean time). Each row is linkable as <code>report.html#WORKLOAD_KEY</code>.</p>"
      "<table class=\"sortable\"><thead><tr><th>workload key</th><th>task</th><th>target</th><th>record</th>"
      "<th>found at trial</th><th>best ms</th><th>GFLOP/s</th><th>% of peak</th><th>space</th><th>steps</th>"
      "</tr></thead><tbody>";
  std::set<std::string> anchored;
  for (int t : page.order) {
    const TaskRecords& task = d.tasks[t];
    // One anchor per key: the first row of it (the model's target comes first).
    const bool anchor = anchored.insert(task.key).second;
    // The whole key is also the row's anchor.
    out += "<tr" + (anchor ? " id=\"" + escape_html(task.key) + "\"" : std::string()) + "><td>" +
           short_key_html(task.key) + "</td><td>" + escape_html(page.label[t]) + "</td><td>" +
           short_target_html(task.target) + "</td>";
    if (!task.best) {
      out += "<td colspan=\"7\" class=\"unknown\">no ok record in " + std::to_string(task.trials) + " trials</td></tr>";
      continue;
    }
    const records::Record& b = *task.best;
    int64_t found = 0;
    for (const Measurement& m : task.ok)
      if (m.improved) found = m.trial;
    const double g = gflops_of(page, t, b.mean_cost());
    // Trial 0: a baseline was best (nothing the search found beat it).
    out += "<td>" + std::to_string(b.id) + "</td><td>" + (found > 0 ? std::to_string(found) : std::string("baseline")) +
           "</td><td data-v=\"" + format_number(b.mean_cost() * 1e3, 6) + "\">" +
           format_number(b.mean_cost() * 1e3, 4) + "</td><td>" +
           (g > 0 ? format_number(g, 4) : std::string("flops unknown")) + "</td><td>" +
           (g > 0 && peak ? format_number(100 * g / *peak, 3) + "%" : std::string("peak unknown")) + "</td><td>" +
           records::space_kind_name(b.space) + "</td><td><pre class=\"steps\">" +
           escape_html(steps_lines(b.steps_json)) + "</pre></td></tr>";
  }
  for (const ModelKernel* k : page.missing)
    if (anchored.insert(k->key).second)
      out += "<tr id=\"" + escape_html(k->key) + "\"><td>" + short_key_html(k->key) + "</td><td>" +
             escape_html(k->label) + "</td><td>" + short_target_html(page.model_target) +
             "</td><td colspan=\"7\" class=\"unknown\">no records of this task in the database</td></tr>";
  return out + "</tbody></table></section>\n";
}

}  // namespace tessera::report
