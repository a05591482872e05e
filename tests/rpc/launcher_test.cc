// The launcher (rpc/launcher.h): a small process that forks children which
// are this process's own.
#include "rpc/launcher.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <thread>

namespace tessera::rpc {
namespace {

// Writes its parent's pid on its first descriptor, exits with 7.
[[noreturn]] void report_parent(const std::vector<int>& fds) {
  const pid_t parent = ::getppid();
  (void)!::write(fds.at(0), &parent, sizeof parent);
  ::_exit(7);
}

// What a job's child does with glibc after a raw clone: a thread, a
// recursive lock, then abort(), which must kill it by SIGABRT.
[[noreturn]] void thread_then_abort(const std::vector<int>&) {
  std::recursive_mutex m;
  m.lock();
  m.lock();
  m.unlock();
  m.unlock();
  std::thread([&] { std::lock_guard<std::recursive_mutex> held(m); }).join();
  std::abort();
}

int wait_status(pid_t pid) {
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  return status;
}

TEST(Launcher, ItsChildIsThisProcesssChild) {
  auto launcher = Launcher::start(&report_parent);
  ASSERT_TRUE(launcher.is_ok()) << launcher.status().to_string();
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  auto pid = (*launcher)->launch({p[1]});
  ::close(p[1]);
  ASSERT_TRUE(pid.is_ok()) << pid.status().to_string();
  EXPECT_NE(*pid, (*launcher)->pid());
  pid_t parent = 0;
  EXPECT_EQ(::read(p[0], &parent, sizeof parent), static_cast<ssize_t>(sizeof parent));
  ::close(p[0]);
  EXPECT_EQ(parent, ::getpid());
  const int status = wait_status(*pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 7);
}

TEST(Launcher, AChildThatAbortsDiesBySigabrt) {
  auto launcher = Launcher::start(&thread_then_abort);
  ASSERT_TRUE(launcher.is_ok()) << launcher.status().to_string();
  for (int i = 0; i < 3; ++i) {
    auto pid = (*launcher)->launch({});
    ASSERT_TRUE(pid.is_ok()) << pid.status().to_string();
    const int status = wait_status(*pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << status;
    EXPECT_EQ(WTERMSIG(status), SIGABRT);
  }
}

TEST(Launcher, AKilledLauncherIsUnavailableForGood) {
  auto launcher = Launcher::start(&report_parent);
  ASSERT_TRUE(launcher.is_ok()) << launcher.status().to_string();
  ASSERT_EQ(::kill((*launcher)->pid(), SIGKILL), 0);
  auto pid = (*launcher)->launch({});
  ASSERT_FALSE(pid.is_ok());
  EXPECT_EQ(pid.status().code(), ErrorCode::kUnavailable);
  EXPECT_FALSE((*launcher)->alive());
  EXPECT_EQ((*launcher)->launch({}).status().code(), ErrorCode::kUnavailable);
}

// A process forked from the launcher's owner cannot have the launcher's
// children as its own: it is refused, and the owner's launcher still serves.
TEST(Launcher, AForkedCopyIsRefusedAndLeavesItWorking) {
  auto launcher = Launcher::start(&report_parent);
  ASSERT_TRUE(launcher.is_ok()) << launcher.status().to_string();
  const pid_t copy = ::fork();
  if (copy == 0) {
    auto pid = (*launcher)->launch({});
    const bool refused = !pid.is_ok() && pid.status().code() == ErrorCode::kUnavailable;
    launcher->reset();  // a copy's destructor leaves the launcher running
    ::_exit(refused ? 0 : 1);
  }
  const int copy_status = wait_status(copy);
  EXPECT_TRUE(WIFEXITED(copy_status) && WEXITSTATUS(copy_status) == 0) << copy_status;
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  auto pid = (*launcher)->launch({p[1]});
  ::close(p[1]);
  ASSERT_TRUE(pid.is_ok()) << pid.status().to_string();
  const int status = wait_status(*pid);
  ::close(p[0]);
  EXPECT_TRUE(WIFEXITED(status)) << status;
}

TEST(Launcher, TooManyDescriptorsAreRefused) {
  auto launcher = Launcher::start(&report_parent);
  ASSERT_TRUE(launcher.is_ok()) << launcher.status().to_string();
  const std::vector<int> fds(Launcher::kMaxDescriptors + 1, 0);
  EXPECT_EQ((*launcher)->launch(fds).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE((*launcher)->alive());
}

}  // namespace
}  // namespace tessera::rpc
