// `tessera tune` of 63 tasks at a 40-row terminal (a pty of fixed size): the
// progress display redraws in place and never holds more than 40 lines, on
// the screen or in the scrollback. The pty's output is played through a
// small terminal model (text, \r, \n, cursor up, erase line, erase below).
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

/// What a terminal of `rows` x `columns` holds after some output: the
/// scrollback and the screen, as lines.
class Screen {
 public:
  Screen(int rows, int columns) : rows_(rows), columns_(columns), lines_(1) {}

  void play(const std::string& bytes) {
    for (size_t i = 0; i < bytes.size(); ++i) {
      const char c = bytes[i];
      if (c == '\x1b' && i + 1 < bytes.size() && bytes[i + 1] == '[') {
        size_t j = i + 2;
        int n = 0;
        bool has_n = false;
        while (j < bytes.size() && std::isdigit(static_cast<unsigned char>(bytes[j]))) {
          n = n * 10 + (bytes[j++] - '0');
          has_n = true;
        }
        if (j >= bytes.size()) break;
        escape(bytes[j], has_n ? n : -1);
        i = j;
      } else if (c == '\n') {
        down();
      } else if (c == '\r') {
        col_ = 0;
      } else if (static_cast<unsigned char>(c) >= 0x20) {
        if (col_ >= columns_) {  // autowrap
          down();
          col_ = 0;
        }
        std::string& line = lines_[row_];
        if (line.size() <= static_cast<size_t>(col_)) line.resize(col_ + 1, ' ');
        line[col_++] = c;
      }
    }
  }

  /// Every line, the scrollback's first.
  const std::vector<std::string>& lines() const { return lines_; }
  int top() const { return top_; }

 private:
  void down() {
    ++row_;
    if (row_ >= static_cast<int>(lines_.size())) lines_.emplace_back();
    if (row_ >= top_ + rows_) ++top_;  // the screen scrolls
  }
  void escape(char code, int n) {
    if (code == 'A') row_ = std::max(top_, row_ - std::max(1, n));
    if (code == 'K' && n == 2) lines_[row_].clear();
    if (code == 'J')  // erase below
      for (size_t r = row_ + 1; r < lines_.size(); ++r) lines_[r].clear();
    if (code == 'J') lines_[row_].resize(std::min<size_t>(lines_[row_].size(), col_));
  }

  int rows_, columns_;
  std::vector<std::string> lines_;
  int row_ = 0, col_ = 0, top_ = 0;
};

// A line of the progress display (the overall line, a phase or a task).
bool is_progress_line(const std::string& line) {
  return line.find(" trials  elapsed ") != std::string::npos || line.rfind("measuring ", 0) == 0 ||
         line.find(" err  ") != std::string::npos || line.find(" more tasks, ") != std::string::npos;
}

TEST(ProgressTerminal, SixtyThreeTasksInFortyRowsNeverOverflow) {
  const fs::path dir = fs::temp_directory_path() / ("tessera_progress_pty_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<std::string> argv = {TESSERA_BINARY, "tune", "--trials",        "80", "--batch", "4",
                                   "--repeat",     "1",    "--min-repeat-ms", "1",  "--db",    (dir / "p.db").string()};
  for (int i = 0; i < 63; ++i) {  // 63 distinct workloads of different sizes
    argv.push_back("--op");
    argv.push_back("relu:M=" + std::to_string(8 + i) + ",N=" + std::to_string(16 + 8 * (i % 5)));
  }
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  winsize size{};
  size.ws_row = 40;
  size.ws_col = 120;
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, &size);
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setenv("TERM", "xterm", 1);  // a terminal that moves its cursor, whatever ran the test
    ::execv(raw[0], raw.data());
    ::_exit(127);
  }
  std::string output;
  int status = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(4);
  bool exited = false;
  while (!exited && std::chrono::steady_clock::now() < until) {
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, 100) > 0) {
      char buf[4096];
      const ssize_t n = ::read(master, buf, sizeof buf);
      if (n > 0) output.append(buf, static_cast<size_t>(n));
    }
    exited = ::waitpid(pid, &status, WNOHANG) == pid;
  }
  for (int i = 0; i < 20; ++i) {  // what is left in the pty
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) break;
    char buf[4096];
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;
    output.append(buf, static_cast<size_t>(n));
  }
  ::close(master);
  if (!exited) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  ASSERT_TRUE(exited) << output.substr(0, 2000);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << output.substr(output.size() > 4000 ? output.size() - 4000 : 0);

  // Played frame by frame: after every write the screen and scrollback
  // together hold at most 40 progress lines.
  Screen screen(40, 120);
  size_t most = 0;
  for (size_t at = 0; at < output.size();) {
    const size_t end = std::min(
        output.size(), output.find("\x1b[J", at) == std::string::npos ? output.size() : output.find("\x1b[J", at) + 3);
    screen.play(output.substr(at, end - at));
    at = end;
    size_t progress = 0;
    for (const auto& l : screen.lines()) progress += is_progress_line(l);
    most = std::max(most, progress);
  }
  EXPECT_LE(most, 40u) << output.substr(0, 3000);
  EXPECT_GE(most, 30u) << "the display should use the rows it has";
  // The overall line and the phase line were shown; the summary lists the
  // 12 largest tasks and counts the rest (--verbose lists every one).
  EXPECT_NE(output.find("63 tasks  "), std::string::npos);
  EXPECT_NE(output.find("measuring untuned defaults: "), std::string::npos);
  size_t summary_rows = 0;
  for (const auto& l : screen.lines())
    summary_rows +=
        l.find("relu:M=") != std::string::npos && !is_progress_line(l) && l.find("s per trial") == std::string::npos;
  EXPECT_EQ(summary_rows, 12u);
  const size_t summary = output.rfind("vs untuned");
  ASSERT_NE(summary, std::string::npos);
  EXPECT_NE(output.find("... 51 more tasks, ", summary), std::string::npos) << output.substr(summary);
  EXPECT_EQ(output.find("s per trial", summary), std::string::npos) << output.substr(summary);
  fs::remove_all(dir);
}

}  // namespace
