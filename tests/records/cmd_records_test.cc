// `tessera records ...` as a user runs it: the real binary, a real database.
#include <algorithm>
#include <cstdio>

#include "records/store.h"
#include "test_util.h"

namespace tessera::records {
namespace {

using testing::error_record;
using testing::key_of;
using testing::kTarget;
using testing::ok_record;
using testing::TempDir;

struct CliRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs a shell command line, stderr with stdout.
CliRun shell(const std::string& command_line) {
  CliRun run;
  const std::string command = "(" + command_line + ") 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return run;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) run.output.append(buf, n);
  int status = ::pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

CliRun tessera_records(const std::string& args) {
  return shell(std::string(TESSERA_BINARY) + " records " + args);
}

// A database with one matmul workload of known flop count: best 2 ms.
std::string make_db(const TempDir& dir) {
  const std::string path = dir.file("cli.db");
  auto store = Store::open(path);
  EXPECT_TRUE(store);
  EXPECT_TRUE(store->add_workload({key_of(1), "", "matmul", "1024^3", 2.0 * 1024 * 1024 * 1024}));
  Record checked = ok_record(key_of(1), kTarget, 0.002, 2);
  checked.checked = true;
  EXPECT_TRUE(store->append({ok_record(key_of(1), kTarget, 0.004, 1), checked, ok_record(key_of(1), kTarget, 0.003, 3),
                             error_record(key_of(1), kTarget, "crash", 4)}));
  return path;
}

// The line of `output` that holds `needle`, or "".
std::string line_with(const std::string& output, const std::string& needle) {
  size_t at = output.find(needle);
  if (at == std::string::npos) return "";
  size_t begin = output.rfind('\n', at), end = output.find('\n', at);
  begin = begin == std::string::npos ? 0 : begin + 1;
  return output.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

TEST(RecordsCli, ListShowsWhetherEachRecordWasChecked) {
  TempDir dir;
  const std::string db = make_db(dir);
  CliRun run = tessera_records("list --db " + db);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(line_with(run.output, "ID").find("CHECKED"), std::string::npos) << run.output;
  EXPECT_NE(line_with(run.output, "2.000 ms").find(" yes "), std::string::npos) << run.output;
  EXPECT_EQ(line_with(run.output, "2.000 ms").find(" no "), std::string::npos) << run.output;
  EXPECT_NE(line_with(run.output, "4.000 ms").find(" no "), std::string::npos) << run.output;
}

TEST(RecordsCli, BestShowsCostsWithGflops) {
  TempDir dir;
  const std::string db = make_db(dir);
  CliRun run = tessera_records("best --db " + db + " --workload " + key_of(1).substr(0, 30) + " --k 2");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("GFLOP/S"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("2.000 ms"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("1073.7"), std::string::npos) << run.output;  // 2 GFLOP in 2 ms
  EXPECT_EQ(run.output.find("4.000 ms"), std::string::npos) << "k = 2 shows two records";
  // A target by its short name; whole with --full-target.
  EXPECT_NE(run.output.find("x86_64 icelake-server, 2 cores"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find(kTarget), std::string::npos) << run.output;
  CliRun full = tessera_records("best --db " + db + " --workload " + key_of(1).substr(0, 30) + " --k 2 --full-target");
  EXPECT_NE(full.output.find(kTarget), std::string::npos) << full.output;
}

TEST(RecordsCli, StatsCountsRecordsAndFailures) {
  TempDir dir;
  const std::string db = make_db(dir);
  CliRun run = tessera_records("stats --db " + db);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("4 records, 3 ok, 1 failed"), std::string::npos) << run.output;
}

// Two workloads of one operator differ by their shapes: every table shows them.
TEST(RecordsCli, EveryTableShowsTheWorkloadsShapes) {
  TempDir dir;
  const std::string db = make_db(dir);
  for (const char* command : {"list", "best", "stats"}) {
    CliRun run = tessera_records(std::string(command) + " --db " + db);
    EXPECT_EQ(run.exit_code, 0) << run.output;
    EXPECT_NE(line_with(run.output, "WORKLOAD").find("SHAPES"), std::string::npos) << command << run.output;
    EXPECT_NE(line_with(run.output, "2.000 ms").find("1024^3"), std::string::npos) << command << run.output;
  }
}

// Into a pipe every table fits 120 columns: the one target is named once
// above it, a long shapes cell keeps its first input and its output; with
// --wide every cell is whole, and with two targets the column returns.
TEST(RecordsCli, TablesFitOneHundredTwentyColumnsAndWidePrintsEveryCell) {
  TempDir dir;
  const std::string db = make_db(dir);
  const std::string shapes = "1x320x320x32 4x4x32x64 64 1x320x320x64 -> 1x320x320x64 float32";
  {
    auto store = Store::open(db);
    ASSERT_TRUE(store);
    ASSERT_TRUE(
        store->add_workload({key_of(2), "", "fused_transpose_reshape_transpose_reshape_mul_mul_add", shapes, 1e9}));
    ASSERT_TRUE(store->append({ok_record(key_of(2), kTarget, 0.001, 5)}));
  }
  auto widest = [](const std::string& text) {
    size_t most = 0, begin = 0;
    for (size_t end = text.find('\n'); end != std::string::npos; begin = end + 1, end = text.find('\n', begin))
      most = std::max(most, end - begin);
    return most;
  };
  for (const char* command : {"list", "best", "stats"}) {
    CliRun run = tessera_records(std::string(command) + " --db " + db);
    EXPECT_EQ(run.exit_code, 0) << run.output;
    EXPECT_LE(widest(run.output), 120u) << command << "\n" << run.output;
    EXPECT_EQ(run.output.rfind("target: x86_64 icelake-server, 2 cores\n", 0), 0u) << command << run.output;
    EXPECT_EQ(line_with(run.output, "WORKLOAD").find("TARGET"), std::string::npos) << command << run.output;
    CliRun wide = tessera_records(std::string(command) + " --db " + db + " --wide");
    EXPECT_NE(wide.output.find(shapes), std::string::npos) << command << wide.output;
  }
  CliRun stats = tessera_records("stats --db " + db);
  EXPECT_NE(line_with(stats.output, "fused_").find("  1x320x320x"), std::string::npos)
      << stats.output;  // its first input first
  {
    auto store = Store::open(db);
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->append({ok_record(key_of(2), "llvm -mtriple=aarch64-linux-gnu -mattr=+neon", 0.002, 6)}));
  }
  CliRun two = tessera_records("stats --db " + db);
  EXPECT_NE(line_with(two.output, "WORKLOAD").find("TARGET"), std::string::npos) << two.output;
  EXPECT_LE(widest(two.output), 120u) << two.output;
}

TEST(RecordsCli, StatsCountsInfrastructureErrorsApartAndPruneDropsThem) {
  TempDir dir;
  const std::string db = make_db(dir);
  {
    auto store = Store::open(db);
    ASSERT_TRUE(store);
    Record lost = error_record(key_of(1), kTarget, "no-worker", 5);
    lost.infrastructure = true;
    ASSERT_TRUE(store->append({lost}));
  }
  CliRun stats = tessera_records("stats --db " + db);
  EXPECT_EQ(stats.exit_code, 0) << stats.output;
  EXPECT_NE(line_with(stats.output, "WORKLOAD").find("INFRA"), std::string::npos) << stats.output;
  EXPECT_NE(stats.output.find("5 records, 3 ok, 1 failed, 1 infrastructure errors"), std::string::npos) << stats.output;
  CliRun prune = tessera_records("prune --infrastructure --yes --db " + db);
  EXPECT_EQ(prune.exit_code, 0) << prune.output;
  EXPECT_NE(prune.output.find("dropped 1 infrastructure errors"), std::string::npos) << prune.output;
  auto store = Store::open(db);
  ASSERT_TRUE(store);
  EXPECT_EQ(store->count().value(), 4);  // the crash stays: a fact about its schedule
}

TEST(RecordsCli, ImportReportsMalformedLinesWithNumbersAndExitsOne) {
  TempDir dir;
  const std::string db = make_db(dir), file = dir.file("in.jsonl");
  ASSERT_EQ(tessera_records("export --db " + db + " --out " + file).exit_code, 0);
  std::string text = testing::read_bytes(file);
  testing::write_bytes(file, text + "{not json\n");
  CliRun run = tessera_records("import --db " + dir.file("new.db") + " " + file);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  const int bad_line = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
  EXPECT_NE(run.output.find(file + ":" + std::to_string(bad_line) + ": not valid JSON"), std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("4 records added"), std::string::npos) << run.output;
}

// A session's phase times go through export and import, also from stdin; a
// malformed phase_times line fails the import, naming the line, storing nothing.
TEST(RecordsCli, PhaseTimesRoundTripAndAMalformedLineStoresNothing) {
  TempDir dir;
  const std::string db = make_db(dir), file = dir.file("in.jsonl");
  {
    auto store = Store::open(db);
    ASSERT_TRUE(store);
    auto session = store->begin_session({0, "tessera tune --op matmul", "host", "0.1.0", "19.1.7", 1, 1.7e9, {}});
    ASSERT_TRUE(session);
    ASSERT_TRUE(store->add_phase_times({*session, key_of(1), kTarget, 1, 2, 3, 0.5, 0}));
  }
  ASSERT_EQ(tessera_records("export --db " + db + " --out " + file).exit_code, 0);
  const std::string text = testing::read_bytes(file);
  CliRun piped = shell("cat " + file + " | " + TESSERA_BINARY + " records import --db " + dir.file("piped.db") + " -");
  EXPECT_EQ(piped.exit_code, 0) << piped.output;
  auto imported = Store::open(dir.file("piped.db"));
  ASSERT_TRUE(imported);
  ASSERT_EQ(imported->phase_times().value().size(), 1u);
  EXPECT_DOUBLE_EQ(imported->phase_times().value()[0].measure_seconds, 3);

  const size_t at = text.find("\"batches\":1}");
  ASSERT_NE(at, std::string::npos) << text;
  testing::write_bytes(file, text.substr(0, at) + "\"batches\":-1}" + text.substr(at + 12));
  CliRun bad = tessera_records("import --db " + dir.file("new.db") + " " + file);
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  const int line = static_cast<int>(std::count(text.begin(), text.begin() + at, '\n')) + 1;
  EXPECT_NE(bad.output.find(file + ": line " + std::to_string(line) +
                            ": a phase_times line: field 'batches' must be at least 1; nothing of this import "
                            "was stored"),
            std::string::npos)
      << bad.output;
  auto none = Store::open(dir.file("new.db"));
  ASSERT_TRUE(none);
  EXPECT_EQ(none->count().value(), 0);
  EXPECT_TRUE(none->sessions().value().empty());
}

TEST(RecordsCli, PruneSaysWhatItWouldDropAndDeletesOnlyWithYes) {
  TempDir dir;
  const std::string db = make_db(dir);
  CliRun dry = tessera_records("prune --db " + db + " --keep 1 --errors-older-than 1d");
  EXPECT_EQ(dry.exit_code, 0) << dry.output;
  EXPECT_NE(dry.output.find("would drop 2 ok records beyond the best 1 of each workload and target, 1 old error"),
            std::string::npos)
      << dry.output;
  EXPECT_NE(dry.output.find("run again with --yes"), std::string::npos) << dry.output;
  EXPECT_EQ(Store::open(db)->count().value(), 4);  // nothing deleted
  CliRun run = tessera_records("prune --db " + db + " --keep 1 --errors-older-than 1d --yes");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("dropped 2 ok records"), std::string::npos) << run.output;
  auto store = Store::open(db);
  ASSERT_TRUE(store);
  EXPECT_EQ(store->count().value(), 1);
  EXPECT_DOUBLE_EQ(store->best_k(key_of(1), kTarget, 5).value()[0].mean_cost(), 0.002);
}

TEST(RecordsCli, MissingDatabaseIsAClearFailure) {
  TempDir dir;
  CliRun run = tessera_records("list --db " + dir.file("absent.db"));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.output.find("no such database"), std::string::npos) << run.output;
  EXPECT_FALSE(testing::exists(dir.file("absent.db")));
}

TEST(RecordsCli, UnknownOptionIsAUsageError) {
  CliRun run = tessera_records("list --fastest");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.output.find("unknown option --fastest"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace tessera::records
