// The versions a tuning session records come from the build (base/version.h:
// CMake's project version, `git describe`, LLVM's version), not from literals.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "base/version.h"
#include "tests/tools/command.h"

namespace {

namespace fs = std::filesystem;
using tessera::kGitDescribe;
using tessera::kLlvmVersion;
using tessera::kProjectVersion;
using tessera::kToolVersion;

TEST(SessionVersions, ComeFromTheBuild) {
  EXPECT_EQ(std::string(kProjectVersion), TESSERA_PROJECT_VERSION);
  EXPECT_EQ(std::string(kLlvmVersion).substr(0, 3), "19.");  // find_package(LLVM 19.1)
  EXPECT_NE(std::string(kGitDescribe), "");
}

TEST(SessionVersions, TuneRecordsThemInTheSession) {
  const fs::path dir = fs::temp_directory_path() / ("tessera_session_version_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "v.db").string(), out = (dir / "v.jsonl").string();
  tessera::test::Output tuned = tessera::test::tessera(
      "tune --op matmul:M=16,N=16,K=16 --trials 2 --batch 2 --repeat 1 --min-repeat-ms 1 --db " + db);
  ASSERT_EQ(tuned.code, 0) << tuned.text;
  tessera::test::Output exported = tessera::test::tessera("records export --db " + db + " -o " + out);
  ASSERT_EQ(exported.code, 0) << exported.text;
  std::ifstream in(out);
  const std::string jsonl((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(jsonl.find("\"tool_version\":\"" + std::string(kToolVersion) + "\""), std::string::npos) << jsonl;
  EXPECT_NE(jsonl.find("\"llvm_version\":\"" + std::string(kLlvmVersion) + "\""), std::string::npos) << jsonl;
  fs::remove_all(dir);
}

}  // namespace
