// `tessera report` on a large database: 100 tasks x 1,000 records (100,000),
// generated through the records API, reported with and without a model of
// those 100 kernels. Goal: <= 2 s to write the page.
//
//   build/bin/bench_report --benchmark_counters_tabular=true
//
// Baseline in the same run: reading the same records through Store::for_each
// alone (what any report must pay), so the rendering's own cost is the difference.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "bench/records_fixture.h"
#include "records/store.h"
#include "report/report.h"

namespace tessera::report {
namespace {

constexpr int kTasks = 100;
constexpr int kRecordsPerTask = 1000;
const std::string kTarget = "llvm -mtriple=x86_64-linux-gnu -mcpu=icelake-server -num-cores=2";

using bench::check;
using bench::key_of;

// A temporary folder with the database, made once per process.
struct Database {
  std::string dir, path;
  Database() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tessera-bench-report-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) std::exit(1);
    dir = pattern;
    path = dir + "/big.db";
    auto store = records::Store::open(path);
    check(store.status(), "open");
    std::minstd_rand rng(7);
    auto s = store->begin_session({0, "tessera tune (synthetic)", "bench", "bench", "19", 7, 1.7e9, {}});
    check(s.status(), "session");
    for (int t = 0; t < kTasks; ++t) {
      check(store->add_workload(
                {key_of(t), "", "conv2d", "1x64x56x56 64x64x3x3 -> 1x64x56x56 float32", 2.0 * 64 * 56 * 56 * 64 * 9}),
            "workload");
      // A sketch-like record: ~10 steps, three repeats, one in ten failed,
      // costs drifting down as a search would find faster schedules.
      std::vector<records::Record> batch;
      for (int i = 0; i < kRecordsPerTask; ++i) {
        records::Record r;
        r.workload_key = key_of(t);
        r.target = kTarget;
        r.session_id = *s;
        r.worker = "local-" + std::to_string(i % 2);
        std::string steps = "[";
        for (int k = 0; k < 10; ++k)
          steps += (k ? "," : "") + std::string(R"({"axis":)") + std::to_string(k % 4) + R"(,"factors":[)" +
                   std::to_string(i % 64 + 1) + "," + std::to_string(rng() % 32 + 1) + R"(],"kind":"split"})";
        r.steps_json = steps + "]";
        if (i % 10 == 9) {
          r.error_kind = i % 20 == 9 ? "run-timeout" : "invalid-schedule";
          r.error_message = "exceeded 10 s";
        } else {
          const double c = 1e-3 * (1 + 5.0 / (1 + i / 50.0)) * (1 + (rng() % 1000) / 1000.0);
          r.costs = {c, c * 1.01, c * 0.99};
        }
        r.build_seconds = 0.2;
        r.run_seconds = 0.1;
        r.timestamp = 1.7e9 + t * kRecordsPerTask + i;
        batch.push_back(std::move(r));
      }
      check(store->append(batch), "append");
    }
    check(store->end_session(*s, 1.7e9 + kTasks * kRecordsPerTask), "end");
  }
  ~Database() { std::filesystem::remove_all(dir); }
};

Database& database() {
  static Database db;
  return db;
}

void BM_Report_ReadRecords100k(benchmark::State& state) {
  const std::string& path = database().path;
  for (auto _ : state) {
    records::OpenOptions o;
    o.read_only = true;
    auto store = records::Store::open(path, o);
    check(store.status(), "open");
    int64_t n = 0;
    check(store->for_each({},
                          [&](const records::Record&) {
                            ++n;
                            return Status::ok();
                          }),
          "read");
    benchmark::DoNotOptimize(n);
  }
  state.counters["records"] = kTasks * kRecordsPerTask;
  state.counters["seconds"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// arg 0: the database alone; arg 1: with a model whose kernels are its 100 tasks.
void BM_Report_Write100k(benchmark::State& state) {
  const Database& db = database();
  ReportOptions options;
  options.db_label = db.path;
  if (state.range(0)) {
    ModelInfo model{"synthetic.onnx", {}};
    for (int t = 0; t < kTasks; ++t) model.kernels.push_back({key_of(t), "conv " + std::to_string(t), 1.0 + t % 3, 0});
    options.model = model;
    options.ort_ms = 9;
  }
  const std::string out = db.dir + "/report.html";
  for (auto _ : state) check(write_report(db.path, options, out), "report");
  state.counters["records"] = kTasks * kRecordsPerTask;
  state.counters["seconds"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["html_MB"] = static_cast<double>(std::filesystem::file_size(out)) / 1e6;
}

BENCHMARK(BM_Report_ReadRecords100k)->Unit(benchmark::kMillisecond)->MinTime(2)->UseRealTime();
BENCHMARK(BM_Report_Write100k)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->MinTime(2)->UseRealTime();

}  // namespace
}  // namespace tessera::report
TESSERA_BENCHMARK_MAIN()
