// `tessera records why` as a user runs it: the real binary over a real
// database names the record compile time would use, the ones it skipped, and
// what it falls back to without one.
#include <cstdio>
#include <sstream>

#include "base/target.h"
#include "records/store.h"
#include "test_util.h"

namespace tessera::records {
namespace {

using testing::TempDir;

const std::string kIcelake = "llvm -mtriple=x86_64-linux-gnu -mcpu=icelake-server -num-cores=2";
const std::string kCascade = "llvm -mtriple=x86_64-linux-gnu -mcpu=cascadelake -num-cores=2";
const std::string kMatmul = "matmul:M=64,N=64,K=64";

struct CliRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

CliRun tessera_records(const std::string& args) {
  CliRun run;
  std::string command = std::string(TESSERA_BINARY) + " records " + args + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return run;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) run.output.append(buf, n);
  int status = ::pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

CliRun why(const std::string& db, const std::string& op, const std::string& target) {
  return tessera_records("why --db " + db + " --op " + op + " --target '" + target + "'");
}

// The value printed after `label` ("workload    1a2b...") in why's output.
std::string field(const std::string& output, const std::string& label) {
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line))
    if (line.rfind(label + " ", 0) == 0) {
      size_t start = line.find_first_not_of(' ', label.size());
      return start == std::string::npos ? "" : line.substr(start);
    }
  return "";
}

// A matmul step list: the output stage (2, after the placeholders A and B)
// split at loop `iter`. Loop 42 does not exist: that list no longer replays.
std::string split_steps(int iter) {
  return R"([{"kind":"split","stage":2,"iter":)" + std::to_string(iter) + R"(,"factors":[8]}])";
}

Record record(const std::string& key, const std::string& target, double cost, const std::string& steps, int n) {
  Record r = testing::ok_record(key, target, cost, n);
  r.steps_json = steps;
  return r;
}

// The workload key of kMatmul, as the compiler computes it.
std::string matmul_key(const TempDir& dir) {
  CliRun run = why(dir.file("absent.db"), kMatmul, kIcelake);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  std::string key = field(run.output, "workload");
  EXPECT_TRUE(is_valid_workload_key(key)) << run.output;
  return key;
}

TEST(RecordsWhy, NamesTheChosenRecordAndTheSkippedOnes) {
  TempDir dir;
  const std::string key = matmul_key(dir), db = dir.file("tessera.db");
  {
    auto store = Store::open(db);
    ASSERT_OK(store);
    ASSERT_OK(store->add_workload({key, "", "matmul", "64x64x64 f32", 2.0 * 64 * 64 * 64}));
    ASSERT_OK(store->append({record(key, kIcelake, 0.00001, split_steps(42), 1),  // id 1: broken
                             record(key, kIcelake, 0.00002, split_steps(0), 2),   // id 2: the pick
                             record(key, kIcelake, 0.00003, split_steps(1), 3)}));
  }
  CliRun run = why(db, kMatmul, kIcelake);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(field(run.output, "schedule"), "record 2 (record)") << run.output;
  EXPECT_EQ(field(run.output, "why"), "#2 of 3 records on this target") << run.output;
  EXPECT_EQ(field(run.output, "cost"), "20.0 us   26.2 GFLOP/s") << run.output;
  EXPECT_EQ(field(run.output, "records"), "3 ok on this target") << run.output;
  EXPECT_EQ(field(run.output, "candidates"), "3 proposed, 1 skipped") << run.output;
  EXPECT_NE(field(run.output, "warning").find("record 1: the step list no longer replays: step 0"), std::string::npos)
      << run.output;
  EXPECT_EQ(field(run.output, "target"), "x86_64 icelake-server, 2 cores") << run.output;
}

TEST(RecordsWhy, UsesACompatibleTargetWithAWarning) {
  TempDir dir;
  const std::string key = matmul_key(dir), db = dir.file("tessera.db");
  {
    auto store = Store::open(db);
    ASSERT_OK(store);
    ASSERT_OK(store->append({record(key, kCascade, 0.00002, split_steps(0), 1)}));
  }
  CliRun run = why(db, kMatmul, kIcelake);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(field(run.output, "schedule"), "record 1 (compatible-record)") << run.output;
  EXPECT_NE(field(run.output, "why").find("compatible target"), std::string::npos) << run.output;
  EXPECT_NE(field(run.output, "warning").find("measured on '" + kCascade + "'"), std::string::npos) << run.output;
}

TEST(RecordsWhy, WithoutRecordsSaysWhatItFallsBackTo) {
  TempDir dir;
  const std::string db = dir.file("tessera.db");
  ASSERT_OK(Store::open(db));  // an empty database
  CliRun run = why(db, kMatmul, kIcelake);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(field(run.output, "schedule"), "template-fallback") << run.output;
  EXPECT_NE(field(run.output, "why").find("gemm template's fallback"), std::string::npos) << run.output;
  run = why(db, "softmax:M=8,N=32", kIcelake);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(field(run.output, "schedule"), "generic-fallback") << run.output;
  EXPECT_NE(field(run.output, "steps"), "0") << run.output;
}

TEST(RecordsWhy, BadOperatorOrTargetIsAUsageError) {
  TempDir dir;
  CliRun run = why(dir.file("x.db"), "matmul:M=0", kIcelake);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  run = why(dir.file("x.db"), kMatmul, "llvm -mtriple=x86_64-linux-gnu -mcpu=notacpu");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("notacpu"), std::string::npos) << run.output;
  run = tessera_records("why --db " + dir.file("x.db"));
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("--op"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace tessera::records

namespace tessera::records {
namespace {

const std::string kConvModel = "/usr/share/libonnx-testdata/data/node/test_basic_conv_with_padding/model.onnx";

CliRun why_model(const std::string& db, const std::string& more = "") {
  return tessera_records("why " + kConvModel + " --db " + db + " --target '" + kIcelake + "'" + more);
}

// `records why MODEL.onnx`: every kernel with its workload key, the record
// it would use, or why it has none.
TEST(RecordsWhy, AModelsKernelsWithTheirKeysAndWhyEachHasARecordOrNot) {
  TempDir dir;
  const std::string db = dir.file("tessera.db");
  CliRun none = why_model(db);
  ASSERT_EQ(none.exit_code, 0) << none.output;
  const std::string key = field(none.output, "  workload");
  ASSERT_TRUE(is_valid_workload_key(key)) << none.output;
  EXPECT_EQ(field(none.output, "  why not"), "no records database") << none.output;
  EXPECT_NE(none.output.find("1 kernels: 0 from records, 1 on fallbacks"), std::string::npos) << none.output;
  {
    auto store = Store::open(db);
    ASSERT_OK(store);
    ASSERT_OK(store->append({testing::error_record(key, kIcelake, "wrong-answer", 1),
                             testing::error_record(key, testing::kOtherTarget, "crash", 2)}));
  }
  CliRun wrong = why_model(db);
  EXPECT_EQ(wrong.exit_code, 0) << wrong.output;
  EXPECT_EQ(field(wrong.output, "  why not"), "none of its 1 records on this target is ok: 1 wrong-answer")
      << wrong.output;
  {
    auto store = Store::open(db);
    ASSERT_OK(store);
    Record ok = testing::ok_record(key, kIcelake, 0.0001, 3);
    ok.steps_json = "[]";  // the unscheduled loops: replays on any DAG
    ASSERT_OK(store->append({ok}));
  }
  CliRun used = why_model(db);
  EXPECT_EQ(used.exit_code, 0) << used.output;
  EXPECT_EQ(field(used.output, "  uses").rfind("record 3 (record)", 0), 0u) << used.output;
  EXPECT_NE(used.output.find("1 kernels: 1 from records, 0 on fallbacks"), std::string::npos) << used.output;
  // The target by its short name; whole with --full-target.
  EXPECT_EQ(field(used.output, "target"), short_target_name(kIcelake)) << used.output;
  EXPECT_EQ(field(why_model(db, " --full-target").output, "target"), kIcelake);

  // Tune's check in the model kept the fallback over record 3: said, with its figures.
  {
    auto store = Store::open(db);
    ASSERT_OK(store);
    ModelCheck check;
    check.workload_key = key;
    check.target = kIcelake;
    check.record_id = 3;
    check.record_seconds = 0.612e-3;
    check.fallback_seconds = 0.571e-3;
    check.keeps_fallback = true;
    ASSERT_OK(store->add_model_check(check));
  }
  CliRun kept = why_model(db);
  EXPECT_EQ(kept.exit_code, 0) << kept.output;
  EXPECT_NE(field(kept.output, "  uses").find("(kept by tune's check in the model)"), std::string::npos) << kept.output;
  EXPECT_EQ(field(kept.output, "  why not"), "the model ran 0.612 ms with record 3, 0.571 ms with the fallback")
      << kept.output;
}

TEST(RecordsWhy, AModelThatDoesNotImportIsAFailure) {
  TempDir dir;
  testing::write_bytes(dir.file("bad.onnx"), "not a model");
  CliRun run = tessera_records("why " + dir.file("bad.onnx") + " --db " + dir.file("t.db"));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("bad.onnx"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace tessera::records
