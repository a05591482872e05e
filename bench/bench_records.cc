// The records store: how fast a tuner can append results, and how fast the
// compiler can ask for the best record of a task in a large database.
//
//   build/bin/bench_records
//
// Baselines in the same run: raw SQLite inserts of the same rows (the cost of
// the Store's checks and JSON canonicalization), and best-k without its index.
#include <benchmark/benchmark.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "bench/records_fixture.h"
#include "records/store.h"

namespace tessera::records {
namespace {

constexpr int kWorkloads = 1000;
constexpr int kRecords1M = 1'000'000;
const std::string kTarget = "llvm -mtriple=x86_64-linux-gnu -mcpu=icelake-server";

using bench::check;
using bench::key_of;

// A record shaped like a sketch-space result: ~10 steps (~500 bytes of JSON),
// three repeats; one in ten failed.
Record make_record(int workload, int n, std::minstd_rand& rng) {
  Record r;
  r.workload_key = key_of(workload);
  r.target = kTarget;
  r.device_key = "x86-icelake";
  r.space = SpaceKind::kSketch;
  std::string steps = "[";
  for (int s = 0; s < 10; ++s) {
    steps += (s ? "," : "");
    steps += R"({"axis":)" + std::to_string(s % 4) + R"(,"factors":[)" + std::to_string(n % 64 + 1) + "," +
             std::to_string(rng() % 32 + 1) + R"(],"kind":"split","stage":"C.local"})";
  }
  r.steps_json = steps + "]";
  if (n % 10 == 9) {
    r.error_kind = "run-timeout";
    r.error_message = "exceeded 10 s";
  } else {
    double base = 1e-4 * (1 + rng() % 1000);
    r.costs = {base, base * 1.01, base * 0.99};
  }
  r.build_seconds = 0.8;
  r.run_seconds = 0.05;
  r.timestamp = 1'700'000'000.0 + n;
  return r;
}

// A tuner's measurement round: `size` records of one task (workload `first /
// size`, rotating over kWorkloads), or with `scattered` one record per workload
// in turn (an import of a mixed file: the worst case for the indexes).
std::vector<Record> make_batch(int size, int first, std::minstd_rand& rng, bool scattered = false) {
  std::vector<Record> batch;
  for (int i = 0; i < size; ++i) {
    int workload = scattered ? (first + i) % kWorkloads : (first / size) % kWorkloads;
    batch.push_back(make_record(workload, first + i, rng));
  }
  return batch;
}

// Appends batches of `state.range(0)` records to a fresh database.
void BM_Records_Insert(benchmark::State& state, const std::string& dir) {
  const std::string path = dir + "/insert.db";
  std::filesystem::remove(path);
  auto store = Store::open(path);
  check(store.status(), "open");
  std::minstd_rand rng(1);
  const int batch_size = static_cast<int>(state.range(0));
  const bool scattered = state.range(1) != 0;
  int next = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<Record> batch = make_batch(batch_size, next, rng, scattered);
    next += batch_size;
    state.ResumeTiming();
    check(store->append(batch), "append");
  }
  state.counters["records_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * batch_size, benchmark::Counter::kIsRate);
}

// The same rows through one cached INSERT on a raw connection with the same
// pragmas: no validation, no canonical JSON, no retry wrapper.
void BM_Records_InsertRawSqlite(benchmark::State& state, const std::string& dir) {
  const std::string path = dir + "/raw.db";
  std::filesystem::remove(path);
  check(Store::open(path).status(), "create");  // the same schema and WAL mode
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_exec(db, "PRAGMA synchronous = FULL", nullptr, nullptr, nullptr);
  sqlite3_stmt* insert = nullptr;
  sqlite3_prepare_v2(db,
                     "INSERT INTO records (workload, target, device_key, space, steps, knob_config, "
                     "costs, mean_cost, error_kind, error_message, build_seconds, run_seconds, "
                     "timestamp, session_id, steps_hash) VALUES (?,?,?,?,?,NULL,?,?,?,?,?,?,?,NULL,?)",
                     -1, &insert, nullptr);
  std::minstd_rand rng(1);
  const int batch_size = static_cast<int>(state.range(0));
  const bool scattered = state.range(1) != 0;
  int next = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<Record> batch = make_batch(batch_size, next, rng, scattered);
    std::vector<std::string> costs;
    for (const Record& r : batch) {
      std::string c = "[";
      for (double v : r.costs) {
        if (c.size() > 1) c += ',';
        c += std::to_string(v);
      }
      costs.push_back(c + "]");
    }
    next += batch_size;
    state.ResumeTiming();
    sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
    for (size_t i = 0; i < batch.size(); ++i) {
      const Record& r = batch[i];
      sqlite3_bind_text(insert, 1, r.workload_key.c_str(), -1, SQLITE_STATIC);
      sqlite3_bind_text(insert, 2, r.target.c_str(), -1, SQLITE_STATIC);
      sqlite3_bind_text(insert, 3, r.device_key.c_str(), -1, SQLITE_STATIC);
      sqlite3_bind_text(insert, 4, "sketch", -1, SQLITE_STATIC);
      sqlite3_bind_text(insert, 5, r.steps_json.c_str(), -1, SQLITE_STATIC);
      sqlite3_bind_text(insert, 6, costs[i].c_str(), -1, SQLITE_STATIC);
      if (r.costs.empty())
        sqlite3_bind_null(insert, 7);
      else
        sqlite3_bind_double(insert, 7, r.mean_cost());
      sqlite3_bind_text(insert, 8, r.error_kind.c_str(), -1, SQLITE_STATIC);
      sqlite3_bind_text(insert, 9, r.error_message.c_str(), -1, SQLITE_STATIC);
      sqlite3_bind_double(insert, 10, r.build_seconds);
      sqlite3_bind_double(insert, 11, r.run_seconds);
      sqlite3_bind_double(insert, 12, r.timestamp);
      sqlite3_bind_int64(insert, 13, steps_hash(r.steps_json));
      if (sqlite3_step(insert) != SQLITE_DONE)
        check(Status(ErrorCode::kDatabaseError, sqlite3_errmsg(db)), "raw insert");
      sqlite3_reset(insert);
    }
    sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  }
  sqlite3_finalize(insert);
  sqlite3_close(db);
  state.counters["records_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * batch_size, benchmark::Counter::kIsRate);
}

// Fills `path` with 1,000,000 records over kWorkloads workloads.
void build_1m(const std::string& path) {
  auto start = std::chrono::steady_clock::now();
  auto store = Store::open(path);
  check(store.status(), "open");
  std::minstd_rand rng(7);
  constexpr int kBatch = 1000;  // one task's records per batch
  for (int first = 0; first < kRecords1M; first += kBatch) check(store->append(make_batch(kBatch, first, rng)), "fill");
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "filled %d records over %d workloads in %.1f s\n", kRecords1M, kWorkloads, s);
}

// best_k(k = state.range(0)) of a random workload in the 1M-record database.
void BM_Records_BestK1M(benchmark::State& state, const std::string& path) {
  OpenOptions read_only;
  read_only.read_only = true;
  auto store = Store::open(path, read_only);
  check(store.status(), "open");
  std::minstd_rand rng(3);
  const int64_t k = state.range(0);
  double total_ms = 0;
  for (auto _ : state) {
    std::string key = key_of(static_cast<int>(rng() % kWorkloads));
    auto start = std::chrono::steady_clock::now();
    auto best = store->best_k(key, kTarget, k);
    total_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!best || static_cast<int64_t>(best->size()) != k) check(best.status(), "best_k returned too few");
    benchmark::DoNotOptimize(best);
  }
  state.counters["query_ms"] = total_ms / static_cast<double>(state.iterations());
}

// The same query forced to scan the table: what the partial index buys.
void BM_Records_BestK1MNoIndex(benchmark::State& state, const std::string& path) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* query = nullptr;
  sqlite3_prepare_v2(db,
                     "SELECT id, steps, costs FROM records NOT INDEXED WHERE workload = ?1 AND "
                     "target = ?2 AND error_kind = 'ok' ORDER BY mean_cost, id LIMIT ?3",
                     -1, &query, nullptr);
  std::minstd_rand rng(3);
  double total_ms = 0;
  for (auto _ : state) {
    std::string key = key_of(static_cast<int>(rng() % kWorkloads));
    auto start = std::chrono::steady_clock::now();
    sqlite3_bind_text(query, 1, key.c_str(), -1, SQLITE_STATIC);
    sqlite3_bind_text(query, 2, kTarget.c_str(), -1, SQLITE_STATIC);
    sqlite3_bind_int64(query, 3, state.range(0));
    int rows = 0;
    while (sqlite3_step(query) == SQLITE_ROW) ++rows;
    sqlite3_reset(query);
    total_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    benchmark::DoNotOptimize(rows);
  }
  sqlite3_finalize(query);
  sqlite3_close(db);
  state.counters["query_ms"] = total_ms / static_cast<double>(state.iterations());
}

}  // namespace
}  // namespace tessera::records

int main(int argc, char** argv) {
  using namespace tessera::records;
  benchmark::Initialize(&argc, argv);
  std::string pattern = (std::filesystem::temp_directory_path() / "tessera-bench-records-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) return 1;
  const std::string dir = pattern, big = dir + "/1m.db";
  // Args: batch size, scattered (0: one task per batch, as a tuner appends).
  for (auto args : std::vector<std::vector<int64_t>>{{64, 0}, {1000, 0}, {1000, 1}}) {
    benchmark::RegisterBenchmark("BM_Records_Insert", BM_Records_Insert, dir)
        ->Args(args)
        ->ArgNames({"batch", "scattered"})
        ->UseRealTime();
    benchmark::RegisterBenchmark("BM_Records_InsertRawSqlite", BM_Records_InsertRawSqlite, dir)
        ->Args(args)
        ->ArgNames({"batch", "scattered"})
        ->UseRealTime();
  }
  // The 1M-record database is built only when a best-k benchmark will run.
  bool built = false;
  auto ensure_built = [&] {
    if (!built) build_1m(big);
    built = true;
  };
  for (int k : {1, 10}) {
    benchmark::RegisterBenchmark("BM_Records_BestK1M",
                                 [&](benchmark::State& s) {
                                   ensure_built();
                                   BM_Records_BestK1M(s, big);
                                 })
        ->Arg(k)
        ->UseRealTime();
  }
  benchmark::RegisterBenchmark("BM_Records_BestK1MNoIndex",
                               [&](benchmark::State& s) {
                                 ensure_built();
                                 BM_Records_BestK1MNoIndex(s, big);
                               })
      ->Arg(10)
      ->Iterations(5)
      ->UseRealTime();
  tessera::bench::add_machine_context();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::filesystem::remove_all(dir);
  return 0;
}
