// Helpers shared by the records tests: temporary directories, record factories,
// raw file access and running a function in a child process.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "records/record.h"
#include "records/store.h"

namespace tessera::records::testing {

/// A fresh directory under the system temp directory, removed with its contents.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tessera-records-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data()) ? pattern : std::string();
    EXPECT_FALSE(path_.empty()) << "mkdtemp failed";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  /// `name` inside the directory.
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// A valid workload key made from `n`.
inline std::string key_of(int n) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%032x", n);
  return buf;
}

inline const std::string kTarget = "llvm -mtriple=x86_64-linux-gnu -mcpu=icelake-server";
inline const std::string kOtherTarget = "llvm -mtriple=aarch64-linux-gnu -mattr=+neon";

/// A step list whose content depends on `n`.
inline std::string steps_of(int n) {
  return R"([{"kind":"split","stage":"C","axis":0,"factors":[)" + std::to_string(n) +
         R"(,8]},{"kind":"vectorize","stage":"C","axis":3}])";
}

/// A successful record with costs around `cost` seconds.
inline Record ok_record(const std::string& key, const std::string& target, double cost, int n = 0) {
  Record r;
  r.workload_key = key;
  r.target = target;
  r.device_key = "x86-icelake";
  r.space = SpaceKind::kSketch;
  r.steps_json = steps_of(n);
  r.costs = {cost, cost};
  r.build_seconds = 0.5;
  r.run_seconds = 0.1;
  r.timestamp = 1'700'000'000.0 + n;
  return r;
}

/// A failed record of kind `kind`.
inline Record error_record(const std::string& key, const std::string& target, const std::string& kind, int n = 0) {
  Record r = ok_record(key, target, 0, n);
  r.costs.clear();
  r.error_kind = kind;
  r.error_message = "the kernel did not " + kind;
  return r;
}

/// The bytes of a file ("" when it cannot be read).
inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

inline bool exists(const std::string& path) {
  return std::filesystem::exists(path);
}

/// Starts `body` in a forked child and returns its pid; the child exits with
/// body's result. See wait_for.
inline pid_t spawn(const std::function<int()>& body) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    int code = body();
    std::fflush(nullptr);
    ::_exit(code);
  }
  return pid;
}

/// Waits for a child: its exit code, or 128 + the signal that killed it.
inline int wait_for(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/// Runs `body` in a forked child and returns its exit code (128 + signal when
/// killed). The child must not use SQLite connections opened by the parent.
inline int run_in_child(const std::function<int()>& body) {
  return wait_for(spawn(body));
}

/// Status text of a Status or a Result, for assertion messages.
inline std::string describe(const Status& s) {
  return s.to_string();
}
template <typename T>
std::string describe(const Result<T>& r) {
  return r.status().to_string();
}

}  // namespace tessera::records::testing

/// Asserts that a Status or Result is ok, printing the error otherwise.
#define ASSERT_OK(expr)                                                   \
  do {                                                                    \
    const auto& _r = (expr);                                              \
    ASSERT_TRUE(_r.is_ok()) << ::tessera::records::testing::describe(_r); \
  } while (0)
#define EXPECT_OK(expr)                                                   \
  do {                                                                    \
    const auto& _r = (expr);                                              \
    EXPECT_TRUE(_r.is_ok()) << ::tessera::records::testing::describe(_r); \
  } while (0)
/// `ASSERT_OK_AND_ASSIGN(auto x, f());` binds the value or fails the test.
#define ASSERT_OK_AND_ASSIGN(lhs, expr) ASSERT_OK_AND_ASSIGN_IMPL(TESSERA_CONCAT(_result_, __LINE__), lhs, expr)
#define ASSERT_OK_AND_ASSIGN_IMPL(tmp, lhs, expr)                         \
  auto tmp = (expr);                                                      \
  ASSERT_TRUE(tmp.is_ok()) << ::tessera::records::testing::describe(tmp); \
  lhs = std::move(tmp).value()
