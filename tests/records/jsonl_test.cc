// JSON Lines export and import: round trips, de-duplication, malformed lines,
// stable field names, filtered exports, database errors during an import, and
// the sessions' phase times.
#include "records/jsonl.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "compiler/te/workload_key.h"
#include "test_util.h"

namespace tessera::records {
namespace {

using testing::error_record;
using testing::key_of;
using testing::kOtherTarget;
using testing::kTarget;
using testing::ok_record;
using testing::TempDir;

// A database with a bit of everything export must carry.
void fill(Store& store) {
  ASSERT_OK(store.add_workload(
      {key_of(1), "C[i, j] += A[i, k] * B[k, j]", "matmul", "128x128x128 f32", 2.0 * 128 * 128 * 128}));
  ASSERT_OK(store.add_workload({key_of(2), "", "conv2d", "", 0}));
  ASSERT_OK_AND_ASSIGN(
      int64_t s1,
      store.begin_session(
          {0, "tessera tune --op matmul --trials 64", "farm-01", "0.1.0", "19.1.7", 7, 1'700'000'000.25, {}}));
  ASSERT_OK(store.end_session(s1, 1'700'003'600.5));
  ASSERT_OK_AND_ASSIGN(
      int64_t s2,
      store.begin_session({0, "tessera tune --op conv2d", "board-3", "0.1.0", "19.1.7", 8, 1'700'100'000, {}}));
  ASSERT_OK(store.begin_session({0, "tessera tune --op idle", "farm-02", "0.1.0", "19.1.7", 9, 1'700'200'000, {}}));
  Record knob = ok_record(key_of(1), kTarget, 1.0 / 3.0, 1);
  knob.space = SpaceKind::kKnob;
  knob.knob_config_json = R"({"tile_x": 16, "unroll": true})";
  knob.session_id = s1;
  knob.costs = {1.0 / 3.0, 0.1 + 0.2, 2e-7};
  knob.timestamp = 1'700'000'123.456789;
  knob.checked = true;
  Record manual = ok_record(key_of(1), kOtherTarget, 0.25, 2);
  manual.space = SpaceKind::kManual;
  manual.device_key = "";
  Record crash = error_record(key_of(2), kTarget, "crash", 3);
  crash.session_id = s2;
  crash.error_message = "signal 11 in \"conv\"\nat line 2";
  ASSERT_OK(store.append({knob, manual, crash, ok_record(key_of(3), kTarget, 0.01, 4)}));
  // Two batches of s1's tuning, one of s2's.
  ASSERT_OK(store.add_phase_times({s1, key_of(1), kTarget, 1.5, 2.25, 3.125, 0.0625, 0}));
  ASSERT_OK(store.add_phase_times({s1, key_of(1), kTarget, 0.5, 0.75, 1.0 / 3.0, 0.01, 0}));
  ASSERT_OK(store.add_phase_times({s2, key_of(2), kTarget, 0.1, 0.2, 0.3, 0.4, 0}));
}

std::string export_text(Store& store, const RecordFilter& filter = {}) {
  std::ostringstream out;
  auto report = export_jsonl(store, out, filter);
  EXPECT_TRUE(report) << report.status().to_string();
  return out.str();
}

ImportReport import_text(Store& store, const std::string& text, int64_t batch_size = 1000) {
  std::istringstream in(text);
  auto report = import_jsonl(store, in, ImportOptions{batch_size});
  EXPECT_TRUE(report) << report.status().to_string();
  return report ? std::move(report).value() : ImportReport{};
}

TEST(Jsonl, RoundTripIntoAnEmptyDatabaseLeavesItEqual) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(Store a, Store::open(dir.file("a.db")));
  fill(a);
  const std::string text = export_text(a);
  ASSERT_OK_AND_ASSIGN(Store b, Store::open(dir.file("b.db")));
  ImportReport report = import_text(b, text);
  EXPECT_TRUE(report.errors.empty());
  EXPECT_EQ(report.records_added, 4);
  EXPECT_EQ(report.duplicates, 0);
  EXPECT_EQ(report.phase_times, 2);
  EXPECT_EQ(b.workloads().value(), a.workloads().value());
  EXPECT_EQ(b.sessions().value(), a.sessions().value());
  EXPECT_EQ(b.list({}).value(), a.list({}).value());
  ASSERT_EQ(a.phase_times().value().size(), 2u);
  EXPECT_EQ(b.phase_times().value(), a.phase_times().value());
  EXPECT_EQ(export_text(b), text);
}

TEST(Jsonl, ImportSkipsRecordsAlreadyStored) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(Store a, Store::open(dir.file("a.db")));
  fill(a);
  const std::string text = export_text(a);
  ImportReport again = import_text(a, text);
  EXPECT_TRUE(again.errors.empty());
  EXPECT_EQ(again.records_added, 0);
  EXPECT_EQ(again.duplicates, 4);
  EXPECT_EQ(a.count().value(), 4);
  EXPECT_EQ(a.sessions().value().size(), 3u);
  // A changed cost is a new measurement of the same steps, not a duplicate.
  ASSERT_OK_AND_ASSIGN(Store b, Store::open(dir.file("b.db")));
  Record r = ok_record(key_of(5), kTarget, 0.002, 1);
  ASSERT_OK(b.append({r}));
  r.costs = {0.003};
  ASSERT_OK(b.append({r}));
  const std::string twice = export_text(b);
  ASSERT_OK_AND_ASSIGN(Store c, Store::open(dir.file("c.db")));
  ImportReport doubled = import_text(c, twice + twice);
  EXPECT_EQ(doubled.records_added, 2);
  EXPECT_EQ(doubled.duplicates, 2);
}

TEST(Jsonl, MalformedLinesAreReportedWithLineNumbersAndGoodLinesImported) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(dir.file("t.db")));
  const std::string good = R"({"type":"record","workload_key":")" + key_of(1) +
                           R"(","target":"llvm","space":"sketch",)"
                           R"("steps":[{"kind":"split"}],"costs":[0.001],"error_kind":"ok","timestamp":1700000000})";
  const std::string good2 = R"({"workload_key":")" + key_of(1) +
                            R"(","target":"llvm","space":"knob","steps":[],)"
                            R"("costs":[],"error_kind":"crash","timestamp":1700000001})";
  const std::string lines[] = {
      R"({"type":"workload","key":")" + key_of(1) + R"(","op_name":"matmul"})",  // 1
      good,                                                                      // 2
      good.substr(0, 40),                                                        // 3 cut short
      "",                                                                        // 4 blank: fine
      "[1, 2]",                                                                  // 5 not an object
      R"({"type":"record","workload_key":")" + key_of(1) +
          R"(","target":"llvm","space":"sketch","steps":[],"error_kind":"ok","timestamp":1})",  // 6
      R"({"workload_key":")" + key_of(1) +
          R"(","target":"llvm","space":"genetic","steps":[],)"
          R"("costs":[1],"error_kind":"ok","timestamp":1})",  // 7 bad space
      good2,                                                  // 8
      R"({"type":"checkpoint"})",                             // 9 unknown type
      R"({"workload_key":")" + key_of(1) +
          R"(","target":"llvm","space":"sketch","steps":[],)"
          R"("costs":[1],"error_kind":"ok","timestamp":1,"session":99})",  // 10 no session 99
      R"({"workload_key":")" + key_of(1) +
          R"(","target":"llvm","space":"sketch","steps":[],)"
          R"("costs":["fast"],"error_kind":"ok","timestamp":1})",  // 11 cost not a number
      R"({"workload_key":"XYZ","target":"llvm","space":"sketch","steps":[],)"
      R"("costs":[1],"error_kind":"ok","timestamp":1})",  // 12 bad key
  };
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  ImportReport report = import_text(store, text);
  std::vector<int64_t> bad_lines;
  for (const LineError& e : report.errors) bad_lines.push_back(e.line);
  EXPECT_EQ(bad_lines, (std::vector<int64_t>{3, 5, 6, 7, 9, 10, 11, 12}));
  ASSERT_EQ(report.errors.size(), 8u);
  EXPECT_NE(report.errors[2].message.find("costs"), std::string::npos) << report.errors[2].message;
  EXPECT_NE(report.errors[5].message.find("session 99"), std::string::npos);
  EXPECT_EQ(report.records_added, 2);
  EXPECT_EQ(report.workloads, 1);
  EXPECT_EQ(store.count().value(), 2);
}

// Steps nested 100,000 deep overflowed the stack of the import (and of any
// later export): the line is skipped with the reason, the rest imported.
TEST(Jsonl, JsonNestedTooDeepIsSkippedWithTheReason) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(dir.file("t.db")));
  const std::string head = R"({"workload_key":")" + key_of(1) + R"(","target":"llvm","space":"sketch","steps":)";
  const std::string tail = R"(,"costs":[0.001],"error_kind":"ok","timestamp":1700000000})";
  const std::string deep = head + std::string(100000, '[') + std::string(100000, ']') + tail;
  const std::string text = R"({"type":"workload","key":")" + key_of(1) +
                           R"(","op_name":"matmul"})"
                           "\n" +
                           deep + "\n" + head + "[]" + tail + "\n";
  ImportReport report = import_text(store, text);
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_EQ(report.errors[0].line, 2);
  EXPECT_NE(report.errors[0].message.find("nested deeper than 64 levels"), std::string::npos)
      << report.errors[0].message;
  EXPECT_EQ(report.records_added, 1);
}

TEST(Jsonl, ExportUsesTheDocumentedFieldNamesInOrder) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(dir.file("t.db")));
  fill(store);
  std::istringstream lines(export_text(store));
  std::map<std::string, std::vector<std::string>> fields;
  std::string line;
  while (std::getline(lines, line)) {
    auto j = nlohmann::ordered_json::parse(line);
    std::vector<std::string> names;
    for (auto it = j.begin(); it != j.end(); ++it) names.push_back(it.key());
    fields[j["type"].get<std::string>()] = names;
  }
  using Names = std::vector<std::string>;
  EXPECT_EQ(fields["workload"], (Names{"type", "key", "op_name", "shapes", "flop_count", "dag_text"}));
  EXPECT_EQ(fields["session"],
            (Names{"type", "id", "command_line", "host", "tool_version", "llvm_version", "seed", "started", "ended"}));
  EXPECT_EQ(fields["phase_times"], (Names{"type", "session", "workload_key", "target", "search_seconds",
                                          "build_seconds", "measure_seconds", "store_seconds", "batches"}));
  EXPECT_EQ(fields["record"], (Names{"type", "workload_key", "target", "device_key", "space", "steps", "knob_config",
                                     "costs", "mean_cost", "error_kind", "error_message", "build_seconds",
                                     "run_seconds", "timestamp", "session", "checked", "infrastructure"}));
}

// A file exported by a build before XXH3 keys: its workload and the records
// under its key are imported under the XXH3-128 key.
TEST(Jsonl, AnOldFilesWorkloadKeysAreRewritten) {
  TempDir dir;
  const std::string text = "t0 = placeholder[4] float32\nt1 = compute[4] float32 injective (v0 ) t0[v0]\nargs: t0 t1";
  const std::string old_key = legacy_workload_key_of(text), new_key = workload_key_of(text);
  nlohmann::json w = {{"type", "workload"}, {"key", old_key},  {"op_name", "copy"},
                      {"shapes", "4"},      {"flop_count", 0}, {"dag_text", text}};
  Record r = ok_record(old_key, testing::kTarget, 0.001, 1);
  ASSERT_OK_AND_ASSIGN(Store a, Store::open(dir.file("a.db")));
  ASSERT_OK(a.append({r}));
  std::string file = w.dump() + "\n" + export_text(a);
  ASSERT_OK_AND_ASSIGN(Store b, Store::open(dir.file("b.db")));
  ImportReport report = import_text(b, file);
  EXPECT_TRUE(report.errors.empty());
  EXPECT_TRUE(b.workload(new_key).value().has_value());
  EXPECT_FALSE(b.workload(old_key).value().has_value());
  EXPECT_EQ(b.best_k(new_key, testing::kTarget, 5).value().size(), 1u);
  EXPECT_TRUE(b.best_k(old_key, testing::kTarget, 5).value().empty());
}

// Infrastructure errors round-trip; exports from before the flag existed are
// classified by their kind and message, as the schema migration does.
TEST(Jsonl, InfrastructureIsImportedAndOldLinesAreClassifiedByKind) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(Store a, Store::open(dir.file("a.db")));
  Record lost = testing::error_record(testing::key_of(3), testing::kTarget, "no-worker", 1);
  lost.infrastructure = true;
  Record deadline = testing::error_record(testing::key_of(3), testing::kTarget, "timeout", 2);
  deadline.error_message = "no result from the farm within the job's deadline (queue wait included)";
  Record hung = testing::error_record(testing::key_of(3), testing::kTarget, "timeout", 3);
  ASSERT_OK(a.append({lost, deadline, hung}));
  std::string text = export_text(a);
  ASSERT_OK_AND_ASSIGN(Store b, Store::open(dir.file("b.db")));
  EXPECT_TRUE(import_text(b, text).errors.empty());
  ASSERT_OK_AND_ASSIGN(std::vector<Record> round_trip, b.list({}));
  ASSERT_EQ(round_trip.size(), 3u);
  EXPECT_TRUE(round_trip[0].infrastructure);
  EXPECT_FALSE(round_trip[1].infrastructure);  // exported as stored: false
  EXPECT_FALSE(round_trip[2].infrastructure);

  std::istringstream lines(text);
  std::string old_text, line;
  while (std::getline(lines, line)) {
    auto j = nlohmann::ordered_json::parse(line);
    j.erase("infrastructure");
    old_text += j.dump() + "\n";
  }
  ASSERT_OK_AND_ASSIGN(Store c, Store::open(dir.file("c.db")));
  EXPECT_TRUE(import_text(c, old_text).errors.empty());
  ASSERT_OK_AND_ASSIGN(std::vector<Record> old, c.list({}));
  ASSERT_EQ(old.size(), 3u);
  EXPECT_TRUE(old[0].infrastructure);   // no-worker
  EXPECT_TRUE(old[1].infrastructure);   // the runner's deadline, as it used to be reported
  EXPECT_FALSE(old[2].infrastructure);  // a kernel that hung is a fact about its schedule
}

// Exports from before checks were recorded have no "checked": not checked.
TEST(Jsonl, CheckedIsImportedAndDefaultsToFalse) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(Store a, Store::open(dir.file("a.db")));
  fill(a);
  std::istringstream lines(export_text(a));
  std::string text, line;
  int records = 0;
  while (std::getline(lines, line)) {
    auto j = nlohmann::ordered_json::parse(line);
    if (j["type"] == "record") {
      if (records == 0) {
        EXPECT_TRUE(j["checked"].get<bool>()) << line;  // the knob record
      }
      if (records == 1) j.erase("checked");
      if (records == 2) j["checked"] = "yes";
      ++records;
    }
    text += j.dump() + "\n";
  }
  ASSERT_OK_AND_ASSIGN(Store b, Store::open(dir.file("b.db")));
  ImportReport report = import_text(b, text);
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_NE(report.errors[0].message.find("checked"), std::string::npos) << report.errors[0].message;
  EXPECT_EQ(report.records_added, 3);
  ASSERT_OK_AND_ASSIGN(std::vector<Record> imported, b.list({}));
  int checked = 0;
  for (const Record& r : imported) checked += r.checked;
  EXPECT_EQ(checked, 1);
}

TEST(Jsonl, FilteredExportCarriesOnlyMatchingRecordsAndTheirSessions) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(Store a, Store::open(dir.file("a.db")));
  fill(a);
  RecordFilter filter;
  filter.workload_key = key_of(2);
  ASSERT_OK_AND_ASSIGN(Store b, Store::open(dir.file("b.db")));
  ImportReport report = import_text(b, export_text(a, filter));
  EXPECT_TRUE(report.errors.empty());
  EXPECT_EQ(report.records_added, 1);
  ASSERT_EQ(b.sessions().value().size(), 1u);
  EXPECT_EQ(b.sessions().value()[0].host, "board-3");
  ASSERT_EQ(b.workloads().value().size(), 1u);
  EXPECT_EQ(b.workloads().value()[0].op_name, "conv2d");
  ASSERT_EQ(b.phase_times().value().size(), 1u);  // s2's, not s1's of another workload
  EXPECT_EQ(b.phase_times().value()[0].workload_key, key_of(2));
  EXPECT_EQ(b.phase_times().value()[0].session_id, b.sessions().value()[0].id);
}

// A database error halfway (the file's quota reached) fails the whole
// import: no workload, session or record of it stays.
TEST(Jsonl, DatabaseErrorStopsTheImportWhichLeavesNothing) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(Store source, Store::open(dir.file("source.db")));
  SessionInfo s;
  s.host = "tuner-1";
  ASSERT_OK_AND_ASSIGN(int64_t session, source.begin_session(s));
  std::vector<Record> batch;
  for (int i = 0; i < 5000; ++i) {
    batch.push_back(ok_record(key_of(i % 10), kTarget, 0.001, i));
    batch.back().session_id = session;
  }
  ASSERT_OK(source.append(batch));
  const std::string text = export_text(source);
  OpenOptions quota;
  quota.max_size_bytes = 256 * 1024;
  ASSERT_OK_AND_ASSIGN(Store small, Store::open(dir.file("small.db"), quota));
  std::istringstream in(text);
  auto report = import_jsonl(small, in, ImportOptions{100});
  ASSERT_FALSE(report);
  EXPECT_EQ(report.status().code(), ErrorCode::kIOError);
  EXPECT_NE(report.status().message().find("at line"), std::string::npos);
  EXPECT_EQ(small.count().value(), 0);
  EXPECT_TRUE(small.sessions().value().empty());
  EXPECT_TRUE(small.workloads().value().empty());
  // The store still takes what fits.
  ASSERT_OK(small.append({ok_record(key_of(1), kTarget, 0.001, 1)}));
  EXPECT_EQ(small.count().value(), 1);
}

TEST(Jsonl, BytesThatAreNotUtf8AreExportedAsReplacementCharacters) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(Store a, Store::open(dir.file("a.db")));
  Record r = error_record(key_of(1), kTarget, "crash");
  r.error_message = "stderr: \xff\xfe garbage";
  ASSERT_OK(a.append({r}));
  ASSERT_OK_AND_ASSIGN(Store b, Store::open(dir.file("b.db")));
  ImportReport report = import_text(b, export_text(a));
  EXPECT_TRUE(report.errors.empty());
  ASSERT_EQ(report.records_added, 1);
  EXPECT_EQ(b.list({}).value()[0].error_message, "stderr: \xef\xbf\xbd\xef\xbf\xbd garbage");
}

// An export that fails part-way (here the file size limit, as a full disk
// would) leaves no partial file, and the file it was to replace as it was.
TEST(Jsonl, AFailedExportLeavesThePreviousFileWhole) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(dir.file("t.db")));
  fill(store);
  const std::string path = dir.file("out.jsonl");
  testing::write_bytes(path, "the previous export\n");
  const pid_t pid = ::fork();
  if (pid == 0) {  // a child, so that the limit binds nothing else
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{64, 64};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    auto report = export_jsonl_file(store, path);
    ::_exit(report.is_ok() ? 1 : report.status().code() == ErrorCode::kIOError ? 0 : 2);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the export succeeded, 2: another error than kIOError";
  EXPECT_EQ(testing::read_bytes(path), "the previous export\n");
  int exports = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
    exports += entry.path().filename().string().rfind("out.jsonl", 0) == 0;
  EXPECT_EQ(exports, 1) << "out.jsonl alone, nothing partial beside it";
}

TEST(Jsonl, MissingInputFileIsNotFound) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(dir.file("t.db")));
  EXPECT_EQ(import_jsonl_file(store, dir.file("nope.jsonl")).status().code(), ErrorCode::kNotFound);
}

// The lines of an export.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

// Exported phase times are attached to the imported session, whatever its id there.
TEST(JsonlPhaseTimes, AreAttachedToTheImportedSession) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(Store a, Store::open(dir.file("a.db")));
  fill(a);
  ASSERT_OK_AND_ASSIGN(Store b, Store::open(dir.file("b.db")));
  ASSERT_OK(b.begin_session({0, "tessera tune --op other", "elsewhere", "0.1.0", "19.1.7", 1, 1'600'000'000, {}}));
  EXPECT_TRUE(import_text(b, export_text(a)).errors.empty());
  ASSERT_OK_AND_ASSIGN(std::vector<SessionInfo> sessions, b.sessions());
  ASSERT_EQ(sessions.size(), 4u);
  ASSERT_OK_AND_ASSIGN(std::vector<PhaseTimes> times, b.phase_times());
  ASSERT_EQ(times.size(), 2u);
  EXPECT_EQ(times[0].session_id, sessions[1].id);  // s1 of a, the second session of b
  EXPECT_EQ(sessions[1].host, "farm-01");
  EXPECT_DOUBLE_EQ(times[0].search_seconds, 2.0);
  EXPECT_DOUBLE_EQ(times[0].measure_seconds, 3.125 + 1.0 / 3.0);
  EXPECT_EQ(times[0].batches, 2);
  EXPECT_EQ(times[1].session_id, sessions[2].id);
  EXPECT_EQ(sessions[2].host, "board-3");
}

TEST(JsonlPhaseTimes, ImportingAFileTwiceDoesNotDoubleThem) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(Store a, Store::open(dir.file("a.db")));
  fill(a);
  const std::string text = export_text(a);
  ASSERT_OK_AND_ASSIGN(Store b, Store::open(dir.file("b.db")));
  EXPECT_EQ(import_text(b, text).phase_times, 2);
  ImportReport again = import_text(b, text);
  EXPECT_TRUE(again.errors.empty());
  EXPECT_EQ(again.phase_times, 2);
  EXPECT_EQ(b.phase_times().value(), a.phase_times().value());
  // Into the database it came from, too: the same sessions, the same times.
  EXPECT_TRUE(import_text(a, text).errors.empty());
  EXPECT_EQ(a.phase_times().value(), b.phase_times().value());
  EXPECT_EQ(a.phase_times().value().size(), 2u);
}

// A session exported while it ran, then again later: whichever file comes
// last, the later snapshot (more batches) is what stays.
TEST(JsonlPhaseTimes, AnEarlierSnapshotOfASessionDoesNotReplaceALaterOne) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(Store a, Store::open(dir.file("a.db")));
  fill(a);
  const std::string early = export_text(a);
  const int64_t s1 = a.sessions().value()[0].id;
  ASSERT_OK(a.add_phase_times({s1, key_of(1), kTarget, 1, 1, 1, 1, 0}));
  const std::string late = export_text(a);
  ASSERT_OK_AND_ASSIGN(Store b, Store::open(dir.file("b.db")));
  import_text(b, early);
  import_text(b, late);
  EXPECT_EQ(b.phase_times().value(), a.phase_times().value());
  ASSERT_OK_AND_ASSIGN(Store c, Store::open(dir.file("c.db")));
  import_text(c, late);
  import_text(c, early);
  EXPECT_EQ(c.phase_times().value(), a.phase_times().value());
  EXPECT_EQ(c.phase_times().value()[0].batches, 3);
}

// A file exported before phase times were: no phase_times lines, no error,
// and the report says "unknown" for its sessions as before.
TEST(JsonlPhaseTimes, AnExportWithoutThemStillImports) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(Store a, Store::open(dir.file("a.db")));
  fill(a);
  std::vector<std::string> old;
  for (const std::string& line : lines_of(export_text(a)))
    if (line.find("\"type\":\"phase_times\"") == std::string::npos) old.push_back(line);
  ASSERT_OK_AND_ASSIGN(Store b, Store::open(dir.file("b.db")));
  ImportReport report = import_text(b, joined(old));
  EXPECT_TRUE(report.errors.empty());
  EXPECT_EQ(report.records_added, 4);
  EXPECT_EQ(report.phase_times, 0);
  EXPECT_EQ(b.sessions().value().size(), 3u);
  EXPECT_TRUE(b.phase_times().value().empty());
}

// Each malformed phase_times line, appended after every good line of an
// export: the import fails naming the line and the field, and stores nothing.
TEST(JsonlPhaseTimes, AMalformedLineStopsTheImportWhichStoresNothing) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(Store a, Store::open(dir.file("a.db")));
  fill(a);
  const std::vector<std::string> lines = lines_of(export_text(a));
  const nlohmann::json good = nlohmann::json::parse(lines.back());
  ASSERT_EQ(good["type"], "phase_times");
  struct Case {
    const char* field;
    nlohmann::json value;  // null: the field removed
    const char* says;
  };
  const Case cases[] = {{"search_seconds", "slow", "field 'search_seconds' must be a number"},
                        {"store_seconds", -1.0, "field 'store_seconds' must be a number of seconds >= 0"},
                        {"batches", 0, "field 'batches' must be at least 1"},
                        {"batches", nullptr, "field 'batches' is missing"},
                        {"session", 99, "session 99 is not declared on an earlier line"},
                        {"workload_key", "XYZ", "field 'workload_key' must be 32 lowercase hex characters"},
                        {"target", 7, "field 'target' must be a string"}};
  int n = 0;
  for (const Case& c : cases) {
    nlohmann::json bad = good;
    if (c.value.is_null()) {
      bad.erase(c.field);
    } else {
      bad[c.field] = c.value;
    }
    std::vector<std::string> file = lines;
    file.push_back(bad.dump());
    file.push_back(lines[0]);  // a good line after it
    ASSERT_OK_AND_ASSIGN(Store b, Store::open(dir.file("b" + std::to_string(n++) + ".db")));
    std::istringstream in(joined(file));
    auto report = import_jsonl(b, in);
    ASSERT_FALSE(report) << c.says;
    EXPECT_EQ(report.status().code(), ErrorCode::kParseError);
    const std::string expected = "line " + std::to_string(lines.size() + 1) + ": a phase_times line: " + c.says;
    EXPECT_NE(report.status().message().find(expected), std::string::npos) << report.status().message();
    EXPECT_EQ(b.count().value(), 0);
    EXPECT_TRUE(b.workloads().value().empty());
    EXPECT_TRUE(b.sessions().value().empty());
    EXPECT_TRUE(b.phase_times().value().empty());
  }
}

// A stream that cannot seek back (stdin from a pipe) is read twice all the same.
TEST(JsonlPhaseTimes, AStreamThatCannotSeekIsImported) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(Store a, Store::open(dir.file("a.db")));
  fill(a);
  // A streambuf over a string that refuses to seek, as a pipe's does.
  struct Pipe : std::stringbuf {
    explicit Pipe(const std::string& s) : std::stringbuf(s) {}
    pos_type seekoff(off_type, std::ios_base::seekdir, std::ios_base::openmode) override { return pos_type(-1); }
    pos_type seekpos(pos_type, std::ios_base::openmode) override { return pos_type(-1); }
  };
  Pipe pipe(export_text(a));
  std::istream in(&pipe);
  ASSERT_OK_AND_ASSIGN(Store b, Store::open(dir.file("b.db")));
  auto report = import_jsonl(b, in);
  ASSERT_TRUE(report) << report.status().to_string();
  EXPECT_EQ(report->records_added, 4);
  EXPECT_EQ(report->phase_times, 2);
  EXPECT_EQ(b.phase_times().value(), a.phase_times().value());
}

}  // namespace
}  // namespace tessera::records
