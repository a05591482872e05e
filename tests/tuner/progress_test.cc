// The progress display's block: it fits the terminal, the largest shares
// first, one overall line with the run's budget and the model's estimate.
#include "tuner/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

namespace tessera::tuner {
namespace {

std::vector<TaskProgress> tasks(int n) {
  std::vector<TaskProgress> out;
  for (int i = 0; i < n; ++i) {
    TaskProgress t;
    t.name = "relu:M=" + std::to_string(i + 1) + ",N=8";
    t.key = "k" + std::to_string(1000 + i);
    t.weight = 1 + i % 3;
    t.budget = 1000;
    t.trials = 4;
    t.best_cost_s = 1e-3 * (i + 1);
    t.default_cost_s = 9e-3 * (i + 1);
    t.untuned_compile_s = 2e-3 * (i + 1);
    out.push_back(t);
  }
  return out;
}

TEST(Progress, BlockFitsTheRowsWithTheLargestSharesFirst) {
  FILE* sink = std::fopen("/dev/null", "w");
  Progress progress(sink, /*interactive=*/true, TerminalSize{40, 200});
  progress.update(tasks(63), 0);
  const std::vector<std::string> lines = progress.lines();
  EXPECT_EQ(lines.size(), 39u);  // one row left for the cursor
  EXPECT_EQ(lines[0].rfind("63 tasks  252/1000 trials", 0), 0u) << lines[0];
  // Against the schedules compile takes without records, not the
  // unscheduled defaults.
  EXPECT_NE(lines[0].find("2.00x an untuned compile's"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("relu:M=63,N=8"), std::string::npos) << lines[1];  // weight 3 x 63 ms
  EXPECT_NE(lines.back().find("... 26 more tasks"), std::string::npos) << lines.back();
  for (size_t i = 1; i < lines.size(); ++i)
    EXPECT_EQ(lines[i].find("/1000"), std::string::npos) << "the budget is the run's: " << lines[i];
  std::fclose(sink);
}

TEST(Progress, PhaseLineWhileBaselinesAreMeasured) {
  FILE* sink = std::fopen("/dev/null", "w");
  Progress progress(sink, /*interactive=*/true, TerminalSize{10, 100});
  progress.update(tasks(3), -1);
  progress.phase("untuned defaults", 1, 3);
  EXPECT_EQ(progress.lines()[1], "measuring untuned defaults: 1 of 3 tasks");
  EXPECT_LE(progress.lines().size(), 9u);
  progress.phase("untuned defaults", 3, 3);
  EXPECT_EQ(progress.lines()[1].find("measuring"), std::string::npos);
  std::fclose(sink);
}

TEST(Progress, LinesAreCutToTheTerminalsWidth) {
  FILE* sink = std::fopen("/dev/null", "w");
  Progress progress(sink, /*interactive=*/true, TerminalSize{5, 30});
  progress.update(tasks(10), -1);
  for (const auto& l : progress.lines()) EXPECT_LE(l.size(), 29u) << l;
  EXPECT_EQ(progress.lines().size(), 4u);
  std::fclose(sink);
}

TEST(Progress, ASizeSourceIsAskedAtEachRedraw) {
  FILE* sink = std::fopen("/dev/null", "w");
  TerminalSize size{40, 200};
  Progress progress(sink, /*interactive=*/true, [&] { return size; });
  progress.update(tasks(63), -1);
  EXPECT_EQ(progress.lines().size(), 39u);
  size.rows = 10;  // the terminal shrank
  progress.update(tasks(63), -1);
  EXPECT_EQ(progress.lines().size(), 9u);
  std::fclose(sink);
}

TEST(Progress, ANoteGoesAboveTheBlock) {
  char* text = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&text, &size);
  Progress progress(out, /*interactive=*/true, TerminalSize{10, 100});
  progress.update(tasks(3), -1);  // 4 lines: overall and 3 tasks
  progress.note("waiting for a worker of key x86: 0 of 2 left");
  std::fflush(out);
  const std::string written(text, size);
  // Up over the block, erase it, the note, then the block again below it.
  const size_t note = written.find("\r\x1b[4A\x1b[Jwaiting for a worker of key x86: 0 of 2 left\n");
  ASSERT_NE(note, std::string::npos) << written;
  EXPECT_NE(written.find("3 tasks  ", note), std::string::npos);
  EXPECT_EQ(written.find("\x1b[", note + 10), written.find("\r\x1b[2K", note) + 1) << "no cursor-up after the note";
  std::fclose(out);
  std::free(text);
}

}  // namespace
}  // namespace tessera::tuner
