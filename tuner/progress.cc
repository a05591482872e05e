#include "tuner/progress.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tessera::tuner {
namespace {

std::string format(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

std::string clock_time(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  if (s >= 3600) return format("%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  return format("%ld:%02ld", s / 60, s % 60);
}

// The time a task now costs a model run: its best, else its default, else unknown (0).
double task_cost_s(const TaskProgress& t) {
  if (t.best_cost_s > 0 && std::isfinite(t.best_cost_s)) return t.best_cost_s;
  return t.default_cost_s > 0 ? t.default_cost_s : 0;
}

std::string milliseconds(double seconds) {
  return format("%.4g ms", seconds * 1e3);
}

// A line that fits the terminal: a longer one would wrap onto a second row
// and the cursor-up of the next redraw would miss it.
std::string fit(const std::string& line, int columns) {
  const size_t width = static_cast<size_t>(std::max(1, columns - 1));
  return line.size() <= width ? line : line.substr(0, width);
}

}  // namespace

double time_in_model_s(const TaskProgress& t) {
  return t.weight * task_cost_s(t);
}

std::string task_line(const TaskProgress& t, double share) {
  const std::string best = t.best_cost_s > 0 && std::isfinite(t.best_cost_s)
                               ? format("%9.3f ms %8.1f GFLOP/s", t.best_cost_s * 1e3, t.best_gflops)
                               : format("%9s    %8s        ", "-", "-");
  return format("%5.1f%% %5lld trials %s %4lld err  %.10s  %s", share * 100, static_cast<long long>(t.trials),
                best.c_str(), static_cast<long long>(t.errors), t.key.c_str(), t.name.c_str());
}

double estimated_latency_s(const std::vector<TaskProgress>& tasks) {
  double total = 0;
  for (const auto& t : tasks) total += time_in_model_s(t);
  return total;
}

std::vector<size_t> by_share_of_time(const std::vector<TaskProgress>& tasks) {
  std::vector<size_t> order(tasks.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return time_in_model_s(tasks[a]) > time_in_model_s(tasks[b]); });
  return order;
}

Progress::Progress(FILE* out, bool interactive, TerminalSize size)
    : out_(out), interactive_(interactive), size_(size), start_(std::chrono::steady_clock::now()) {}

Progress::Progress(FILE* out, bool interactive, std::function<TerminalSize()> size)
    : Progress(out, interactive, size ? size() : TerminalSize{}) {
  size_source_ = std::move(size);
}

std::string Progress::overall_line() const {
  int64_t trials = 0, budget = 0, planned = 0, done = 0;
  for (const auto& t : tasks_) {
    trials += t.trials;
    budget = t.budget;
  }
  for (const auto& [name, p] : phases_) {
    done += p.first;
    planned += p.second;
  }
  done += trials;
  planned += budget;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string eta = "-";
  if (done > 0 && planned >= done)
    eta = clock_time(elapsed / static_cast<double>(done) * static_cast<double>(planned - done));
  std::string line =
      format("%zu tasks  %lld/%lld trials  elapsed %s  eta %s", tasks_.size(), static_cast<long long>(trials),
             static_cast<long long>(budget), clock_time(elapsed).c_str(), eta.c_str());
  const double now = estimated_latency_s(tasks_);
  if (now <= 0) return line;
  line += "  model ~" + milliseconds(now);
  // Against what compile makes without records: every task at the schedule
  // compile would take, when all are known (not the unscheduled default,
  // scalar and on one thread, which no compile runs).
  double untuned = 0;
  bool known = !tasks_.empty();
  for (const auto& t : tasks_) {
    known = known && t.untuned_compile_s > 0;
    untuned += t.weight * t.untuned_compile_s;
  }
  if (known) line += format(", %.2fx an untuned compile's (%s)", untuned / now, milliseconds(untuned).c_str());
  return line;
}

std::string Progress::phase_line() const {
  auto it = phases_.find(current_phase_);
  if (it == phases_.end()) return "";
  return format("measuring %s: %lld of %lld tasks", current_phase_.c_str(), static_cast<long long>(it->second.first),
                static_cast<long long>(it->second.second));
}

std::vector<std::string> Progress::lines() const {
  std::vector<std::string> out = {overall_line()};
  if (!current_phase_.empty()) out.push_back(phase_line());
  // Every line on one row, and the block one row short of the screen: the
  // cursor stays on the screen, so nothing scrolls away.
  const size_t room = static_cast<size_t>(std::max(1, size_.rows - 1));
  if (out.size() > room) out.resize(room);
  const double total = estimated_latency_s(tasks_);
  const std::vector<size_t> order = by_share_of_time(tasks_);
  size_t shown = std::min(order.size(), room - out.size());
  if (shown < order.size() && shown > 0) --shown;  // a row for the rest
  double rest = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const TaskProgress& t = tasks_[order[k]];
    const double share = total > 0 ? time_in_model_s(t) / total : 0;
    if (k < shown)
      out.push_back(task_line(t, share));
    else
      rest += share;
  }
  if (shown < order.size() && out.size() < room)
    out.push_back(format("  ... %zu more task%s, %.1f%% of the time", order.size() - shown,
                         order.size() - shown == 1 ? "" : "s", rest * 100));
  for (auto& l : out) l = fit(l, size_.columns);
  return out;
}

void Progress::redraw() {
  if (size_source_) size_ = size_source_();
  const std::vector<std::string> block = lines();
  std::string text;
  if (lines_drawn_ > 0) text += "\r\x1b[" + std::to_string(lines_drawn_) + "A";
  for (const auto& l : block) text += "\r\x1b[2K" + l + "\n";
  text += "\x1b[J";  // what a longer block drew last time
  lines_drawn_ = block.size();
  std::fputs(text.c_str(), out_);
  std::fflush(out_);
}

void Progress::update(const std::vector<TaskProgress>& tasks, int changed_task) {
  tasks_ = tasks;
  if (interactive_) return redraw();
  if (changed_task >= 0 && changed_task < static_cast<int>(tasks.size())) {
    const double total = estimated_latency_s(tasks_);
    const TaskProgress& t = tasks_[changed_task];
    std::fprintf(out_, "[%s]  %s\n", overall_line().c_str(),
                 task_line(t, total > 0 ? time_in_model_s(t) / total : 0).c_str());
  }
  std::fflush(out_);
}

void Progress::phase(const std::string& name, int64_t done, int64_t total) {
  phases_[name] = {done, total};
  current_phase_ = done < total ? name : "";
  // A log keeps one line per measured batch (what scripts count); the
  // phases show in the overall line's ETA there.
  if (interactive_) redraw();
}

void Progress::note(const std::string& line) {
  if (interactive_ && lines_drawn_ > 0) {
    std::fprintf(out_, "\r\x1b[%zuA\x1b[J", lines_drawn_);  // up to the block's top, erased
    lines_drawn_ = 0;
  }
  std::fprintf(out_, "%s\n", line.c_str());
  if (interactive_) return redraw();
  std::fflush(out_);
}

void Progress::finish() {
  std::fflush(out_);
}

}  // namespace tessera::tuner
