// The report of a real tuning run opened in headless Chromium: the page's
// script runs to its end (it marks <body> when it does, and window.onerror
// writes any error into the page), every section is there and every plot
// drew. Skipped where Chromium is not installed. Two runs: a short tuning of
// one conv made here, and the records of a 1,000-trial tuning of the demo's
// ResNet-18 (tests/report/testdata/resnet18_1000.jsonl.gz, made by
// scripts/report_fixture.sh) imported into a new database.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "bench/ort_peer.h"
#include "tests/records/test_util.h"
#include "tests/tools/command.h"

namespace tessera::report {
namespace {

namespace fs = std::filesystem;
using records::testing::read_bytes;
using records::testing::TempDir;
using test::Output;
using test::shell;
using test::tessera;

const fs::path kConvModel = "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding/model.onnx";

// Debian's `chromium` (or Google's), the first on PATH; empty when there is none.
std::string find_chromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    Output which = shell(std::string("command -v ") + name);
    if (which.code == 0 && !which.text.empty()) return which.text.substr(0, which.text.find('\n'));
  }
  return "";
}

// The DOM after the page's scripts ran, as Chromium prints it.
std::string dump_dom(const std::string& chromium, const TempDir& dir, const std::string& page,
                     const std::string& flags = "") {
  // Chromium's own log (dbus, GPU) goes to stderr: dropped, only the DOM is read.
  Output out = shell("(timeout 60 " + chromium + " --headless --disable-gpu --no-sandbox --user-data-dir=" +
                     dir.file("profile") + " " + flags + " --dump-dom file://" + page + " 2>/dev/null)");
  EXPECT_EQ(out.code, 0) << out.text.substr(0, 2000);
  return out.text;
}

// The attributes of the page's <body> (where the script notes what rendered).
std::string body_attributes(const std::string& dom) {
  std::smatch body;
  if (!std::regex_search(dom, body, std::regex("<body([^>]*)>"))) return "no <body>";
  return body[1];
}

// One tuned database for the suite: a real `tessera tune` of a small conv model.
class ReportInBrowser : public ::testing::Test {
 protected:
  // A failure here is reported by each test (a fatal failure in
  // SetUpTestSuite would show as a skip).
  static void SetUpTestSuite() {
    chromium_ = find_chromium();
    if (chromium_.empty() || !fs::exists(kConvModel)) return;
    dir_ = new TempDir;
    Output tune = tessera("tune " + kConvModel.string() + " --trials 24 --batch 8 --db " + dir_->file("t.db"));
    if (tune.code != 0) {
      setup_error_ = "tune failed:\n" + tune.text;
      return;
    }
    Output report = tessera("report " + kConvModel.string() + " --db " + dir_->file("t.db") +
                            " --ort-ms 0.05 --peak-gflops 100 -o " + dir_->file("report.html"));
    if (report.code != 0) setup_error_ = "report failed:\n" + report.text;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (chromium_.empty())
      GTEST_SKIP() << "chromium is not installed (no chromium, chromium-browser or google-chrome on PATH)";
    if (!fs::exists(kConvModel)) GTEST_SKIP() << "libonnx-testdata is not installed";
    ASSERT_TRUE(setup_error_.empty()) << setup_error_;
    ASSERT_NE(dir_, nullptr);
  }
  static std::string setup_error_;
  static std::string chromium_;
  static TempDir* dir_;
};
std::string ReportInBrowser::chromium_;
std::string ReportInBrowser::setup_error_;
TempDir* ReportInBrowser::dir_ = nullptr;

TEST_F(ReportInBrowser, EverySectionRendersWithoutAScriptError) {
  const std::string dom = dump_dom(chromium_, *dir_, dir_->file("report.html"));
  const std::string attrs = body_attributes(dom);
  EXPECT_NE(attrs.find("data-report-ready=\"1\""), std::string::npos) << "the script did not run to its end: " << attrs;
  EXPECT_NE(attrs.find("data-sections=\"summary model time workers tasks best\""), std::string::npos) << attrs;
  std::smatch plots;
  ASSERT_TRUE(std::regex_search(attrs, plots, std::regex("data-plots=\"(\\d+) (\\d+)\""))) << attrs;
  EXPECT_EQ(plots[1], plots[2]) << "every plot has a non-empty drawing";
  EXPECT_EQ(std::stoi(plots[1]), 3) << "two model plots and one task plot";
  EXPECT_FALSE(std::regex_search(dom, std::regex("<html[^>]* data-script-error"))) << dom.substr(0, 1500);
  EXPECT_NE(dom.find("<pre id=\"script-errors\"></pre>"), std::string::npos);
}

TEST_F(ReportInBrowser, TheTunersPhaseTimesAreInTheReport) {
  const std::string html = read_bytes(dir_->file("report.html"));
  const size_t time = html.find("<section id=\"time\">");
  ASSERT_NE(time, std::string::npos);
  const std::string section = html.substr(time, html.find("</section>", time) - time);
  EXPECT_NE(section.find("<svg class=\"bar\""), std::string::npos) << section;
  EXPECT_EQ(section.find("<td class=\"unknown\">"), std::string::npos)
      << "tune stores search, build, measure and store";
}

// One trial count: the report's equals tune's (--trials 24); the baselines
// measured before the search are counted apart.
TEST_F(ReportInBrowser, TheReportCountsTheTrialsTuneRan) {
  const std::string html = read_bytes(dir_->file("report.html"));
  std::smatch trials;
  ASSERT_TRUE(std::regex_search(html, trials, std::regex("ms</b> after (\\d+) trials"))) << html.substr(0, 2000);
  EXPECT_EQ(trials[1], "24");
  EXPECT_NE(html.find(" baselines, "), std::string::npos);
}

TEST_F(ReportInBrowser, AScriptErrorWouldBeSeen) {
  // The same page with its script broken: the check above must catch it.
  std::string html = read_bytes(dir_->file("report.html"));
  const size_t at = html.find("(function () {");
  ASSERT_NE(at, std::string::npos);
  html.insert(at + 14, " no_such_function();");
  const std::string broken = dir_->file("broken.html");
  std::ofstream(broken) << html;
  const std::string dom = dump_dom(chromium_, *dir_, broken);
  EXPECT_EQ(body_attributes(dom).find("data-report-ready"), std::string::npos);
  EXPECT_TRUE(
      std::regex_search(dom, std::regex("<html[^>]* data-script-error=\"[^\"]*no_such_function is not defined")))
      << dom.substr(0, 1500);
  EXPECT_NE(dom.find("no_such_function is not defined (line"), std::string::npos);
}

// The fixture: a real `tessera tune resnet18.onnx --trials 1000` exported
// with `tessera records export`, never edited (scripts/report_fixture.sh).
const fs::path kResNetRecords = TESSERA_REPORT_FIXTURE;

// How many times `pattern` matches in `text`.
int matches(const std::string& text, const std::regex& pattern) {
  return static_cast<int>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), pattern), std::sregex_iterator()));
}

// What the fixture holds, counted from its lines.
struct FixtureCounts {
  int records = 0, workloads = 0, sessions = 0, phase_times = 0;
};

FixtureCounts count_lines(const std::string& jsonl) {
  FixtureCounts n;
  std::istringstream in(jsonl);
  for (std::string line; std::getline(in, line);) {
    n.records += line.find("{\"type\":\"record\"") == 0;
    n.workloads += line.find("{\"type\":\"workload\"") == 0;
    n.sessions += line.find("{\"type\":\"session\"") == 0;
    n.phase_times += line.find("{\"type\":\"phase_times\"") == 0;
  }
  return n;
}

// The 1,000-trial ResNet-18 tuning, imported into a new database, its report
// written for the model as the demo generates it, and the page opened once.
class ResNet18ReportInBrowser : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    chromium_ = find_chromium();
    if (chromium_.empty()) return;
    dir_ = new TempDir;
    const std::string model = dir_->file("resnet18.onnx");
    Status made = bench::write_resnet18(model, 0);
    if (made.code() == ErrorCode::kUnavailable) {
      skip_ = made.to_string();
      return;
    }
    if (!made) return fail("the model: " + made.to_string());
    const std::string jsonl = dir_->file("resnet18_1000.jsonl");
    Output unzip = shell("gzip -dc " + kResNetRecords.string() + " > " + jsonl);
    if (unzip.code != 0) return fail("gzip -dc " + kResNetRecords.string() + ":\n" + unzip.text);
    counts_ = count_lines(read_bytes(jsonl));
    import_ = tessera("records import --db " + dir_->file("t.db") + " " + jsonl);
    if (import_.code != 0) return fail("import failed:\n" + import_.text);
    Output report = tessera("report " + model + " --db " + dir_->file("t.db") + " -o " + dir_->file("report.html"));
    if (report.code != 0) return fail("report failed:\n" + report.text);
    dom_ = dump_dom(chromium_, *dir_, dir_->file("report.html"));
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static void fail(const std::string& why) { setup_error_ = why; }
  void SetUp() override {
    if (chromium_.empty())
      GTEST_SKIP() << "chromium is not installed (no chromium, chromium-browser or google-chrome on PATH)";
    if (!skip_.empty()) GTEST_SKIP() << "cannot generate the ResNet-18: " << skip_;
    ASSERT_TRUE(setup_error_.empty()) << setup_error_;
    ASSERT_FALSE(dom_.empty());
  }
  // The element with this id in the DOM, up to its closing tag.
  static std::string element(const std::string& id, const std::string& tag) {
    const size_t at = dom_.find("<" + tag + " id=\"" + id + "\"");
    if (at == std::string::npos) return "";
    return dom_.substr(at, dom_.find("</" + tag + ">", at) - at);
  }
  static std::string chromium_, skip_, setup_error_, dom_;
  static Output import_;
  static FixtureCounts counts_;
  static TempDir* dir_;
};
std::string ResNet18ReportInBrowser::chromium_;
std::string ResNet18ReportInBrowser::skip_;
std::string ResNet18ReportInBrowser::setup_error_;
std::string ResNet18ReportInBrowser::dom_;
Output ResNet18ReportInBrowser::import_;
FixtureCounts ResNet18ReportInBrowser::counts_;
TempDir* ResNet18ReportInBrowser::dir_ = nullptr;

TEST_F(ResNet18ReportInBrowser, TheFixtureIsA1000TrialTuningOfOneSession) {
  EXPECT_GE(counts_.records, 1000);
  EXPECT_EQ(counts_.sessions, 1);
  EXPECT_EQ(counts_.phase_times, counts_.workloads) << "one row of phase times per task";
  EXPECT_NE(import_.text.find(std::to_string(counts_.records) + " records added, 0 already present, 0 malformed"),
            std::string::npos)
      << import_.text;
}

TEST_F(ResNet18ReportInBrowser, EverySectionRendersWithoutAScriptError) {
  const std::string attrs = body_attributes(dom_);
  EXPECT_NE(attrs.find("data-report-ready=\"1\""), std::string::npos) << "the script did not run to its end: " << attrs;
  EXPECT_NE(attrs.find("data-sections=\"summary model time workers tasks best\""), std::string::npos) << attrs;
  std::smatch plots;
  ASSERT_TRUE(std::regex_search(attrs, plots, std::regex("data-plots=\"(\\d+) (\\d+)\""))) << attrs;
  EXPECT_EQ(plots[1], plots[2]) << "every plot has a non-empty drawing";
  EXPECT_EQ(std::stoi(plots[1]), 2 + counts_.workloads) << "two model plots and one per task";
  EXPECT_FALSE(std::regex_search(dom_, std::regex("<html[^>]* data-script-error"))) << dom_.substr(0, 1500);
  EXPECT_NE(dom_.find("<pre id=\"script-errors\"></pre>"), std::string::npos);
}

TEST_F(ResNet18ReportInBrowser, ThePageCountsEveryRecord) {
  const std::string summary = element("summary", "section");
  EXPECT_NE(summary.find("<th>records</th><td>" + std::to_string(counts_.records) + " ("), std::string::npos)
      << summary;
  EXPECT_NE(summary.find("<th>tasks</th><td>" + std::to_string(counts_.workloads) + " "), std::string::npos) << summary;
  // The estimated latency counts every trial of the model's kernels.
  std::smatch trials;
  const std::string model = element("model", "section");
  ASSERT_TRUE(std::regex_search(model, trials, std::regex("ms</b> after (\\d+) trials"))) << model.substr(0, 2000);
  EXPECT_GE(std::stoi(trials[1]), 1000);
  EXPECT_LE(std::stoi(trials[1]), counts_.records);
}

TEST_F(ResNet18ReportInBrowser, EveryKernelOfTheModelHasABestRecord) {
  const std::string model = element("model", "section"), best = element("best", "section");
  EXPECT_EQ(model.find("no records of this task"), std::string::npos) << "a kernel of the model is not in the fixture";
  EXPECT_EQ(model.find("no ok record"), std::string::npos);
  EXPECT_EQ(best.find("class=\"unknown\""), std::string::npos) << "a task without an ok record";
  // One row per kernel in the model's table, each with its share of the time.
  const size_t table = model.find("<tbody>");
  ASSERT_NE(table, std::string::npos) << model.substr(0, 2000);
  const std::string shares = model.substr(table);
  EXPECT_EQ(matches(shares, std::regex("<tr>")), counts_.workloads);
  EXPECT_EQ(matches(shares, std::regex("<tr><td data-v=\"[0-9.e+-]+\">[0-9.e+-]+%</td>")), counts_.workloads)
      << shares.substr(0, 2000);
}

// The page opens in a window 1,400 pixels wide without scrolling sideways:
// long targets, keys and schedules wrap or lose their middle. A copy of the
// report notes the document's width once it has loaded.
TEST_F(ResNet18ReportInBrowser, ThePageFitsA1400PixelWindow) {
  std::string html = read_bytes(dir_->file("report.html"));
  const size_t end = html.rfind("</body>");
  ASSERT_NE(end, std::string::npos);
  html.insert(end,
              "<script>window.addEventListener('load', function () {"
              "  var b = document.body, wide = [];"
              "  b.setAttribute('data-scroll-width', document.documentElement.scrollWidth);"
              "  document.querySelectorAll('body *').forEach(function (e) {"
              "    var r = e.getBoundingClientRect().right, p = e.parentElement;"
              "    if (r > 1400 && (!p || p.getBoundingClientRect().right <= 1400))"
              "      wide.push(e.tagName + '#' + e.id + '.' + e.className + ' ' + Math.round(r));"
              "  });"
              "  b.setAttribute('data-too-wide', wide.slice(0, 8).join('; '));"
              "});</script>");
  const std::string measured = dir_->file("measured.html");
  std::ofstream(measured) << html;
  const std::string attrs = body_attributes(dump_dom(chromium_, *dir_, measured, "--window-size=1400,900"));
  std::smatch width;
  ASSERT_TRUE(std::regex_search(attrs, width, std::regex("data-scroll-width=\"(\\d+)\""))) << attrs;
  EXPECT_LE(std::stoi(width[1]), 1400) << "the page scrolls sideways at 1,400 px: " << attrs;
}

// The phase times came through export and import: the session's split is
// known, not "unknown".
TEST_F(ResNet18ReportInBrowser, WhereTheTimeWentSurvivedTheImport) {
  const std::string time = element("time", "section");
  EXPECT_NE(time.find("<svg class=\"bar\""), std::string::npos) << time.substr(0, 3000);
  EXPECT_EQ(time.find("<td class=\"unknown\">"), std::string::npos) << time.substr(0, 3000);
}

}  // namespace
}  // namespace tessera::report
