// Issue 19, loud failures: a worker the tracker will not admit says why and
// exits 1; each CURVE failure names the side whose key is wrong; --insecure
// warns on every process; temporary directories of killed processes are
// removed by the next one.
#include <sys/stat.h>

#include <cstdio>

#include "rpc/keys.h"
#include "rpc/temp_dirs.h"
#include "tests/rpc/test_util.h"

namespace tessera::rpc {
namespace {

using namespace testing;  // NOLINT

int run_command(const std::string& command, std::string* out) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out->append(buf, n);
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A CURVE tracker on ipc admitting one worker key; `other` and `stranger` are not its keys.
struct CurveFarm {
  TempDir dir;
  CurveKeyPair tracker, worker, other, stranger;
  std::unique_ptr<TrackerThread> thread;
  CurveFarm() {
    tracker = generate_keypair().value();
    worker = generate_keypair().value();
    other = generate_keypair().value();
    stranger = generate_keypair().value();
    EXPECT_TRUE(write_keypair(dir.path(), "tracker", tracker).is_ok());
    EXPECT_TRUE(write_keypair(dir.path(), "other", other).is_ok());
    EXPECT_TRUE(write_keypair(dir.path(), "stranger", stranger, KeyRole::kWorker).is_ok());
    EXPECT_EQ(::mkdir((dir.path() + "/auth").c_str(), 0700), 0);
    EXPECT_TRUE(write_keypair(dir.path() + "/auth/workers", "w", worker, KeyRole::kWorker).is_ok());
    TrackerOptions o;
    o.bind = "ipc://" + dir.path() + "/t";
    o.security.own = tracker;
    o.authorized = load_authorized_keys(dir.path() + "/auth").value();
    thread = std::make_unique<TrackerThread>(o);
    EXPECT_TRUE(thread->status().is_ok());
  }
  std::string worker_command(const std::string& keyfile, const std::string& tracker_key) const {
    return "timeout 30 " + bin_dir() + "/tessera-worker --tracker " + thread->endpoint() + " --key k --id w " +
           (keyfile.empty() ? "--insecure" : "--keyfile " + keyfile + " --tracker-key " + tracker_key);
  }
};

TEST(LoudFailures, AWorkerWithAnUnknownKeySaysSoAndExits) {
  CurveFarm farm;
  std::string out;
  EXPECT_EQ(run_command(farm.worker_command(farm.dir.path() + "/stranger.key", farm.dir.path() + "/tracker.pub"), &out),
            1)
      << out;
  EXPECT_NE(out.find("not among the tracker's --authorized keys"), std::string::npos) << out;
  EXPECT_NE(out.find(farm.stranger.public_z85), std::string::npos) << out;
}

TEST(LoudFailures, AWorkerWithTheWrongTrackerKeySaysWhichKeyIsWrong) {
  CurveFarm farm;
  std::string out;
  EXPECT_EQ(
      run_command(farm.worker_command(farm.dir.path() + "/auth/workers/w.key", farm.dir.path() + "/other.pub"), &out),
      1)
      << out;
  EXPECT_NE(out.find("is not the tracker's public key"), std::string::npos) << out;
}

TEST(LoudFailures, APlaintextWorkerAtACurveTrackerIsToldToUseKeys) {
  CurveFarm farm;
  std::string out;
  EXPECT_EQ(run_command(farm.worker_command("", ""), &out), 1) << out;
  EXPECT_NE(out.find("requires CURVE keys"), std::string::npos) << out;
}

TEST(LoudFailures, ClientsAreToldWhichSidesKeyIsWrong) {
  CurveFarm farm;
  SecurityOptions wrong_tracker;
  wrong_tracker.own = farm.worker;
  wrong_tracker.server_public_z85 = farm.other.public_z85;
  auto st = query_farm_status(farm.thread->endpoint(), wrong_tracker, 5000);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.status().message().find("is not the tracker's public key"), std::string::npos) << st.status().message();

  auto plain = query_farm_status(farm.thread->endpoint(), plaintext(), 5000);
  ASSERT_FALSE(plain.is_ok());
  EXPECT_NE(plain.status().message().find("requires CURVE keys"), std::string::npos) << plain.status().message();

  RpcRunnerOptions ro;
  ro.tracker = farm.thread->endpoint();
  ro.security.own = farm.stranger;
  ro.security.server_public_z85 = farm.tracker.public_z85;
  ro.device_key = "k";
  auto runner = RpcRunner::connect(ro);
  ASSERT_TRUE(runner.is_ok());
  auto refused = (*runner)->run({kernel_input("add_one")});
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("not among the tracker's --authorized keys"), std::string::npos)
      << refused.status().message();
}

TEST(LoudFailures, InsecureWarnsOnEveryProcess) {
  TempDir dir;
  const std::string nobody = "tcp://127.0.0.1:1";  // loopback, nothing listens
  std::string tracker_out, worker_out, farm_out, local_out;
  run_command("timeout 1 " + bin_dir() + "/tessera tracker --insecure --bind tcp://127.0.0.1:*", &tracker_out);
  EXPECT_NE(tracker_out.find("tessera tracker: warning: --insecure"), std::string::npos) << tracker_out;
  run_command("timeout 1 " + bin_dir() + "/tessera-worker --insecure --key k --tracker " + nobody, &worker_out);
  EXPECT_NE(worker_out.find("tessera-worker: warning: --insecure"), std::string::npos) << worker_out;
  run_command(bin_dir() + "/tessera farm status --insecure --tracker " + nobody, &farm_out);
  EXPECT_NE(farm_out.find("tessera farm: warning: --insecure"), std::string::npos) << farm_out;
  // Not on an ipc socket in a private (0700) directory: LocalRunner's farm.
  run_command("timeout 1 " + bin_dir() + "/tessera-worker --insecure --key k --tracker ipc://" + dir.path() + "/t",
              &local_out);
  EXPECT_EQ(local_out.find("warning"), std::string::npos) << local_out;
}

// --job-uids out of range, reversed, or fewer than --max-jobs: a clear
// error before the worker starts.
TEST(LoudFailures, BadJobUidsAreRefusedAtStart) {
  const std::string worker = bin_dir() + "/tessera-worker --insecure --key k --tracker tcp://127.0.0.1:1 ";
  for (const char* bad : {"5-1", "0-63", "2000000000-1999999999", "abc", "1000-"}) {
    std::string out;
    const int code = run_command("timeout 5 " + worker + "--job-uids " + bad, &out);
    EXPECT_NE(code, 0) << bad;
    EXPECT_NE(out.find("--job-uids takes FIRST-LAST"), std::string::npos) << bad << ": " << out;
  }
  std::string out;
  EXPECT_NE(run_command("timeout 5 " + worker + "--job-uids 1900000000-1900000001 --max-jobs 4", &out), 0);
  EXPECT_NE(out.find("--job-uids gives 2 ids for --max-jobs 4"), std::string::npos) << out;
}

pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

bool exists(const std::string& path) {
  return ::access(path.c_str(), F_OK) == 0;
}

TEST(LoudFailures, AWorkerRemovesTheDirectoriesOfKilledWorkersAndItsOwn) {
  TempDir dir;
  const std::string stale = dir.path() + "/tessera-worker-" + std::to_string(dead_pid()) + "-abcdef";
  const std::string live = dir.path() + "/tessera-worker-" + std::to_string(::getpid()) + "-abcdef";
  ASSERT_EQ(::mkdir(stale.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((stale + "/tessera-job-xyz").c_str(), 0700), 0);
  std::ofstream(stale + "/tessera-job-xyz/lib.so") << "left by a worker killed with -9";
  ASSERT_EQ(::mkdir(live.c_str(), 0700), 0);

  TrackerThread tracker(fast_tracker(dir.path()));
  ASSERT_TRUE(tracker.status().is_ok());
  auto worker = start_worker(tracker.endpoint(), "k", "w1", {"--temp-dir", dir.path()});
  ASSERT_TRUE(wait_for_workers(tracker.endpoint(), plaintext(), 1));
  EXPECT_FALSE(exists(stale));
  EXPECT_TRUE(exists(live));  // a live process's directory is not touched
  const std::string own = dir.path() + "/tessera-worker-" + std::to_string(worker->pid());
  auto count_own = [&] {
    std::string out;
    run_command("ls -d " + own + "-* 2>/dev/null | wc -l", &out);
    return std::atoi(out.c_str());
  };
  EXPECT_EQ(count_own(), 1);
  worker.reset();  // SIGTERM: it removes its own directory
  EXPECT_EQ(count_own(), 0);

  // Killed with -9, it cannot; the next worker does.
  auto killed = start_worker(tracker.endpoint(), "k", "w2", {"--temp-dir", dir.path()});
  ASSERT_TRUE(wait_for_workers(tracker.endpoint(), plaintext(), 2));
  const std::string killed_prefix = dir.path() + "/tessera-worker-" + std::to_string(killed->pid());
  killed->kill(SIGKILL);
  std::string out;
  run_command("ls -d " + killed_prefix + "-* 2>/dev/null | wc -l", &out);
  EXPECT_EQ(std::atoi(out.c_str()), 1);
  EXPECT_EQ(remove_stale_dirs(dir.path(), "tessera-worker"), 1);
  out.clear();
  run_command("ls -d " + killed_prefix + "-* 2>/dev/null | wc -l", &out);
  EXPECT_EQ(std::atoi(out.c_str()), 0);
}

TEST(LoudFailures, ALocalRunnerRemovesTheDirectoriesOfKilledRunners) {
  TempDir dir;
  const std::string stale = dir.path() + "/tessera-local-" + std::to_string(dead_pid()) + "-abcdef";
  ASSERT_EQ(::mkdir(stale.c_str(), 0700), 0);
  std::ofstream(stale + "/tracker") << "";
  LocalRunnerOptions o;
  o.temp_base = dir.path();
  o.worker_binary = bin_dir() + "/tessera-worker";
  auto runner = LocalRunner::start(o);
  ASSERT_TRUE(runner.is_ok()) << runner.status().to_string();
  EXPECT_FALSE(exists(stale));
  runner->reset();
  std::string out;
  run_command("ls -A " + dir.path() + " | wc -l", &out);
  EXPECT_EQ(std::atoi(out.c_str()), 0) << "everything of the runner removed at its end";
}

}  // namespace
}  // namespace tessera::rpc
