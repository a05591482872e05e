// LocalRunner: a private tracker and worker processes over ipc, started and
// stopped by one object, and by SIGINT.
#include <sys/stat.h>

#include "tests/rpc/test_util.h"

namespace tessera::rpc {
namespace {

using namespace testing;  // NOLINT

bool exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

TEST(LocalRunner, MeasuresABatchAndCleansUp) {
  LocalRunnerOptions o;
  o.num_workers = 2;
  o.worker_binary = bin_dir() + "/tessera-worker";
  std::string dir;
  std::vector<pid_t> pids;
  {
    auto runner = LocalRunner::start(o);
    ASSERT_TRUE(runner.is_ok()) << runner.status().to_string();
    dir = (*runner)->directory();
    pids = (*runner)->worker_pids();
    struct stat info;
    ASSERT_EQ(::stat(dir.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0700u);
    EXPECT_EQ((*runner)->endpoint().rfind("ipc://", 0), 0u);
    std::vector<MeasureInput> batch;
    for (int i = 0; i < 4; ++i) {
      batch.push_back(kernel_input("add_one"));
      batch.back().reference = add_one_reference();
    }
    batch.push_back(kernel_input("segfault"));
    auto results = (*runner)->run(batch);
    ASSERT_TRUE(results.is_ok());
    ASSERT_EQ(results->size(), 5u);
    for (int i = 0; i < 4; ++i) EXPECT_TRUE((*results)[i].ok()) << (*results)[i].message;
    EXPECT_EQ((*results)[4].error, MeasureErrorKind::kCrash);
  }
  EXPECT_FALSE(exists(dir));
  for (pid_t pid : pids) EXPECT_NE(::kill(pid, 0), 0) << "worker " << pid << " still runs";
}

TEST(LocalRunner, MissingWorkerBinaryIsNotFound) {
  LocalRunnerOptions o;
  o.worker_binary = "/nonexistent/tessera-worker";
  auto runner = LocalRunner::start(o);
  EXPECT_EQ(runner.status().code(), ErrorCode::kNotFound);
}

TEST(LocalRunner, SigintStopsWorkersAndRemovesTheDirectory) {
  // The helper starts a LocalRunner, prints its directory and worker pids,
  // and waits; SIGINT must leave nothing behind.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    std::string helper = bin_dir() + "/rpc_test_helper", worker = bin_dir() + "/tessera-worker";
    ::execl(helper.c_str(), helper.c_str(), "local-runner", worker.c_str(), nullptr);
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string out;
  char buf[256];
  ssize_t n;
  while (out.find("ready") == std::string::npos && (n = ::read(fds[0], buf, sizeof buf)) > 0) out.append(buf, n);
  ::close(fds[0]);
  std::istringstream in(out);
  std::string dir;
  in >> dir;
  std::vector<pid_t> pids;
  for (pid_t p; in >> p;) pids.push_back(p);
  ASSERT_EQ(pids.size(), 2u) << out;
  ASSERT_TRUE(exists(dir));
  ::kill(pid, SIGINT);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT);
  for (int i = 0; i < 100; ++i) {
    bool any = false;
    for (pid_t p : pids) any |= ::kill(p, 0) == 0;
    if (!any) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (pid_t p : pids) EXPECT_NE(::kill(p, 0), 0) << "worker " << p << " still runs";
  EXPECT_FALSE(exists(dir));
}

}  // namespace
}  // namespace tessera::rpc
