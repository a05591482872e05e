#include "tuner/progress.h"

#include <cmath>

namespace tessera::tuner {

std::string Progress::line(const TaskProgress& p) {
  char buf[512];
  char eta[32] = "-";
  if (p.eta_s >= 0) {
    int s = static_cast<int>(std::lround(p.eta_s));
    std::snprintf(eta, sizeof eta, "%d:%02d", s / 60, s % 60);
  }
  std::snprintf(buf, sizeof buf, "%-36.36s %5lld/%-5lld best %8.1f GFLOP/s  last batch %8.1f  errors %4lld  eta %s",
                p.name.c_str(), static_cast<long long>(p.trials), static_cast<long long>(p.budget), p.best_gflops,
                p.last_batch_gflops, static_cast<long long>(p.errors), eta);
  return buf;
}

void Progress::update(const std::vector<TaskProgress>& tasks, int changed_task) {
  if (!interactive_) {
    if (changed_task >= 0 && changed_task < static_cast<int>(tasks.size()))
      std::fprintf(out_, "%s\n", line(tasks[changed_task]).c_str());
    std::fflush(out_);
    return;
  }
  // Move up over the lines drawn last time and redraw them all.
  if (lines_drawn_ > 0) std::fprintf(out_, "\x1b[%zuA", lines_drawn_);
  for (const auto& t : tasks) std::fprintf(out_, "\r\x1b[2K%s\n", line(t).c_str());
  lines_drawn_ = tasks.size();
  std::fflush(out_);
}

void Progress::finish() { std::fflush(out_); }

}  // namespace tessera::tuner
