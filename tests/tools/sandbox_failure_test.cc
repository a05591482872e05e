// `tessera tune` on a machine whose workers cannot set up the measurement
// sandbox (here: not root, and a hard CPU-time limit below the one a job
// needs, as a batch system's rlimit leaves it): the run stops at once with
// one message naming the limit, the lost measurement is stored as an
// infrastructure error (never a fact about the schedule), and no message
// carries a status name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/tools/command.h"

namespace {

namespace fs = std::filesystem;
using tessera::test::Output;
using tessera::test::shell;
using tessera::test::tessera;

TEST(SandboxFailure, TuneStopsOnceAndStoresTheLossAsInfrastructure) {
  if (::geteuid() != 0) GTEST_SKIP() << "dropping to another user needs root";
  if (shell("command -v prlimit && command -v setpriv").code != 0) GTEST_SKIP() << "no prlimit or setpriv";
  const fs::path dir = fs::temp_directory_path() / ("tessera_sandbox_failure_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::all);
  const std::string db = (dir / "t.db").string();
  // 8 s: below the 11 s a job's default 10 s timeout asks for, above what an
  // ASan build of tune spends on a slow machine before it stops (3 s was not).
  Output tune = shell("prlimit --cpu=8:8 setpriv --reuid=65534 --regid=65534 --clear-groups " +
                      std::string(TESSERA_BINARY) + " tune --op relu:M=64,N=64 --trials 8 --db " + db);
  EXPECT_EQ(tune.code, 1) << tune.text;
  EXPECT_NE(tune.text.find("could not set up the measurement's sandbox"), std::string::npos) << tune.text;
  EXPECT_NE(tune.text.find("setrlimit(RLIMIT_CPU)"), std::string::npos) << tune.text;
  EXPECT_EQ(tune.text.find("unavailable:"), std::string::npos) << tune.text;
  Output stats = tessera("records stats --db " + db);
  EXPECT_EQ(stats.code, 0) << stats.text;
  EXPECT_NE(stats.text.find("0 ok, 0 failed, 1 infrastructure errors"), std::string::npos) << stats.text;
  fs::remove_all(dir);
}

}  // namespace
