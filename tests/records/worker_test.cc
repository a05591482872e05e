// Issue 19, provenance: every record keeps the worker that measured it
// (schema version 6), JSON Lines carry it, and one worker's records can be
// listed and removed.
#include <nlohmann/json.hpp>
#include <sstream>

#include "records/jsonl.h"
#include "records/schema.h"
#include "records/sqlite.h"
#include "records/store.h"
#include "test_util.h"

namespace tessera::records {
namespace {

using testing::key_of;
using testing::kTarget;
using testing::ok_record;
using testing::TempDir;

Record measured_by(const std::string& worker, double cost, int n) {
  Record r = ok_record(key_of(1), kTarget, cost, n);
  r.worker = worker;
  r.worker_key = worker.empty() ? "" : std::string(40, 'K');
  return r;
}

TEST(RecordWorker, Version5DatabaseIsMigratedAndItsRecordsHaveNoWorker) {
  TempDir dir;
  const std::string path = dir.file("v5.db");
  {
    ASSERT_OK_AND_ASSIGN(auto conn, sql::Connection::open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, 1000, {}));
    ASSERT_OK(migrate(conn, 5));
    ASSERT_OK(
        conn.exec("INSERT INTO records (workload, target, space, steps, costs, mean_cost, error_kind, "
                  "build_seconds, run_seconds, timestamp, steps_hash) VALUES ('" +
                  key_of(1) + "', '" + kTarget + "', 'sketch', '[]', '[0.002]', 0.002, 'ok', 1, 1, 1700000000, 0)"));
  }
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(path));
  ASSERT_OK(store.append({measured_by("w1", 0.001, 1)}));
  ASSERT_OK_AND_ASSIGN(auto all, store.list({}));
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].worker, "");
  EXPECT_EQ(all[1].worker, "w1");
  EXPECT_EQ(all[1].worker_key, std::string(40, 'K'));
}

TEST(RecordWorker, ListFiltersByWorkerAndPruneRemovesWhatOneWorkerMeasured) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(dir.file("t.db")));
  ASSERT_OK(store.append({measured_by("honest", 0.002, 1), measured_by("liar", 1e-9, 2), measured_by("liar", 2e-9, 3),
                          measured_by("", 0.003, 4)}));
  RecordFilter liar;
  liar.worker = "liar";
  EXPECT_EQ(store.list(liar).value().size(), 2u);
  EXPECT_EQ(store.count(liar).value(), 2);
  EXPECT_EQ(best_of(store.list({}).value())->worker, "liar");

  PruneOptions prune;
  prune.drop_worker = "liar";
  ASSERT_OK_AND_ASSIGN(PruneReport report, store.prune(prune));
  EXPECT_EQ(report.dropped_worker, 2);
  ASSERT_OK_AND_ASSIGN(auto left, store.list({}));
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(best_of(left)->worker, "honest");
}

TEST(RecordWorker, JsonLinesCarryTheWorkerAndOldLinesImportWithout) {
  TempDir dir;
  ASSERT_OK_AND_ASSIGN(Store a, Store::open(dir.file("a.db")));
  ASSERT_OK(a.append({measured_by("w7", 0.002, 1), measured_by("", 0.003, 2)}));
  std::ostringstream out;
  ASSERT_TRUE(export_jsonl(a, out, {}).is_ok());
  const std::string text = out.str();
  EXPECT_NE(text.find("\"worker\":\"w7\""), std::string::npos) << text;

  ASSERT_OK_AND_ASSIGN(Store b, Store::open(dir.file("b.db")));
  std::istringstream in(text);
  ASSERT_OK_AND_ASSIGN(ImportReport report, import_jsonl(b, in, ImportOptions{}));
  EXPECT_EQ(report.records_added, 2);
  EXPECT_TRUE(report.errors.empty());
  ASSERT_OK_AND_ASSIGN(auto back, b.list({}));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].worker, "w7");
  EXPECT_EQ(back[0].worker_key, std::string(40, 'K'));
  EXPECT_EQ(back[1].worker, "");

  // A line of an export from before workers were kept.
  auto line = nlohmann::json::parse(text.substr(0, text.find('\n')));
  if (line["type"] != "record") {
    std::istringstream lines(text);
    std::string l;
    while (std::getline(lines, l))
      if (nlohmann::json::parse(l)["type"] == "record") {
        line = nlohmann::json::parse(l);
        break;
      }
  }
  line.erase("worker");
  line.erase("worker_key");
  line["costs"] = {0.5};
  line.erase("mean_cost");
  ASSERT_OK_AND_ASSIGN(Store c, Store::open(dir.file("c.db")));
  std::istringstream old(line.dump() + "\n");
  ASSERT_OK_AND_ASSIGN(ImportReport old_report, import_jsonl(c, old, ImportOptions{}));
  EXPECT_EQ(old_report.records_added, 1) << (old_report.errors.empty() ? "" : old_report.errors[0].message);
  EXPECT_EQ(c.list({}).value()[0].worker, "");
}

}  // namespace
}  // namespace tessera::records
