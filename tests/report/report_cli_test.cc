// `tessera report` as a user runs it: usage errors, bad databases, an
// unwritable output, and a model whose kernels have no records.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "records/store.h"
#include "tests/records/test_util.h"
#include "tests/tools/command.h"

namespace tessera::report {
namespace {

namespace fs = std::filesystem;
using records::testing::key_of;
using records::testing::read_bytes;
using records::testing::TempDir;
using test::Output;
using test::tessera;

const fs::path kConvModel = "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding/model.onnx";

// A database with one ok record of a workload no model here has.
void one_record_db(const std::string& path) {
  auto store = records::Store::open(path);
  ASSERT_TRUE(store.is_ok());
  records::Record r;
  r.workload_key = key_of(42);
  r.target = "llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512";
  r.steps_json = "[]";
  r.costs = {0.001};
  ASSERT_TRUE(store->append({r}));
}

TEST(ReportCommand, UsageErrorsExitTwo) {
  Output no_output = tessera("report --db x.db");
  EXPECT_EQ(no_output.code, 2);
  EXPECT_NE(no_output.text.find("-o report.html is required"), std::string::npos) << no_output.text;
  EXPECT_EQ(tessera("report --db x.db -o r.html --ort-ms -3").code, 2);
  EXPECT_EQ(tessera("report --db x.db -o r.html --peak-gflops zero").code, 2);
  EXPECT_EQ(tessera("report --db x.db -o r.html --max-dots 0").code, 2);
  EXPECT_EQ(tessera("report --db x.db -o r.html --input-shape x:1").code, 2);
  EXPECT_EQ(tessera("report model.txt --db x.db -o r.html").code, 2);
  Output help = tessera("report --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.text.find("--peak-gflops"), std::string::npos);
  EXPECT_NE(tessera("help").text.find("report"), std::string::npos) << "listed in `tessera help`";
}

TEST(ReportCommand, BadDatabasesAndOutputsAreClearErrors) {
  TempDir dir;
  const std::string out = dir.file("r.html");
  Output missing = tessera("report --db " + dir.file("none.db") + " -o " + out);
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.text.find("no such database"), std::string::npos) << missing.text;
  EXPECT_FALSE(fs::exists(dir.file("none.db"))) << "a report never creates a database";
  std::ofstream(dir.file("junk.db")) << "not a database at all, but long enough to have a header of sorts";
  Output junk = tessera("report --db " + dir.file("junk.db") + " -o " + out);
  EXPECT_EQ(junk.code, 1);
  EXPECT_NE(junk.text.find("not a SQLite database"), std::string::npos) << junk.text;
  ASSERT_TRUE(records::Store::open(dir.file("empty.db")).is_ok());
  Output empty = tessera("report --db " + dir.file("empty.db") + " -o " + out);
  EXPECT_EQ(empty.code, 1);
  EXPECT_NE(empty.text.find("no records to report"), std::string::npos) << empty.text;
  one_record_db(dir.file("one.db"));
  Output unwritable = tessera("report --db " + dir.file("one.db") + " -o " + dir.file("no/dir/r.html"));
  EXPECT_EQ(unwritable.code, 1);
  EXPECT_NE(unwritable.text.find("cannot write"), std::string::npos) << unwritable.text;
  EXPECT_FALSE(fs::exists(out)) << "nothing written by the failures";
  Output ok = tessera("report --db " + dir.file("one.db") + " -o " + out);
  EXPECT_EQ(ok.code, 0) << ok.text;
  EXPECT_NE(read_bytes(out).find("id=\"" + key_of(42) + "\""), std::string::npos);
}

TEST(ReportCommand, ModelWhoseKernelsHaveNoRecordsSaysSoPerTask) {
  if (!fs::exists(kConvModel)) GTEST_SKIP() << "libonnx-testdata is not installed";
  TempDir dir;
  one_record_db(dir.file("one.db"));
  Output out = tessera("report " + kConvModel.string() + " --db " + dir.file("one.db") + " -o " + dir.file("r.html"));
  ASSERT_EQ(out.code, 0) << out.text;
  const std::string html = read_bytes(dir.file("r.html"));
  EXPECT_NE(html.find("id=\"model\""), std::string::npos);
  EXPECT_NE(html.find("1 of its 1 kernels have no records"), std::string::npos);
  EXPECT_NE(html.find("no records of this task in the database"), std::string::npos);
  EXPECT_NE(html.find("fused_conv"), std::string::npos) << "the kernel's label";
}

}  // namespace
}  // namespace tessera::report
