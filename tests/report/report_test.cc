// The HTML report's content, read back as text: sections, anchors, escaping,
// figures that match the records, sampling of large tasks, and the errors of
// bad input (report/report.h).
#include "report/report.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "compiler/schedule/step.h"
#include "report/plot.h"
#include "tests/records/test_util.h"

namespace tessera::report {
namespace {

using records::testing::key_of;
using records::testing::TempDir;

constexpr const char* kTarget = "llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512 -num-cores=2";
constexpr const char* kHostile = "<script>alert(\"x\")</script> & \"quoted\"";

records::Record record(const std::string& key, std::vector<double> costs, const std::string& error = "ok") {
  records::Record r;
  r.workload_key = key;
  r.target = kTarget;
  r.steps_json = "[{\"kind\":\"split\",\"factors\":[" + std::to_string(costs.empty() ? 0 : costs[0] * 1e6) + "]}]";
  r.costs = std::move(costs);
  r.error_kind = error;
  r.build_seconds = 0.5;
  r.run_seconds = 0.25;
  r.timestamp = 1.7e9;
  return r;
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Two workloads: key 1 (a matmul of 2 GFLOP, three ok records and two errors,
// one with a hostile message) and key 2 (unregistered, one ok record).
class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = records::Store::open(db());
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    ASSERT_TRUE(store->add_workload({key_of(1), "", "matmul", std::string("1024x1024 ") + kHostile, 2e9}));
    records::SessionInfo s;
    s.command_line = std::string("tessera tune ") + kHostile;
    s.host = "host<b>";
    s.started = 1.7e9 - 10;
    auto id = store->begin_session(s);
    ASSERT_TRUE(id.is_ok());
    std::vector<records::Record> batch = {
        record(key_of(1), {0.02}), record(key_of(1), {0.01, 0.01}),        record(key_of(1), {}, "crash"),
        record(key_of(1), {0.04}), record(key_of(1), {}, "build-timeout"), record(key_of(2), {0.001})};
    batch[2].error_message = kHostile;
    batch[1].worker = std::string("worker-") + kHostile;
    for (auto& r : batch) r.session_id = *id;
    ASSERT_TRUE(store->append(batch));
    ASSERT_TRUE(store->end_session(*id, 1.7e9 + 5));
  }
  std::string db() const { return dir_.file("t.db"); }
  std::string render(const ReportOptions& options) {
    const std::string out = dir_.file("r.html");
    Status st = write_report(db(), options, out);
    EXPECT_TRUE(st) << st.to_string();
    return read(out);
  }
  TempDir dir_;
};

TEST_F(ReportTest, EverySectionIsThereWithAnAnchorPerWorkloadKey) {
  const std::string html = render({});
  for (const char* id : {"summary", "time", "workers", "tasks", "best"})
    EXPECT_NE(html.find("id=\"" + std::string(id) + "\""), std::string::npos) << id;
  EXPECT_EQ(html.find("id=\"model\""), std::string::npos) << "no model was given";
  EXPECT_EQ(count(html, "id=\"" + key_of(1) + "\""), 1u);
  EXPECT_EQ(count(html, "id=\"" + key_of(2) + "\""), 1u);
  EXPECT_EQ(count(html, "<svg"), 1u) << "a plot for key 1 (5 trials), a row for key 2 (1 trial)";
  EXPECT_NE(html.find("<tr id=\"task-"), std::string::npos) << "key 2's row, with its plot's anchor";
  EXPECT_EQ(html.rfind("</html>\n"), html.size() - 8);
}

// A best kernel's row fits the page: the key's first digits and the
// target's short name, each whole in a tooltip, and the steps as a person
// reads them.
TEST_F(ReportTest, ABestKernelsRowIsShortAndItsStepsReadable) {
  auto store = records::Store::open(db());
  ASSERT_TRUE(store.is_ok());
  records::Record fast = record(key_of(1), {0.001});
  fast.steps_json = steps_to_json({SplitStep{0, 1, {32, 4}, 0}, AnnotateStep{0, 2, IterAnnotation::kVectorize}});
  ASSERT_TRUE(store->append({fast}));
  const std::string html = render({});
  const size_t row = html.find("<tr id=\"" + key_of(1) + "\"");
  ASSERT_NE(row, std::string::npos);
  const std::string best = html.substr(row, html.find("</tr>", row) - row);
  EXPECT_NE(best.find("<td><code title=\"" + key_of(1) + "\">" + key_of(1).substr(0, 12) + "</code></td>"),
            std::string::npos)
      << best;
  EXPECT_NE(best.find(std::string("<td><span title=\"") + kTarget + "\">x86_64 skylake-avx512, 2 cores</span></td>"),
            std::string::npos)
      << best;
  EXPECT_NE(best.find("split(stage=0, iter=1, factors=[32, 4])\nannotate(stage=0, iter=2, vectorize)\n"),
            std::string::npos)
      << best;
  // The summary names the targets the same way.
  const size_t summary = html.find("<section id=\"summary\">");
  ASSERT_NE(summary, std::string::npos);
  EXPECT_NE(html.substr(summary, html.find("</section>", summary) - summary)
                .find(std::string("<th>targets</th><td><span title=\"") + kTarget +
                      "\">x86_64 skylake-avx512, 2 cores</span></td>"),
            std::string::npos);
}

TEST_F(ReportTest, EscapesEverythingFromTheDatabase) {
  ReportOptions o;
  o.model = ModelInfo{std::string("model") + kHostile, {{key_of(1), std::string("conv ") + kHostile, 2, 0}}};
  const std::string html = render(o);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_EQ(html.find("\"quoted\""), std::string::npos);
  EXPECT_EQ(html.find("host<b>"), std::string::npos);
  EXPECT_EQ(html.find(" & "), std::string::npos);
  // Shapes, the error message, the worker, the session's command, the model's names: each escaped.
  const std::string escaped = escape_html(kHostile);
  EXPECT_EQ(escaped, "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &quot;quoted&quot;");
  EXPECT_GE(count(html, escaped), 6u) << html;
  // Only the page's own two scripts.
  EXPECT_EQ(count(html, "<script>"), 2u);
}

TEST_F(ReportTest, FiguresMatchTheRecords) {
  ReportOptions o;
  o.peak_gflops = 400;
  const std::string html = render(o);
  // Key 1's best: the 0.01 s record (record id 2) at trial 2, 2e9 flops -> 200 GFLOP/s, 50% of 400.
  const size_t row = html.find("<tr id=\"" + key_of(1) + "\"");
  ASSERT_NE(row, std::string::npos);
  const std::string best = html.substr(row, html.find("</tr>", row) - row);
  EXPECT_NE(best.find("<td>2</td><td>2</td>"), std::string::npos) << best;  // record 2, found at trial 2
  EXPECT_NE(best.find(">10.00</td>"), std::string::npos) << best;           // ms
  EXPECT_NE(best.find("<td>200.0</td>"), std::string::npos) << best;
  EXPECT_NE(best.find("<td>50.0%</td>"), std::string::npos) << best;
  EXPECT_NE(best.find("{&quot;factors&quot;:[10000.0],&quot;kind&quot;:&quot;split&quot;}"), std::string::npos)
      << "steps this build cannot read (a split without its stage) stay JSON, one per line, canonical: " << best;
  // Key 2 (one trial, no flops): a row of the few-trial table, no GFLOP/s.
  const size_t few = html.find("<table class=\"few\">");
  ASSERT_NE(few, std::string::npos);
  const std::string table = html.substr(few, html.find("</table>", few) - few);
  EXPECT_NE(table.find("<td>1</td><td>0</td><td>1</td><td>1.000</td><td>-</td><td>-</td>"), std::string::npos)
      << table;  // 1 trial, 0 baselines, 1 ok, 1 ms, no GFLOP/s, no errors
  EXPECT_NE(table.find("href=\"#" + key_of(2) + "\""), std::string::npos) << table;
  EXPECT_EQ(table.find("href=\"#" + key_of(1) + "\""), std::string::npos) << "key 1 has 5 trials: a plot";
  // Errors by kind, with counts, and the trials of key 1 (5, all stored).
  EXPECT_NE(html.find("1 × <b>crash</b>"), std::string::npos);
  EXPECT_NE(html.find("1 × <b>build-timeout</b>"), std::string::npos);
  EXPECT_NE(html.find("5 trials, 3 ok"), std::string::npos);
  // Where the time went: 6 records x 0.5 s build, x 0.25 s measure; wall 15 s.
  EXPECT_NE(html.find(">3.00 s</td>"), std::string::npos);
  EXPECT_NE(html.find(">1.50 s</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>15.0 s</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"unknown\">unknown</td>"), std::string::npos) << "search and store are not stored";
}

// The report counts trials as tune does: the unscheduled default and the
// baseline (space "manual") are counted apart, before trial 1.
TEST_F(ReportTest, BaselinesAreCountedApartFromTrials) {
  {
    auto store = records::Store::open(db());
    ASSERT_TRUE(store.is_ok());
    records::Record untuned = record(key_of(1), {0.5}), baseline = record(key_of(1), {0.2});
    untuned.steps_json = "[]";
    baseline.space = records::SpaceKind::kManual;
    ASSERT_TRUE(store->append({untuned, baseline}));
  }
  const std::string html = render(ReportOptions{});
  // Key 1: 5 trials (3 ok, 2 errors) before, and two ok baselines now.
  EXPECT_NE(html.find("5 trials and 2 baselines, 5 ok"), std::string::npos) << html;
}

TEST_F(ReportTest, PhaseTimesOfASessionAreShownWhereStored) {
  {
    auto store = records::Store::open(db());
    ASSERT_TRUE(store.is_ok());
    ASSERT_TRUE(store->add_phase_times({1, key_of(1), kTarget, 2, 4, 12, 0.5, 0}));
    ASSERT_TRUE(store->add_phase_times({1, key_of(2), kTarget, 1, 1, 3, 0.25, 0}));
  }
  const std::string html = render({});
  // search 3 s, build 5 s, measure 15 s, store 0.75 s over both tasks.
  EXPECT_NE(html.find("<td data-v=\"3.00000\">3.00 s</td><td data-v=\"5.00000\">5.00 s</td>"
                      "<td data-v=\"15.0000\">15.0 s</td><td data-v=\"0.750000\">0.750 s</td>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<svg class=\"bar\""), std::string::npos);
  EXPECT_EQ(html.find("<td class=\"unknown\">unknown</td>"), std::string::npos) << "every phase known";
}

TEST_F(ReportTest, PeakUnknownUnlessGiven) {
  const std::string html = render({});
  EXPECT_NE(html.find("peak unknown"), std::string::npos);
  EXPECT_FALSE(std::regex_search(html, std::regex("[0-9]% of peak|[0-9]%</td>"))) << "no percentage of a peak";
}

TEST_F(ReportTest, ModelSectionSortsByShareAndNamesTasksWithoutRecords) {
  ReportOptions o;
  o.ort_ms = 25;
  // Key 1 called 3 times (3 x 10 ms), key 2 once (1 ms), key 3 has no records.
  o.model = ModelInfo{"m.onnx", {{key_of(2), "small", 1, 0}, {key_of(1), "big", 3, 0}, {key_of(3), "absent", 1, 0}}};
  std::string html = render(o);
  ASSERT_NE(html.find("id=\"model\""), std::string::npos);
  EXPECT_NE(html.find("1 of its 3 kernels have no records"), std::string::npos);
  EXPECT_NE(html.find("no records of this task in the database"), std::string::npos);
  EXPECT_LT(html.find(">big</a>"), html.find(">small</a>")) << "by share of the model's time";
  EXPECT_NE(html.find("96.8%"), std::string::npos) << "30 ms of 31";
  EXPECT_NE(html.find("id=\"" + key_of(3) + "\""), std::string::npos) << "an anchor for the missing task too";
  // Without the missing kernel the estimated latency is 31 ms, with ORT's line.
  o.model->kernels.pop_back();
  html = render(o);
  EXPECT_NE(html.find("now <b>31.00 ms</b>"), std::string::npos);
  EXPECT_EQ(count(html, "class=\"hline\""), 2u) << "ONNX Runtime on both model plots";
}

// Estimates against estimates: the tuned estimate beside the untuned
// compile's, Σ calls × the baseline compile takes (the manual schedule, else
// the unscheduled default); ONNX Runtime's time is called a measurement.
TEST_F(ReportTest, TheModelsEstimateIsComparedWithTheUntunedCompilesEstimate) {
  ReportOptions o;
  o.ort_ms = 25;
  o.model = ModelInfo{"m.onnx", {{key_of(2), "small", 1, 0}, {key_of(1), "big", 3, 0}}};
  std::string html = render(o);
  EXPECT_EQ(html.find("untuned compile"), std::string::npos) << "no baselines measured: no untuned estimate";
  {
    auto store = records::Store::open(db());
    ASSERT_TRUE(store.is_ok());
    records::Record default1 = record(key_of(1), {0.5}), manual1 = record(key_of(1), {0.2});
    records::Record default2 = record(key_of(2), {0.004});
    default1.steps_json = default2.steps_json = "[]";
    manual1.space = records::SpaceKind::kManual;
    ASSERT_TRUE(store->append({default1, manual1, default2}));
  }
  html = render(o);
  // Tuned: 3 x 10 ms + 1 ms = 31 ms. Untuned: 3 x 200 ms (the manual
  // schedule, not the 500 ms default) + 4 ms (key 2 has only its default).
  EXPECT_NE(html.find("now <b>31.00 ms</b> after 6 trials, against 604.0 ms estimated the same way for an untuned "
                      "compile (19.5×); ONNX Runtime measured 25.00 ms for the whole model."),
            std::string::npos)
      << html.substr(html.find("id=\"model\""), 1500);
  EXPECT_EQ(count(html, "class=\"hline\""), 4u) << "the untuned estimate and ONNX Runtime on both plots";
  EXPECT_NE(html.find("untuned compile (estimated)"), std::string::npos);
  EXPECT_NE(html.find("ONNX Runtime (measured)"), std::string::npos);
}

TEST(ReportSampling, LargeTaskKeepsEveryBestStepAndSamplesTheRest) {
  TempDir dir;
  {
    auto store = records::Store::open(dir.file("big.db"));
    ASSERT_TRUE(store.is_ok());
    ASSERT_TRUE(store->add_workload({key_of(7), "", "matmul", "", 1e9}));
    std::vector<records::Record> batch;
    for (int i = 0; i < 5000; ++i) batch.push_back(record(key_of(7), {i % 500 == 0 ? 1.0 / (i + 1) : 2.0 + (i % 7)}));
    ASSERT_TRUE(store->append(batch));
  }
  ReportOptions o;
  o.max_dots = 100;
  ASSERT_TRUE(write_report(dir.file("big.db"), o, dir.file("big.html")));
  const std::string html = read(dir.file("big.html"));
  EXPECT_NE(html.find("100 of 5000 measurements drawn"), std::string::npos);
  std::smatch steps;
  ASSERT_TRUE(std::regex_search(html, steps, std::regex("class=\"steps\" d=\"([^\"]*)\"")));
  EXPECT_EQ(count(steps[1], "V"), 9u) << "10 improvements: a start and 9 steps down";
}

TEST(ReportErrors, MissingCorruptAndEmptyDatabases) {
  TempDir dir;
  const std::string out = dir.file("r.html");
  EXPECT_EQ(write_report(dir.file("none.db"), {}, out).code(), ErrorCode::kNotFound);
  std::ofstream(dir.file("junk.db")) << "this is not SQLite, just text that is long enough to be read as a header";
  EXPECT_EQ(write_report(dir.file("junk.db"), {}, out).code(), ErrorCode::kDatabaseError);
  ASSERT_TRUE(records::Store::open(dir.file("empty.db")).is_ok());
  Status empty = write_report(dir.file("empty.db"), {}, out);
  EXPECT_EQ(empty.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(empty.message().find("no records"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(out)) << "nothing written on an error";
}

TEST_F(ReportTest, UnwritableOutputLeavesTheOldFileWhole) {
  EXPECT_EQ(write_report(db(), {}, dir_.file("no/such/dir/r.html")).code(), ErrorCode::kIOError);
  const std::string ro = dir_.file("ro");
  ASSERT_EQ(::mkdir(ro.c_str(), 0755), 0);
  std::ofstream(ro + "/r.html") << "old report";
  ASSERT_EQ(::chmod(ro.c_str(), 0555), 0);
  if (::geteuid() != 0) {  // root writes anywhere
    EXPECT_EQ(write_report(db(), {}, ro + "/r.html").code(), ErrorCode::kIOError);
    EXPECT_EQ(read(ro + "/r.html"), "old report");
  }
  ::chmod(ro.c_str(), 0755);
  // A directory in the output's place: the rename fails, no temporary file is left.
  ASSERT_EQ(::mkdir(dir_.file("taken").c_str(), 0755), 0);
  EXPECT_EQ(write_report(db(), {}, dir_.file("taken")).code(), ErrorCode::kIOError);
  for (const auto& e : std::filesystem::directory_iterator(dir_.path()))
    EXPECT_NE(e.path().filename().string().rfind(".taken.", 0), 0u) << "a temporary left behind: " << e.path();
}

TEST(ReportOptionsCheck, OutOfRangeOptionsAreUserErrors) {
  TempDir dir;
  auto store = records::Store::open(dir.file("o.db"));
  ASSERT_TRUE(store.is_ok());
  ReportOptions o;
  o.max_dots = 0;
  EXPECT_EQ(render_report(*store, o).status().code(), ErrorCode::kInvalidArgument);
  o.max_dots = 10;
  o.peak_gflops = -1;
  EXPECT_EQ(render_report(*store, o).status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::report
