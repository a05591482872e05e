#include "report/report.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "report/collect.h"
#include "report/plot.h"
#include "report/sections.h"

namespace tessera::report {
namespace {

constexpr const char* kStyle = R"css(
body{font-family:sans-serif;margin:1.5em auto;max-width:1300px;color:#222;line-height:1.4}
h2{border-bottom:1px solid #ccc;margin-top:1.8em}
table{border-collapse:collapse;margin:.5em 0;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
table.sortable th{cursor:pointer;background:#f4f4f4}
table.kv th{background:#f4f4f4}
td.cmd,.msg{font-family:monospace;word-break:break-all}
.unknown{color:#888;font-style:italic}
pre.steps{margin:0;font-size:11px;max-height:12em;overflow:auto;max-width:32em;white-space:pre-wrap}
.task{margin:1.2em 0;padding-top:.3em;border-top:1px dashed #ddd}
.task h3{margin:.2em 0}
.meta,.note{font-size:13px;color:#555}
ul.errors{font-size:13px;margin:.2em 0}
.swatch{display:inline-block;width:10px;height:10px;margin-right:4px}
.plots{display:flex;flex-wrap:wrap;gap:1em}
tr:target{background:#fff3c4}
#script-errors{color:#b00}
)css";

// Runs first: any later script error lands in the page, where a test reading
// the DOM (or a reader) sees it.
constexpr const char* kErrorTrap = R"js(
window.onerror = function (message, source, line, column) {
  var box = document.getElementById('script-errors');
  if (box) box.textContent += message + ' (line ' + line + ':' + column + ')\n';
  document.documentElement.setAttribute('data-script-error', String(message));
};
)js";

// Sortable tables (click a header), then a note of what rendered: the
// sections found and the plots drawn, set on <body> once it ran to the end.
constexpr const char* kScript = R"js(
(function () {
  function value(cell) {
    var v = cell.getAttribute('data-v');
    var n = parseFloat(v !== null ? v : cell.textContent);
    return isNaN(n) ? cell.textContent.toLowerCase() : n;
  }
  document.querySelectorAll('table.sortable').forEach(function (table) {
    table.querySelectorAll('thead th').forEach(function (th, column) {
      var ascending = false;
      th.addEventListener('click', function () {
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        ascending = !ascending;
        rows.sort(function (a, b) {
          var x = a.cells[column] ? value(a.cells[column]) : '', y = b.cells[column] ? value(b.cells[column]) : '';
          if (x === y) return 0;
          return (x < y ? -1 : 1) * (ascending ? 1 : -1);
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  var found = [];
  ['summary', 'model', 'time', 'workers', 'tasks', 'best'].forEach(function (id) {
    if (document.getElementById(id)) found.push(id);
  });
  var plots = document.querySelectorAll('svg.plot');
  var drawn = 0;
  plots.forEach(function (svg) { if (svg.getBBox().width > 0) drawn++; });
  document.body.setAttribute('data-sections', found.join(' '));
  document.body.setAttribute('data-plots', plots.length + ' ' + drawn);
  document.body.setAttribute('data-report-ready', '1');
})();
)js";

}  // namespace

Result<std::string> render_report(records::Store& store, const ReportOptions& options) {
  if (options.max_dots < 1) return Status(ErrorCode::kInvalidArgument, "max_dots must be at least 1");
  if (options.peak_gflops && !(*options.peak_gflops > 0 && std::isfinite(*options.peak_gflops)))
    return Status(ErrorCode::kInvalidArgument, "the peak must be a positive number of GFLOP/s");
  if (options.ort_ms && !(*options.ort_ms > 0 && std::isfinite(*options.ort_ms)))
    return Status(ErrorCode::kInvalidArgument, "ONNX Runtime's latency must be a positive number of ms");
  TESSERA_ASSIGN_OR_RETURN(ReportData data, collect(store, options.target));
  const PageContext page = make_context(data, options);
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" +
                     escape_html(options.title) + "</title><style>" + kStyle + "</style><script>" + kErrorTrap +
                     "</script></head>\n<body><h1>" + escape_html(options.title) +
                     "</h1><pre id=\"script-errors\"></pre>\n";
  html += summary_section(page);
  html += model_section(page);
  html += time_section(page);
  html += tasks_section(page);
  html += best_section(page);
  html += "<script>" + std::string(kScript) + "</script></body></html>\n";
  return html;
}

Status write_report(const std::string& db, const ReportOptions& options, const std::string& out_path) {
  records::OpenOptions open;
  open.read_only = true;
  open.create = false;
  TESSERA_ASSIGN_OR_RETURN(records::Store store, records::Store::open(db, open));
  TESSERA_ASSIGN_OR_RETURN(int64_t count, store.count());
  if (count == 0) return Status(ErrorCode::kInvalidArgument, db + ": no records to report (tune something first)");
  TESSERA_ASSIGN_OR_RETURN(std::string html, render_report(store, options));
  // Through a temporary file beside the output, renamed over it: a reader sees
  // the old report or the new one, never half of one.
  namespace fs = std::filesystem;
  const fs::path out(out_path);
  const fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
  std::string tmp = (dir / ("." + out.filename().string() + ".XXXXXX")).string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) return Status(ErrorCode::kIOError, out_path + ": cannot write here: " + std::strerror(errno));
  size_t done = 0;
  while (done < html.size()) {
    const ssize_t n = ::write(fd, html.data() + done, html.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return Status(ErrorCode::kIOError, out_path + ": writing failed: " + why);
    }
    done += static_cast<size_t>(n);
  }
  ::fchmod(fd, 0644);
  if (::close(fd) != 0 || ::rename(tmp.c_str(), out_path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Status(ErrorCode::kIOError, out_path + ": cannot write: " + why);
  }
  return Status::ok();
}

}  // namespace tessera::report
