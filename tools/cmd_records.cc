// `tessera records list|best|stats|export|import|prune|why`: look into and
// maintain a records database from a terminal, and ask which schedule compile
// time would pick.
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/duration.h"
#include "base/target.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/ops/op_spec.h"
#include "compiler/space/choose/apply_best.h"
#include "records/jsonl.h"
#include "records/records_schedule_source.h"
#include "records/store.h"
#include "tools/args.h"
#include "tools/commands.h"
#include "tools/records_why.h"

namespace tessera::cli {
namespace {

using records::Record;
using records::Store;

constexpr const char* kDefaultDb = "tessera.db";

// ---------------------------------------------------------------- formatting

/// A table printed with columns sized to their contents. On a terminal the
/// elastic columns (long target strings) lose their middle until the table fits
/// its width; into a pipe every cell is printed whole.
class Table {
 public:
  struct Column {
    std::string title;
    bool right = false;    // numbers align right
    bool elastic = false;  // may be shortened to fit the terminal
    /// A shorter spelling tried before cutting cells (may be null).
    std::string (*compact)(const std::string&) = nullptr;
    /// When every row has the same value (one target, the usual case), it
    /// is printed once above the table ("target: x86_64 znver4, 2 cores")
    /// and the column left out.
    bool shared = false;
  };
  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

  void add(std::vector<std::string> row) {
    row.resize(columns_.size());
    rows_.push_back(std::move(row));
  }

  /// Prints to stdout, fitting `terminal_width` columns when it is not 0.
  void print(size_t terminal_width) const {
    Table narrowed = without_shared_columns();
    if (narrowed.columns_.size() < columns_.size()) return narrowed.print(terminal_width);
    std::vector<std::vector<std::string>> rows = rows_;
    std::vector<size_t> width;
    size_t total = measure(rows, width);
    if (terminal_width > 0 && total > terminal_width) {
      for (size_t i = 0; i < columns_.size(); ++i)
        if (columns_[i].compact)
          for (auto& row : rows) row[i] = columns_[i].compact(row[i]);
      total = measure(rows, width);
    }
    constexpr size_t kMinElastic = 14;
    // Shrink the widest elastic column a character at a time until it fits.
    while (terminal_width > 0 && total > terminal_width) {
      size_t widest = columns_.size();
      for (size_t i = 0; i < columns_.size(); ++i)
        if (columns_[i].elastic && width[i] > kMinElastic && (widest == columns_.size() || width[i] > width[widest]))
          widest = i;
      if (widest == columns_.size()) break;
      --width[widest];
      --total;
    }
    auto line = [&](const std::vector<std::string>& cells) {
      std::string text;
      for (size_t i = 0; i < columns_.size(); ++i) {
        std::string cell = cells[i];
        if (cell.size() > width[i]) {
          size_t keep = width[i] - 3, head = (keep + 1) / 2;
          cell = cell.substr(0, head) + "..." + cell.substr(cell.size() - (keep - head));
        }
        std::string pad(width[i] - cell.size(), ' ');
        text += columns_[i].right ? pad + cell : cell + pad;
        if (i + 1 < columns_.size()) text += "  ";
      }
      while (!text.empty() && text.back() == ' ') text.pop_back();
      std::printf("%s\n", text.c_str());
    };
    std::vector<std::string> titles;
    for (const auto& c : columns_) titles.push_back(c.title);
    line(titles);
    for (const auto& row : rows) line(row);
  }

 private:
  // The table without its shared columns whose rows all agree, each of
  // those printed first as "title: value".
  Table without_shared_columns() const {
    std::vector<bool> keep(columns_.size(), true);
    for (size_t i = 0; i < columns_.size(); ++i) {
      if (!columns_[i].shared || rows_.empty()) continue;
      bool same = true;
      for (const auto& row : rows_) same = same && row[i] == rows_[0][i];
      if (!same) continue;
      keep[i] = false;
      std::string title = columns_[i].title;
      for (char& c : title) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::printf("%s: %s\n", title.c_str(), rows_[0][i].c_str());
    }
    std::vector<Column> columns;
    for (size_t i = 0; i < columns_.size(); ++i)
      if (keep[i]) columns.push_back(columns_[i]);
    Table out(std::move(columns));
    for (const auto& row : rows_) {
      std::vector<std::string> cells;
      for (size_t i = 0; i < row.size(); ++i)
        if (keep[i]) cells.push_back(row[i]);
      out.add(std::move(cells));
    }
    return out;
  }

  // Column widths for `rows` into `width`; returns the line length.
  size_t measure(const std::vector<std::vector<std::string>>& rows, std::vector<size_t>& width) const {
    width.assign(columns_.size(), 0);
    for (size_t i = 0; i < columns_.size(); ++i) width[i] = columns_[i].title.size();
    for (const auto& row : rows)
      for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    size_t total = 2 * (columns_.size() - 1);
    for (size_t w : width) total += w;
    return total;
  }

  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// "llvm -mtriple=x86_64-linux-gnu -mcpu=icelake-server" -> "x86_64 icelake-server":
// the words that usually tell targets apart (architecture, CPU, features), for
// narrow terminals. A pipe always gets the full string.
std::string compact_target(const std::string& target) {
  std::string out, word;
  std::istringstream words(target);
  while (words >> word) {
    if (word == "llvm") continue;
    if (word.rfind("-mtriple=", 0) == 0)
      word = word.substr(9, word.find('-', 9) - 9);
    else if (word.rfind("-mcpu=", 0) == 0)
      word = word.substr(6);
    else if (word.rfind("-mattr=", 0) == 0)
      word = word.substr(7);
    out += (out.empty() ? "" : " ") + word;
  }
  return out.empty() ? target : out;
}

// "1x320x320x32 4x4x32x64 64 1x320x320x64 -> 1x320x320x64 float32" ->
// "1x320x320x32 .. -> 1x320x320x64": the first input and the output, the
// type only when it is not float32, for narrow tables (the workload key
// tells the rest apart).
std::string compact_shapes(const std::string& shapes) {
  const size_t arrow = shapes.find(" -> ");
  const size_t first = shapes.find(' ');
  if (arrow == std::string::npos || first == std::string::npos) return shapes;
  std::string out = shapes.substr(arrow);
  if (out.size() > 8 && out.compare(out.size() - 8, 8, " float32") == 0) out.resize(out.size() - 8);
  return shapes.substr(0, first) + (first < arrow ? " .." : "") + out;
}

// A table's TARGET cell: the target's short name (architecture, CPU, added
// features, cores), the whole string with --full-target.
std::string target_cell(const Args& args, const std::string& target) {
  return args.has("full-target") ? target : short_target_name(target);
}

// The width of the terminal on stdout; 0 when stdout is not a terminal.
size_t terminal_width() {
  struct winsize ws;
  if (!::isatty(STDOUT_FILENO) || ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0) return 0;
  return ws.ws_col;
}

// The width a table fits: the terminal's, else 120 columns (a pipe, a log);
// unlimited with --wide or --full-target, which ask for every cell whole.
size_t table_width(const Args& args) {
  if (args.has("wide") || args.has("full-target")) return 0;
  const size_t terminal = terminal_width();
  return terminal > 0 ? terminal : 120;
}

std::string printf_string(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

// Seconds with a unit a person reads at a glance: "812.4 us", "3.172 ms", "1.25 s".
std::string format_seconds(double s) {
  if (!std::isfinite(s)) return "-";
  if (s < 1e-3) return printf_string("%.1f us", s * 1e6);
  if (s < 1.0) return printf_string("%.3f ms", s * 1e3);
  return printf_string("%.3f s", s);
}

std::string format_gflops(double flops, double seconds) {
  if (flops <= 0 || !std::isfinite(seconds) || seconds <= 0) return "-";
  return printf_string("%.1f", flops / seconds / 1e9);
}

std::string format_time(double unix_seconds) {
  time_t t = static_cast<time_t>(unix_seconds);
  struct tm tm;
  if (!localtime_r(&t, &tm)) return "-";
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm);
  return buf;
}

// Like a short git hash: enough to tell workloads apart on screen, and --workload
// accepts any unique prefix.
std::string short_key(const std::string& key) {
  return key.substr(0, 8);
}

// ---------------------------------------------------------------- plumbing

int fail(const Status& st) {
  std::fprintf(stderr, "tessera records: %s\n", st.message().c_str());
  return st.code() == ErrorCode::kInvalidArgument ? 2 : 1;
}

struct Subcommand {
  const char* name;
  const char* summary;
  const char* usage;
  std::vector<OptionSpec> options;
  int (*run)(const Args& args);
};

const OptionSpec kDbOption{"db", true, "the records database (default tessera.db)"};
const OptionSpec kHelpOption{"help", false, "this help"};
const OptionSpec kWorkloadOption{"workload", true, "a workload key, or a unique prefix of one"};
const OptionSpec kTargetOption{"target", true, "a target string, or a unique part of one"};
const OptionSpec kFullTargetOption{"full-target", false, "print each target's whole string, not its short name"};
const OptionSpec kWideOption{"wide", false,
                             "print every cell whole, however wide (default: fit the terminal, "
                             "or 120 columns into a pipe)"};

Result<Store> open_store(const Args& args, bool writable) {
  records::OpenOptions options;
  options.read_only = !writable;
  options.create = writable;
  return Store::open(args.get("db", kDefaultDb), options);
}

// The (workload, target) pairs the database holds, for matching what a user typed.
struct Known {
  std::set<std::string> workloads;
  std::set<std::pair<std::string, std::string>> tasks;
};

Result<Known> known_tasks(Store& store) {
  Known known;
  TESSERA_ASSIGN_OR_RETURN(auto stats, store.stats());
  for (const auto& s : stats) {
    known.workloads.insert(s.workload_key);
    known.tasks.insert({s.workload_key, s.target});
  }
  TESSERA_ASSIGN_OR_RETURN(auto workloads, store.workloads());
  for (const auto& w : workloads) known.workloads.insert(w.key);
  return known;
}

// Resolves a typed value against known ones: exact, else the unique one that
// `matches` accepts. Empty input stays empty (no filter).
template <typename Match>
Result<std::string> resolve(const std::string& typed, const std::set<std::string>& known, const char* what,
                            Match matches) {
  if (typed.empty() || known.count(typed)) return typed;
  std::vector<std::string> hits;
  for (const auto& k : known)
    if (matches(k)) hits.push_back(k);
  if (hits.size() == 1) return hits[0];
  if (hits.empty()) return Status(ErrorCode::kNotFound, std::string("no ") + what + " matches '" + typed + "'");
  std::string list;
  for (size_t i = 0; i < hits.size() && i < 5; ++i) list += "\n  " + hits[i];
  return Status(ErrorCode::kInvalidArgument,
                std::string("'") + typed + "' matches " + std::to_string(hits.size()) + " " + what + "s:" + list);
}

// The workload and target filters of `args`, resolved against the database.
Result<std::pair<std::string, std::string>> resolve_task(Store& store, const Args& args) {
  std::string workload = args.get("workload"), target = args.get("target");
  if (workload.empty() && target.empty()) return std::pair{workload, target};
  TESSERA_ASSIGN_OR_RETURN(Known known, known_tasks(store));
  TESSERA_ASSIGN_OR_RETURN(workload, resolve(workload, known.workloads, "workload",
                                             [&](const std::string& k) { return k.rfind(workload, 0) == 0; }));
  std::set<std::string> targets;
  for (const auto& [w, t] : known.tasks)
    if (workload.empty() || w == workload) targets.insert(t);
  TESSERA_ASSIGN_OR_RETURN(target, resolve(target, targets, "target",
                                           [&](const std::string& t) { return t.find(target) != std::string::npos; }));
  return std::pair{workload, target};
}

// Flop counts by workload key (0 when unknown).
Result<std::map<std::string, records::WorkloadInfo>> workload_infos(Store& store) {
  std::map<std::string, records::WorkloadInfo> out;
  TESSERA_ASSIGN_OR_RETURN(auto workloads, store.workloads());
  for (auto& w : workloads) out[w.key] = std::move(w);
  return out;
}

// ---------------------------------------------------------------- subcommands

int run_list(const Args& args) {
  auto store = open_store(args, false);
  if (!store) return fail(store.status());
  auto task = resolve_task(*store, args);
  if (!task) return fail(task.status());
  auto limit = args.get_int("limit", 20);
  if (!limit) return fail(limit.status());
  records::RecordFilter filter;
  filter.workload_key = task->first;
  filter.target = task->second;
  filter.ok_only = args.has("ok");
  filter.worker = args.get("worker", "");
  filter.newest_first = true;
  filter.limit = args.has("all") ? 0 : *limit;
  auto infos = workload_infos(*store);
  if (!infos) return fail(infos.status());
  Table table({{"ID", true},
               {"TIME"},
               {"WORKLOAD"},
               {"OP", false, true},
               {"SHAPES", false, true, compact_shapes},
               {"TARGET", false, true, compact_target, true},
               {"SPACE"},
               {"MEAN COST", true},
               {"GFLOP/S", true},
               {"CHECKED"},
               {"RESULT"}});
  Status st = store->for_each(filter, [&](const Record& r) {
    auto w = infos->find(r.workload_key);
    double flops = w == infos->end() ? 0 : w->second.flop_count;
    table.add({std::to_string(r.id), format_time(r.timestamp), short_key(r.workload_key),
               w == infos->end() ? "" : w->second.op_name, w == infos->end() ? "" : w->second.shapes,
               target_cell(args, r.target), records::space_kind_name(r.space), format_seconds(r.mean_cost()),
               r.ok() ? format_gflops(flops, r.mean_cost()) : "-", r.checked ? "yes" : "no", r.error_kind});
    return Status::ok();
  });
  if (!st) return fail(st);
  table.print(table_width(args));
  auto total = store->count(filter);
  if (total && filter.limit > 0 && *total > filter.limit)
    std::printf("(%lld newest of %lld; --all or --limit N for more)\n", static_cast<long long>(filter.limit),
                static_cast<long long>(*total));
  return 0;
}

int run_best(const Args& args) {
  auto store = open_store(args, false);
  if (!store) return fail(store.status());
  auto task = resolve_task(*store, args);
  if (!task) return fail(task.status());
  auto k = args.get_int("k", 5);
  if (!k) return fail(k.status());
  if (*k < 1) return fail(Status(ErrorCode::kInvalidArgument, "--k must be at least 1"));
  auto stats = store->stats();
  if (!stats) return fail(stats.status());
  auto infos = workload_infos(*store);
  if (!infos) return fail(infos.status());
  Table table({{"WORKLOAD"},
               {"OP", false, true},
               {"SHAPES", false, true, compact_shapes},
               {"TARGET", false, true, compact_target, true},
               {"RANK", true},
               {"ID", true},
               {"MEAN COST", true},
               {"GFLOP/S", true},
               {"DEVICE"},
               {"TIME"}});
  int shown = 0;
  for (const auto& s : *stats) {
    if (!task->first.empty() && s.workload_key != task->first) continue;
    if (!task->second.empty() && s.target != task->second) continue;
    if (s.ok_count == 0) continue;
    // Without a task every (workload, target) shows its best record only.
    int64_t want = task->first.empty() && task->second.empty() && !args.has("k") ? 1 : *k;
    auto best = store->best_k(s.workload_key, s.target, want);
    if (!best) return fail(best.status());
    int rank = 0;
    for (const Record& r : *best) {
      table.add({short_key(r.workload_key), s.op_name, s.shapes, target_cell(args, r.target), std::to_string(++rank),
                 std::to_string(r.id), format_seconds(r.mean_cost()), format_gflops(s.flop_count, r.mean_cost()),
                 r.device_key, format_time(r.timestamp)});
      ++shown;
    }
  }
  if (shown == 0) {
    std::printf("no successful records%s\n", task->first.empty() ? "" : " for this workload");
    return 0;
  }
  table.print(table_width(args));
  return 0;
}

int run_stats(const Args& args) {
  auto store = open_store(args, false);
  if (!store) return fail(store.status());
  auto task = resolve_task(*store, args);
  if (!task) return fail(task.status());
  auto stats = store->stats();
  if (!stats) return fail(stats.status());
  Table table({{"WORKLOAD"},
               {"OP", false, true},
               {"SHAPES", false, true, compact_shapes},
               {"TARGET", false, true, compact_target, true},
               {"RECORDS", true},
               {"OK", true},
               {"INFRA", true},
               {"BEST", true},
               {"GFLOP/S", true},
               {"LAST"}});
  int64_t records = 0, ok = 0, infra = 0;
  for (const auto& s : *stats) {
    if (!task->first.empty() && s.workload_key != task->first) continue;
    if (!task->second.empty() && s.target != task->second) continue;
    double best = s.best_cost.value_or(INFINITY);
    table.add({short_key(s.workload_key), s.op_name, s.shapes, target_cell(args, s.target), std::to_string(s.count),
               std::to_string(s.ok_count), std::to_string(s.infrastructure_count), format_seconds(best),
               format_gflops(s.flop_count, best), format_time(s.last_timestamp)});
    records += s.count;
    ok += s.ok_count;
    infra += s.infrastructure_count;
  }
  table.print(table_width(args));
  std::printf("%lld records, %lld ok, %lld failed, %lld infrastructure errors (not measurements)\n",
              static_cast<long long>(records), static_cast<long long>(ok), static_cast<long long>(records - ok - infra),
              static_cast<long long>(infra));
  return 0;
}

int run_export(const Args& args) {
  auto store = open_store(args, false);
  if (!store) return fail(store.status());
  auto task = resolve_task(*store, args);
  if (!task) return fail(task.status());
  records::RecordFilter filter;
  filter.workload_key = task->first;
  filter.target = task->second;
  filter.ok_only = args.has("ok");
  std::string out = args.get("output", "-");
  auto report =
      out == "-" ? records::export_jsonl(*store, std::cout, filter) : records::export_jsonl_file(*store, out, filter);
  if (!report) return fail(report.status());
  std::fprintf(stderr, "exported %lld records, %lld workloads, %lld sessions, %lld phase times to %s\n",
               static_cast<long long>(report->records), static_cast<long long>(report->workloads),
               static_cast<long long>(report->sessions), static_cast<long long>(report->phase_times),
               out == "-" ? "stdout" : out.c_str());
  return 0;
}

int run_import(const Args& args) {
  std::vector<std::string> files(args.positional().begin() + 1, args.positional().end());
  if (files.empty()) return fail(Status(ErrorCode::kInvalidArgument, "import needs a file (or - for stdin)"));
  auto store = open_store(args, true);
  if (!store) return fail(store.status());
  bool any_bad = false;
  for (const std::string& file : files) {
    auto report = file == "-" ? records::import_jsonl(*store, std::cin) : records::import_jsonl_file(*store, file);
    if (!report) return fail(report.status());
    constexpr size_t kShown = 20;
    for (size_t i = 0; i < report->errors.size() && i < kShown; ++i)
      std::fprintf(stderr, "%s:%lld: %s\n", file.c_str(), static_cast<long long>(report->errors[i].line),
                   report->errors[i].message.c_str());
    if (report->errors.size() > kShown)
      std::fprintf(stderr, "%s: ... and %zu more malformed lines\n", file.c_str(), report->errors.size() - kShown);
    std::printf("%s: %lld records added, %lld already present, %zu malformed lines skipped; %lld phase times\n",
                file.c_str(), static_cast<long long>(report->records_added), static_cast<long long>(report->duplicates),
                report->errors.size(), static_cast<long long>(report->phase_times));
    any_bad = any_bad || !report->errors.empty();
  }
  return any_bad ? 1 : 0;
}

int run_prune(const Args& args) {
  records::PruneOptions options;
  auto keep = args.get_int("keep", 10);
  if (!keep) return fail(keep.status());
  options.keep_k = *keep;
  if (args.has("errors-older-than")) {
    auto age = parse_duration(args.get("errors-older-than"));
    if (!age) return fail(age.status());
    options.drop_errors_older_than_seconds = *age;
  }
  options.drop_infrastructure = args.has("infrastructure");
  options.drop_worker = args.get("worker", "");
  if (options.keep_k < 1) return fail(Status(ErrorCode::kInvalidArgument, "--keep must be at least 1"));
  records::OpenOptions open;
  open.create = false;
  auto store = Store::open(args.get("db", kDefaultDb), open);
  if (!store) return fail(store.status());
  options.dry_run = !args.has("yes");
  auto report = store->prune(options);
  if (!report) return fail(report.status());
  // Without --yes nothing is deleted: the same counts, as what would go.
  const char* verb = options.dry_run ? "would drop" : "dropped";
  std::printf("%s %lld ok records beyond the best %lld of each workload and target, %lld old error records\n", verb,
              static_cast<long long>(report->dropped_ok), static_cast<long long>(options.keep_k),
              static_cast<long long>(report->dropped_errors));
  if (options.drop_infrastructure)
    std::printf("%s %lld infrastructure errors\n", verb, static_cast<long long>(report->dropped_infrastructure));
  if (!options.drop_worker.empty())
    std::printf("%s %lld records measured by worker %s\n", verb, static_cast<long long>(report->dropped_worker),
                options.drop_worker.c_str());
  if (options.dry_run) std::printf("nothing was deleted: run again with --yes to delete them\n");
  return 0;
}

// The schedule compile time would pick for one operator, as aligned
// "label  value" lines: what, from where, how fast, and what was skipped.
int run_why(const Args& args) {
  if (args.positional().size() == 2 && !args.has("op")) {  // records why MODEL.onnx (tools/records_why.h)
    auto k = args.get_int("k", 5);
    if (!k) return fail(k.status());
    return explain_model_schedules({args.positional()[1], args.get_all("input-shape"), args.get("db", kDefaultDb),
                                    args.has("target") ? std::optional(args.get("target")) : std::nullopt, *k,
                                    args.has("full-target")});
  }
  if (!args.has("op"))
    return fail(Status(ErrorCode::kInvalidArgument,
                       "why needs --op SPEC (e.g. matmul:M=512,N=512,K=512) or a model, MODEL.onnx"));
  auto op = ops::parse_op_spec(args.get("op"));
  if (!op) return fail(Status(ErrorCode::kInvalidArgument, op.status().message()));
  Target target = host_target();
  if (args.has("target")) {
    auto parsed = parse_target(args.get("target"));
    if (!parsed) return fail(Status(ErrorCode::kInvalidArgument, parsed.status().message()));
    target = *parsed;
  }
  const std::string db = args.get("db", kDefaultDb);
  auto k = args.get_int("k", 5);
  if (!k) return fail(k.status());
  if (*k < 1) return fail(Status(ErrorCode::kInvalidArgument, "--k must be at least 1"));
  std::optional<Store> store;
  std::string no_db;
  auto opened = open_store(args, false);
  if (opened)
    store.emplace(std::move(opened).value());
  else if (opened.status().code() == ErrorCode::kNotFound)
    no_db = "no records database at " + db;
  else
    return fail(opened.status());
  std::optional<records::RecordsScheduleSource> source;
  if (store) source.emplace(*store, *k);
  auto choice = choose_schedule(op->dag, op->op, target, source ? &*source : nullptr);
  if (!choice) return fail(choice.status());

  auto line = [](const char* label, const std::string& value) { std::printf("%-12s%s\n", label, value.c_str()); };
  line("operator", op->spec);
  line("workload", op->dag->workload_key());
  line("target", target_cell(args, target.to_string()));
  line("database", store ? db : no_db);
  const bool from_record = choice->record.has_value();
  std::string picked = schedule_source_name(choice->source);
  if (from_record) picked = "record " + std::to_string(choice->record->record_id) + " (" + picked + ")";
  line("schedule", picked);
  line("why", from_record ? choice->record->why : choice->explanation);
  if (from_record) {
    const ScheduleCandidate& c = *choice->record;
    line("cost", format_seconds(c.cost_s) + "   " + format_gflops(op->flops, c.cost_s) + " GFLOP/s");
    line("measured on", target_cell(args, c.target) + (c.device_key.empty() ? "" : "   (device " + c.device_key + ")"));
    line("records",
         std::to_string(c.considered) + " ok on " + (c.match == TargetMatch::kExact ? "this target" : "that target"));
  }
  line("candidates", std::to_string(choice->candidates_seen) + " proposed, " +
                         std::to_string(choice->candidates_skipped) + " skipped");
  line("steps", std::to_string(choice->state.steps().size()));
  if (args.has("steps"))
    for (const auto& step : choice->state.steps()) line("", step.to_string());
  for (const auto& w : choice->warnings) line("warning", w);
  return 0;
}

const std::vector<Subcommand>& subcommands() {
  static const std::vector<Subcommand> kSubcommands = {
      {"list",
       "records, newest first",
       "tessera records list [--db DB] [--workload KEY] [--target TARGET] [--ok] [--worker ID]",
       {kDbOption,
        kWorkloadOption,
        kTargetOption,
        {"ok", false, "only successful measurements"},
        {"worker", true, "only what this worker id measured", 0, "ID"},
        {"limit", true, "how many (default 20)"},
        {"all", false, "every record"},
        kFullTargetOption,
        kWideOption,
        kHelpOption},
       run_list},
      {"best",
       "the fastest records of each workload and target",
       "tessera records best [--db DB] [--workload KEY] [--target TARGET] [--k N]",
       {kDbOption,
        kWorkloadOption,
        kTargetOption,
        {"k", true, "how many per workload and target (default 5)"},
        kFullTargetOption,
        kWideOption,
        kHelpOption},
       run_best},
      {"stats",
       "counts and best cost per workload and target",
       "tessera records stats [--db DB] [--workload KEY]",
       {kDbOption, kWorkloadOption, kTargetOption, kFullTargetOption, kWideOption, kHelpOption},
       run_stats},
      {"export",
       "write records as JSON Lines",
       "tessera records export [--db DB] [--output FILE] [--workload KEY]",
       {kDbOption,
        kWorkloadOption,
        kTargetOption,
        {"ok", false, "only successful measurements"},
        {"output", true, "the file to write (default: stdout)", 'o', "FILE"},
        kHelpOption},
       run_export},
      {"import",
       "read JSON Lines files, skipping records already present",
       "tessera records import [--db DB] FILE... (- reads stdin)",
       {kDbOption, kHelpOption},
       run_import},
      {"prune",
       "keep the best k per workload and target; drop old errors",
       "tessera records prune [--db DB] [--keep N] [--errors-older-than AGE] [--infrastructure] [--worker ID] [--yes]",
       {kDbOption,
        {"keep", true, "ok records to keep per workload and target (default 10)"},
        {"errors-older-than", true, "drop error records older than this (3600, 90m, 12h, 7d)"},
        {"infrastructure", false, "drop every infrastructure error (no worker, no result, protocol)"},
        {"worker", true, "drop every record this worker id measured (before keeping the best N)", 0, "ID"},
        {"yes", false, "delete them; without it, prune says what it would drop and deletes nothing"},
        kHelpOption},
       run_prune},
      {"why",
       "which schedule compile time would pick for an operator, or each kernel of a model, and why",
       "tessera records why --op SPEC | MODEL.onnx [--input-shape NAME:D,...] [--target TARGET] [--db DB]",
       {kDbOption,
        {"op", true, "the operator, e.g. matmul:M=512,N=512,K=512"},
        {"target", true, "the full target string (default: this machine)"},
        {"k", true, "records to try per target before falling back (default 5)"},
        {"steps", false, "also print the chosen step list"},
        {"input-shape", true, "with a model: bind a dynamic input dimension (name:d0,d1,...)"},
        kFullTargetOption,
        kHelpOption},
       run_why},
  };
  return kSubcommands;
}

int print_usage(FILE* out) {
  std::fprintf(out, "usage: tessera records <command> [--db DB] [options]\n\ncommands:\n");
  for (const auto& s : subcommands()) std::fprintf(out, "  %-8s %s\n", s.name, s.summary);
  std::fprintf(out, "\n`tessera records <command> --help` describes one command.\n");
  return out == stdout ? 0 : 2;
}

}  // namespace

int run_records(int argc, char** argv, int first) {
  if (first >= argc) return print_usage(stderr);
  const std::string name = argv[first];
  if (name == "help" || name == "--help" || name == "-h") return print_usage(stdout);
  for (const auto& sub : subcommands()) {
    if (name != sub.name) continue;
    auto args = Args::parse(argc, argv, first, sub.options);
    if (!args) {
      std::fprintf(stderr, "tessera records %s: %s\nusage: %s\n%s", sub.name, args.status().message().c_str(),
                   sub.usage, format_options(sub.options).c_str());
      return 2;
    }
    if (args->positional().size() > (sub.run == run_why ? 2u : 1u) && sub.run != run_import) {
      std::fprintf(stderr, "tessera records %s: unexpected argument '%s'\nusage: %s\n", sub.name,
                   args->positional()[1].c_str(), sub.usage);
      return 2;
    }
    if (args->has("help")) {
      std::printf("usage: %s\n%s\n%s", sub.usage, sub.summary, format_options(sub.options).c_str());
      return 0;
    }
    return sub.run(*args);
  }
  std::vector<std::string> names;
  for (const Subcommand& sub : subcommands()) names.push_back(sub.name);
  if (const std::string near = nearest_word(name, names); !near.empty()) {
    std::fprintf(stderr, "tessera records: unknown command '%s': did you mean '%s'?\n", name.c_str(), near.c_str());
    return 2;
  }
  std::fprintf(stderr, "tessera records: unknown command '%s'\n\n", name.c_str());
  return print_usage(stderr);
}

}  // namespace tessera::cli
