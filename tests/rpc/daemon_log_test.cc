// The daemons' log (rpc/log.h): the tracker, run as `tessera tracker
// --log-level ...`, writes timestamped lines with a level for a refused
// CURVE key and for a dead worker; the worker for its start.
#include <fstream>
#include <iterator>
#include <regex>

#include "rpc/keys.h"
#include "tests/rpc/test_util.h"

namespace tessera::rpc {
namespace {

using namespace testing;  // NOLINT

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// `argv` with stderr into `log` (exec: the shell's pid is the daemon's).
std::unique_ptr<Process> start_logged(const std::string& command, const std::string& log) {
  return std::make_unique<Process>(std::vector<std::string>{"/bin/sh", "-c", "exec " + command + " 2>" + log});
}

// The first line of `path` holding `needle`, waiting up to `ms` for it.
std::string wait_for_line(const std::string& path, const std::string& needle, int ms) {
  for (int waited = 0; waited <= ms; waited += 50) {
    const std::string text = slurp(path);
    if (size_t at = text.find(needle); at != std::string::npos) {
      const size_t begin = text.rfind('\n', at) == std::string::npos ? 0 : text.rfind('\n', at) + 1;
      return text.substr(begin, text.find('\n', at) - begin);
    }
    ::usleep(50000);
  }
  return "";
}

int run(const std::string& command) {
  return std::system((command + " >/dev/null 2>&1").c_str());
}

const std::regex kStamped(
    R"(^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \[(debug|info|warning|error)\] (tracker|worker): .+)");

TEST(DaemonLog, TrackerLogsARefusedKeyWithTimestampAndLevel) {
  TempDir dir;
  const std::string tessera = bin_dir() + "/tessera", d = dir.path();
  ASSERT_EQ(run(tessera + " keys generate --out " + d + " --name tracker"), 0);
  ASSERT_EQ(run(tessera + " keys generate --out " + d + "/auth --name ops"), 0);
  ASSERT_EQ(run(tessera + " keys generate --out " + d + " --name stranger"), 0);
  auto tracker = start_logged(tessera + " tracker --bind ipc://" + d + "/t --keyfile " + d +
                                  "/tracker.key --authorized " + d + "/auth --log-level warn",
                              d + "/tracker.log");
  ASSERT_FALSE(wait_for_line(d + "/tracker.log", "listening on", 5000).empty()) << slurp(d + "/tracker.log");
  // A client whose key the tracker does not list: refused, and said so.
  EXPECT_NE(run(tessera + " farm status --tracker ipc://" + d + "/t --keyfile " + d + "/stranger.key --tracker-key " +
                d + "/tracker.pub --timeout-ms 1000"),
            0);
  const std::string line = wait_for_line(d + "/tracker.log", "refused a connection", 5000);
  ASSERT_FALSE(line.empty()) << slurp(d + "/tracker.log");
  EXPECT_TRUE(std::regex_match(line, kStamped)) << line;
  EXPECT_NE(line.find("[warning] tracker:"), std::string::npos) << line;
  auto stranger = load_public_key(d + "/stranger.pub");
  ASSERT_TRUE(stranger.is_ok());
  EXPECT_NE(line.find("public key " + *stranger + " is not authorized"), std::string::npos) << line;
}

TEST(DaemonLog, TrackerLogsADeadWorkerAndTheWorkerItsStart) {
  TempDir dir;
  const std::string tessera = bin_dir() + "/tessera", d = dir.path();
  auto tracker = start_logged(tessera + " tracker --insecure --bind ipc://" + d +
                                  "/t --heartbeat-ms 200 --dead-after-ms 800 "
                                  "--log-level info",
                              d + "/tracker.log");
  auto worker = start_logged(bin_dir() + "/tessera-worker --tracker ipc://" + d +
                                 "/t --key x86-test --id w1 --insecure "
                                 "--threads 1 --heartbeat-ms 200 --log-level info",
                             d + "/worker.log");
  const std::string registered = wait_for_line(d + "/tracker.log", "worker w1 registered for key x86-test", 10000);
  ASSERT_FALSE(registered.empty()) << slurp(d + "/tracker.log");
  EXPECT_TRUE(std::regex_match(registered, kStamped)) << registered;
  const std::string started = wait_for_line(d + "/worker.log", "w1: key x86-test", 2000);
  EXPECT_TRUE(std::regex_match(started, kStamped)) << slurp(d + "/worker.log");
  worker->kill(SIGKILL);
  const std::string dead = wait_for_line(d + "/tracker.log", "worker w1 is dead", 10000);
  ASSERT_FALSE(dead.empty()) << slurp(d + "/tracker.log");
  EXPECT_TRUE(std::regex_match(dead, kStamped)) << dead;
  EXPECT_NE(dead.find("[warning] tracker:"), std::string::npos) << dead;
}

TEST(DaemonLog, QuietBelowItsLevel) {
  TempDir dir;
  const std::string tessera = bin_dir() + "/tessera", d = dir.path();
  auto tracker =
      start_logged(tessera + " tracker --insecure --bind ipc://" + d + "/t --log-level warn", d + "/tracker.log");
  auto worker = start_worker("ipc://" + d + "/t", "x86-test", "w1");
  ASSERT_TRUE(wait_for_workers("ipc://" + d + "/t", plaintext(), 1, 10000));
  EXPECT_EQ(slurp(d + "/tracker.log").find("registered"), std::string::npos);  // info, below warn
}

TEST(DaemonLog, AnUnknownLevelIsAUsageError) {
  std::string out;
  FILE* p = ::popen((bin_dir() + "/tessera tracker --insecure --log-level loud 2>&1").c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = ::pclose(p);
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_EQ(out, "tessera tracker: --log-level must be debug, info, warn, error or off, not 'loud'\n");
}

}  // namespace
}  // namespace tessera::rpc
