// The report of a real tuning run opened in headless Chromium: the page's
// script runs to its end (it marks <body> when it does, and window.onerror
// writes any error into the page), every section is there and every plot
// drew. Skipped where Chromium is not installed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/records/test_util.h"
#include "tests/tools/command.h"

namespace tessera::report {
namespace {

namespace fs = std::filesystem;
using records::testing::TempDir;
using test::Output;
using test::shell;
using test::tessera;

const fs::path kConvModel = "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding/model.onnx";

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Debian's `chromium` (or Google's), the first on PATH; empty when there is none.
std::string find_chromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    Output which = shell(std::string("command -v ") + name);
    if (which.code == 0 && !which.text.empty()) return which.text.substr(0, which.text.find('\n'));
  }
  return "";
}

// The DOM after the page's scripts ran, as Chromium prints it.
std::string dump_dom(const std::string& chromium, const TempDir& dir, const std::string& page) {
  // Chromium's own log (dbus, GPU) goes to stderr: dropped, only the DOM is read.
  Output out = shell("(timeout 60 " + chromium + " --headless --disable-gpu --no-sandbox --user-data-dir=" +
                     dir.file("profile") + " --dump-dom file://" + page + " 2>/dev/null)");
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
    if (chromium_.empty()) GTEST_SKIP() << "chromium is not installed (no chromium, chromium-browser or google-chrome on PATH)";
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
  const std::string html = read(dir_->file("report.html"));
  const size_t time = html.find("<section id=\"time\">");
  ASSERT_NE(time, std::string::npos);
  const std::string section = html.substr(time, html.find("</section>", time) - time);
  EXPECT_NE(section.find("<svg class=\"bar\""), std::string::npos) << section;
  EXPECT_EQ(section.find("<td class=\"unknown\">"), std::string::npos) << "tune stores search, build, measure and store";
}

TEST_F(ReportInBrowser, AScriptErrorWouldBeSeen) {
  // The same page with its script broken: the check above must catch it.
  std::string html = read(dir_->file("report.html"));
  const size_t at = html.find("(function () {");
  ASSERT_NE(at, std::string::npos);
  html.insert(at + 14, " no_such_function();");
  const std::string broken = dir_->file("broken.html");
  std::ofstream(broken) << html;
  const std::string dom = dump_dom(chromium_, *dir_, broken);
  EXPECT_EQ(body_attributes(dom).find("data-report-ready"), std::string::npos);
  EXPECT_TRUE(std::regex_search(dom, std::regex("<html[^>]* data-script-error=\"[^\"]*no_such_function is not defined")))
      << dom.substr(0, 1500);
  EXPECT_NE(dom.find("no_such_function is not defined (line"), std::string::npos);
}

}  // namespace
}  // namespace tessera::report
