// `tessera tune` on a real tracker whose only worker is killed mid-run: the
// jobs it loses are infrastructure errors (stored apart, never trials), the
// tuner waits for a worker of its key, goes on when one returns, and stops
// with the reason when none does; a rerun measures what was lost.
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <functional>
#include <map>
#include <set>

#include "records/store.h"
#include "tests/rpc/test_util.h"

namespace tessera::rpc {
namespace {

using namespace testing;  // NOLINT
using Clock = std::chrono::steady_clock;

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// A temporary directory for the database and the tuner's output.
struct Dir {
  std::string path;
  Dir() {
    char templ[] = "/tmp/tessera-worker-loss-XXXXXX";
    path = ::mkdtemp(templ) ? templ : "";
  }
  ~Dir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

// `tessera tune` of one matmul on the tracker's key `k`, its output to `log`.
pid_t start_tune(const std::string& endpoint, const std::string& db, const std::string& log, int trials,
                 const std::string& worker_wait) {
  std::vector<std::string> argv = {bin_dir() + "/tessera",
                                   "tune",
                                   "--op",
                                   "matmul:M=128,N=128,K=128",
                                   "--trials",
                                   std::to_string(trials),
                                   "--batch",
                                   "4",
                                   "--threads",
                                   "1",
                                   "--tracker",
                                   endpoint,
                                   "--key",
                                   "k",
                                   "--insecure",
                                   "--db",
                                   db,
                                   "--seed",
                                   "3"};
  if (!worker_wait.empty()) {
    argv.push_back("--worker-wait");
    argv.push_back(worker_wait);
  }
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execv(raw[0], raw.data());
    ::_exit(127);
  }
  return pid;
}

// The exit code of `pid` once it ends within `ms`; -1 (and it is killed) otherwise.
int wait_exit(pid_t pid, int ms) {
  const auto until = Clock::now() + std::chrono::milliseconds(ms);
  int status = 0;
  while (Clock::now() < until) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

std::vector<records::Record> all_records(const std::string& db) {
  records::OpenOptions o;
  o.read_only = true;
  auto store = records::Store::open(db, o);
  if (!store.is_ok()) return {};
  auto all = store->list({});
  return all.is_ok() ? *all : std::vector<records::Record>{};
}

// Search trials that are facts (not infrastructure errors; the untuned
// default "[]" and the manual baseline left out), and infrastructure errors.
struct Counts {
  int measured = 0, infrastructure = 0;
};

Counts count(const std::vector<records::Record>& records) {
  Counts c;
  for (const auto& r : records) {
    if (r.infrastructure)
      ++c.infrastructure;
    else if (r.space == records::SpaceKind::kSketch && r.steps_json != "[]")
      ++c.measured;
  }
  return c;
}

// Every step list stored as an infrastructure error also has a record that is a fact.
void expect_lost_measured_again(const std::vector<records::Record>& records) {
  std::set<std::string> facts;
  for (const auto& r : records)
    if (!r.infrastructure) facts.insert(r.steps_json);
  for (const auto& r : records)
    if (r.infrastructure) EXPECT_TRUE(facts.count(r.steps_json)) << "never measured again: " << r.steps_json;
}

bool wait_until(const std::function<bool()>& done, int ms) {
  const auto until = Clock::now() + std::chrono::milliseconds(ms);
  while (Clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return done();
}

std::unique_ptr<Process> start_tracker(const std::string& endpoint) {
  return std::make_unique<Process>(std::vector<std::string>{bin_dir() + "/tessera", "tracker", "--bind", endpoint,
                                                            "--insecure", "--heartbeat-ms", "200", "--dead-after-ms",
                                                            "800", "--no-worker-grace-ms", "1000"});
}

TEST(WorkerLoss, TheTunerWaitsForAWorkerAndFinishesItsBudgetWithMeasurementsOnly) {
  Dir dir;
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(free_port());
  const std::string db = dir.path + "/t.db", log = dir.path + "/tune.log";
  auto tracker = start_tracker(endpoint);
  auto w1 = start_worker(endpoint, "k", "w1");
  ASSERT_TRUE(wait_for_workers(endpoint, plaintext(), 1));
  constexpr int kTrials = 16;
  const pid_t tune = start_tune(endpoint, db, log, kTrials, "");
  // Kill the only worker once the search has stored a batch.
  ASSERT_TRUE(wait_until([&] { return count(all_records(db)).measured >= 4; }, 120000)) << read_file(log);
  w1->kill(SIGKILL);
  ASSERT_TRUE(wait_until(
      [&] { return read_file(log).find("waiting for a worker of key k: 0 of 1 left") != std::string::npos; }, 30000))
      << read_file(log);
  auto w2 = start_worker(endpoint, "k", "w2");
  const int code = wait_exit(tune, 240000);
  const std::string out = read_file(log);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("is back"), std::string::npos) << out;
  if (count(all_records(db)).infrastructure > 0)
    EXPECT_NE(out.find("infrastructure error(s) stored"), std::string::npos) << out;
  const std::vector<records::Record> records = all_records(db);
  // The budget counts measurements: infrastructure errors are not trials.
  EXPECT_EQ(count(records).measured, kTrials);
  expect_lost_measured_again(records);
}

TEST(WorkerLoss, WithoutAWorkerTheRunStopsWithTheReasonAndARerunMeasuresWhatWasLost) {
  Dir dir;
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(free_port());
  const std::string db = dir.path + "/t.db", log = dir.path + "/tune.log";
  auto tracker = start_tracker(endpoint);
  auto w1 = start_worker(endpoint, "k", "w1");
  ASSERT_TRUE(wait_for_workers(endpoint, plaintext(), 1));
  const pid_t tune = start_tune(endpoint, db, log, 64, "3");
  ASSERT_TRUE(wait_until([&] { return count(all_records(db)).measured >= 4; }, 120000)) << read_file(log);
  w1->kill(SIGKILL);
  const int code = wait_exit(tune, 120000);
  const std::string out = read_file(log);
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(out.find("no worker of key 'k' came back within 3 s"), std::string::npos) << out;
  const Counts first = count(all_records(db));
  EXPECT_GE(first.infrastructure, 1) << out;
  EXPECT_LT(first.measured, 64);

  // A rerun with a worker: the lost candidates are measured first.
  auto w2 = start_worker(endpoint, "k", "w2");
  ASSERT_TRUE(wait_for_workers(endpoint, plaintext(), 1));
  const pid_t again = start_tune(endpoint, db, log, first.infrastructure, "");
  EXPECT_EQ(wait_exit(again, 240000), 0) << read_file(log);
  EXPECT_NE(read_file(log).find("lost to the infrastructure (measured again)"), std::string::npos) << read_file(log);
  const std::vector<records::Record> records = all_records(db);
  EXPECT_EQ(count(records).measured, first.measured + first.infrastructure);
  expect_lost_measured_again(records);
}

// The tracker killed for good mid-run: the batch in flight is given up once
// the tracker has answered no sync for 10 s (not at the jobs' deadlines,
// 80 s away), and the run stops when the wait counted from then is over,
// saying for how long the tracker has been silent.
TEST(WorkerLoss, ATrackerGoneForGoodIsReportedWithinTheStatedTime) {
  Dir dir;
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(free_port());
  const std::string db = dir.path + "/t.db", log = dir.path + "/tune.log";
  auto tracker = start_tracker(endpoint);
  auto w1 = start_worker(endpoint, "k", "w1");
  ASSERT_TRUE(wait_for_workers(endpoint, plaintext(), 1));
  const pid_t tune = start_tune(endpoint, db, log, 64, "5");
  ASSERT_TRUE(wait_until([&] { return count(all_records(db)).measured >= 4; }, 120000)) << read_file(log);
  tracker->kill(SIGKILL);
  const auto killed = Clock::now();
  const int code = wait_exit(tune, 60000);
  const double seconds = std::chrono::duration<double>(Clock::now() - killed).count();
  const std::string out = read_file(log);
  EXPECT_NE(code, 0) << out;
  EXPECT_LT(seconds, 30) << out;
  const size_t at = out.find("the tracker did not answer for ");
  ASSERT_NE(at, std::string::npos) << out;
  const double said = std::atof(out.c_str() + at + std::strlen("the tracker did not answer for "));
  EXPECT_GE(said, 5) << out;
  EXPECT_LE(said, seconds + 1) << out;
}

}  // namespace
}  // namespace tessera::rpc
