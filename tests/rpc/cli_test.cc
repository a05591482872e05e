// The rpc commands of the `tessera` binary: keys, tracker, worker, farm status.
#include <sys/stat.h>

#include <cstdio>

#include "tests/rpc/test_util.h"

namespace tessera::rpc {
namespace {

using namespace testing;  // NOLINT

// Runs a shell command; returns its exit code and fills `out` with stdout+stderr.
int run(const std::string& command, std::string* out) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out->append(buf, n);
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(Cli, FarmStatusPrintsAnAlignedTableOverCurve) {
  TempDir dir;
  const std::string tessera = bin_dir() + "/tessera";
  std::string out;
  ASSERT_EQ(run(tessera + " keys generate --out " + dir.path() + " --name tracker", &out), 0) << out;
  ASSERT_EQ(run(tessera + " keys generate --out " + dir.path() + "/auth --name ops", &out), 0) << out;
  EXPECT_EQ(run(tessera + " keys generate --out " + dir.path() + " --name tracker", &out), 1);  // no overwrite

  auto tracker = std::make_unique<Process>(
      std::vector<std::string>{tessera, "tracker", "--bind", "ipc://" + dir.path() + "/t", "--keyfile",
                               dir.path() + "/tracker.key", "--authorized", dir.path() + "/auth"});
  auto worker = start_worker("ipc://" + dir.path() + "/t", "x86-avx512", "w1",
                             {"--keyfile", dir.path() + "/auth/ops.key", "--tracker-key", dir.path() + "/tracker.pub"});
  const std::string status = tessera + " farm status --tracker ipc://" + dir.path() + "/t --keyfile " + dir.path() +
                             "/auth/ops.key --tracker-key " + dir.path() + "/tracker.pub";
  bool registered = false;
  for (int i = 0; i < 100 && !registered; ++i) {
    out.clear();
    registered = run(status, &out) == 0 && out.find("x86-avx512") != std::string::npos;
    if (!registered) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(registered) << out;
  // Header and row line up: "workers" ends where the row's worker count ends.
  std::istringstream lines(out);
  std::string line, header, row;
  while (std::getline(lines, line)) {
    if (line.rfind("key ", 0) == 0) header = line;
    if (line.rfind("x86-avx512", 0) == 0) row = line;
  }
  ASSERT_FALSE(header.empty()) << out;
  ASSERT_FALSE(row.empty()) << out;
  const size_t end = header.find("workers") + std::string("workers").size();
  EXPECT_EQ(row[end - 1], '1') << "\n" << header << "\n" << row;
  EXPECT_NE(out.find("malformed frames: 0"), std::string::npos) << out;
}

TEST(Cli, UsageErrorsAndRefusedPlaintext) {
  const std::string tessera = bin_dir() + "/tessera";
  std::string out;
  EXPECT_EQ(run(tessera + " tracker --bind tcp://0.0.0.0:9999 --insecure", &out), 1);
  EXPECT_NE(out.find("only on ipc:// or loopback"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(run(tessera + " tracker --bind tcp://127.0.0.1:9999", &out), 2);  // neither keys nor --insecure
  out.clear();
  EXPECT_EQ(run(tessera + " worker --key k", &out), 2);
  EXPECT_NE(out.find("--tracker"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(run(tessera + " farm status --tracker ipc:///nonexistent/t --insecure --timeout-ms 300", &out), 1);
  EXPECT_NE(out.find("no answer"), std::string::npos) << out;
}

// A key file that is no key: the message names the file and the line, with
// no internal status name ("parse-error:"), from tune and worker alike.
TEST(Cli, ABadKeyFileIsNamedWithoutAStatusName) {
  const std::string tessera = bin_dir() + "/tessera";
  TempDir dir;
  const std::string key = dir.path() + "/bad.key";
  {
    FILE* f = std::fopen(key.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("not a key\n", f);
    std::fclose(f);
  }
  ASSERT_EQ(::chmod(key.c_str(), 0600), 0);
  for (const std::string& command :
       {tessera + " tune --op matmul:M=8,N=8,K=8 --trials 1 --db " + dir.path() +
            "/t.db --tracker tcp://127.0.0.1:9 "
            "--key x --keyfile " +
            key + " --tracker-key " + key,
        tessera + " worker --tracker tcp://127.0.0.1:9 --key x --keyfile " + key + " --tracker-key " + key}) {
    std::string out;
    EXPECT_NE(run(command, &out), 0) << command;
    EXPECT_NE(out.find("'" + key + "':1: expected 'name = key'"), std::string::npos) << out;
    EXPECT_EQ(out.find("parse-error"), std::string::npos) << out;
  }
}

// A huge bad key or key file argument is quoted cut, with its length, not
// echoed whole (an argument may hold 128 KiB).
TEST(Cli, AHugeBadKeyIsQuotedCut) {
  const std::string tessera = bin_dir() + "/tessera";
  const std::string huge(100000, '!');
  for (const std::string& command : {tessera + " worker --tracker tcp://127.0.0.1:9 --insecure --key '" + huge + "'",
                                     tessera + " worker --tracker tcp://127.0.0.1:9 --key x --keyfile /nonexistent/" +
                                         huge.substr(0, 4000) + " --tracker-key /nonexistent/k"}) {
    std::string out;
    EXPECT_NE(run(command, &out), 0);
    EXPECT_LT(out.size(), 1000u) << out.substr(0, 300);
    EXPECT_NE(out.find(" bytes)"), std::string::npos) << out.substr(0, 300);
  }
}

}  // namespace
}  // namespace tessera::rpc
