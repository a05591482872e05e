#include "records/jsonl.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "compiler/te/workload_key.h"

namespace tessera::records {

namespace {

using Json = nlohmann::json;
// Output keeps fields in the documented order, so exported lines read well.
using OrderedJson = nlohmann::ordered_json;

OrderedJson workload_line(const WorkloadInfo& w) {
  OrderedJson j;
  j["type"] = "workload";
  j["key"] = w.key;
  j["op_name"] = w.op_name;
  j["shapes"] = w.shapes;
  j["flop_count"] = w.flop_count;
  j["dag_text"] = w.dag_text;
  return j;
}

OrderedJson session_line(const SessionInfo& s) {
  OrderedJson j;
  j["type"] = "session";
  j["id"] = s.id;
  j["command_line"] = s.command_line;
  j["host"] = s.host;
  j["tool_version"] = s.tool_version;
  j["llvm_version"] = s.llvm_version;
  j["seed"] = s.seed;
  j["started"] = s.started;
  j["ended"] = s.ended ? OrderedJson(*s.ended) : OrderedJson(nullptr);
  return j;
}

// Stored JSON text as a JSON value; text that does not parse (possible only in
// a damaged database) is kept as a string so that nothing is silently dropped.
OrderedJson embedded(const std::string& text) {
  OrderedJson j = OrderedJson::parse(text, nullptr, false);
  return j.is_discarded() ? OrderedJson(text) : j;
}

OrderedJson record_line(const Record& r) {
  OrderedJson j;
  j["type"] = "record";
  j["workload_key"] = r.workload_key;
  j["target"] = r.target;
  j["device_key"] = r.device_key;
  j["space"] = space_kind_name(r.space);
  j["steps"] = embedded(r.steps_json);
  j["knob_config"] = r.knob_config_json.empty() ? OrderedJson(nullptr) : embedded(r.knob_config_json);
  j["costs"] = r.costs;
  j["mean_cost"] = r.costs.empty() ? OrderedJson(nullptr) : OrderedJson(r.mean_cost());
  j["error_kind"] = r.error_kind;
  j["error_message"] = r.error_message;
  j["build_seconds"] = r.build_seconds;
  j["run_seconds"] = r.run_seconds;
  j["timestamp"] = r.timestamp;
  j["session"] = r.session_id == 0 ? OrderedJson(nullptr) : OrderedJson(r.session_id);
  j["checked"] = r.checked;
  j["infrastructure"] = r.infrastructure;
  if (!r.worker.empty()) j["worker"] = r.worker;
  if (!r.worker_key.empty()) j["worker_key"] = r.worker_key;
  return j;
}

OrderedJson phase_times_line(const PhaseTimes& p) {
  OrderedJson j;
  j["type"] = "phase_times";
  j["session"] = p.session_id;
  j["workload_key"] = p.workload_key;
  j["target"] = p.target;
  j["search_seconds"] = p.search_seconds;
  j["build_seconds"] = p.build_seconds;
  j["measure_seconds"] = p.measure_seconds;
  j["store_seconds"] = p.store_seconds;
  j["batches"] = p.batches;
  return j;
}

Status write_line(std::ostream& out, const OrderedJson& j) {
  // An error message may hold bytes that are not UTF-8 (a crashed kernel's
  // output); they are written as U+FFFD rather than failing the export.
  out << j.dump(-1, ' ', false, OrderedJson::error_handler_t::replace) << '\n';
  if (!out) return Status(ErrorCode::kIOError, "writing the export failed");
  return Status::ok();
}

// Field readers: each returns a line-level error naming the field.
Status field_error(const std::string& name, const char* expected) {
  return Status(ErrorCode::kParseError, "field '" + name + "' " + expected);
}

Status get_string(const Json& j, const std::string& name, bool required, std::string& out) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) {
    return required ? field_error(name, "is missing") : Status::ok();
  }
  if (!it->is_string()) return field_error(name, "must be a string");
  out = it->get<std::string>();
  return Status::ok();
}

Status get_number(const Json& j, const std::string& name, bool required, double& out) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return required ? field_error(name, "is missing") : Status::ok();
  if (!it->is_number()) return field_error(name, "must be a number");
  out = it->get<double>();
  return Status::ok();
}

Status get_integer(const Json& j, const std::string& name, bool required, int64_t& out) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return required ? field_error(name, "is missing") : Status::ok();
  if (!it->is_number_integer()) return field_error(name, "must be an integer");
  out = it->get<int64_t>();
  return Status::ok();
}

// An optional boolean: absent or null leaves `out` as it is.
Status get_bool(const Json& j, const std::string& name, bool& out) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return Status::ok();
  if (!it->is_boolean()) return field_error(name, "must be true or false");
  out = it->get<bool>();
  return Status::ok();
}

Result<WorkloadInfo> parse_workload(const Json& j) {
  WorkloadInfo w;
  TESSERA_RETURN_IF_ERROR(get_string(j, "key", true, w.key));
  TESSERA_RETURN_IF_ERROR(get_string(j, "dag_text", false, w.dag_text));
  TESSERA_RETURN_IF_ERROR(get_string(j, "op_name", false, w.op_name));
  TESSERA_RETURN_IF_ERROR(get_string(j, "shapes", false, w.shapes));
  TESSERA_RETURN_IF_ERROR(get_number(j, "flop_count", false, w.flop_count));
  return w;
}

Result<SessionInfo> parse_session(const Json& j) {
  SessionInfo s;
  TESSERA_RETURN_IF_ERROR(get_integer(j, "id", true, s.id));
  TESSERA_RETURN_IF_ERROR(get_string(j, "command_line", true, s.command_line));
  TESSERA_RETURN_IF_ERROR(get_string(j, "host", true, s.host));
  TESSERA_RETURN_IF_ERROR(get_string(j, "tool_version", true, s.tool_version));
  TESSERA_RETURN_IF_ERROR(get_string(j, "llvm_version", true, s.llvm_version));
  TESSERA_RETURN_IF_ERROR(get_integer(j, "seed", true, s.seed));
  TESSERA_RETURN_IF_ERROR(get_number(j, "started", true, s.started));
  double ended = 0;
  if (j.contains("ended") && !j["ended"].is_null()) {
    TESSERA_RETURN_IF_ERROR(get_number(j, "ended", true, ended));
    s.ended = ended;
  }
  return s;
}

// A record line, with its file-local session id mapped through `sessions`.
Result<Record> parse_record(const Json& j, const std::map<int64_t, int64_t>& sessions) {
  Record r;
  TESSERA_RETURN_IF_ERROR(get_string(j, "workload_key", true, r.workload_key));
  TESSERA_RETURN_IF_ERROR(get_string(j, "target", true, r.target));
  TESSERA_RETURN_IF_ERROR(get_string(j, "device_key", false, r.device_key));
  std::string space;
  TESSERA_RETURN_IF_ERROR(get_string(j, "space", true, space));
  auto kind = parse_space_kind(space);
  if (!kind) return Status(ErrorCode::kParseError, kind.status().message());
  r.space = *kind;
  auto steps = j.find("steps");
  if (steps == j.end() || !steps->is_array()) return field_error("steps", "must be a JSON array");
  r.steps_json = steps->dump();
  auto knobs = j.find("knob_config");
  if (knobs != j.end() && !knobs->is_null()) r.knob_config_json = knobs->dump();
  auto costs = j.find("costs");
  if (costs == j.end() || !costs->is_array()) return field_error("costs", "must be an array of numbers");
  for (const Json& c : *costs) {
    if (!c.is_number()) return field_error("costs", "must be an array of numbers");
    r.costs.push_back(c.get<double>());
  }
  TESSERA_RETURN_IF_ERROR(get_string(j, "error_kind", true, r.error_kind));
  TESSERA_RETURN_IF_ERROR(get_string(j, "error_message", false, r.error_message));
  TESSERA_RETURN_IF_ERROR(get_number(j, "build_seconds", false, r.build_seconds));
  TESSERA_RETURN_IF_ERROR(get_number(j, "run_seconds", false, r.run_seconds));
  TESSERA_RETURN_IF_ERROR(get_number(j, "timestamp", true, r.timestamp));
  if (r.timestamp <= 0) return field_error("timestamp", "must be a positive Unix time");
  // Exports from before checks were kept have no "checked": not checked.
  TESSERA_RETURN_IF_ERROR(get_bool(j, "checked", r.checked));
  // Exports from before infrastructure errors were a class of their own are
  // classified as the schema migration classifies old rows.
  if (j.contains("infrastructure") && !j["infrastructure"].is_null()) {
    TESSERA_RETURN_IF_ERROR(get_bool(j, "infrastructure", r.infrastructure));
  } else {
    r.infrastructure = is_infrastructure_error(r.error_kind, r.error_message);
  }
  // Exports from before records kept their worker have none: ''.
  TESSERA_RETURN_IF_ERROR(get_string(j, "worker", false, r.worker));
  TESSERA_RETURN_IF_ERROR(get_string(j, "worker_key", false, r.worker_key));
  int64_t session = 0;
  TESSERA_RETURN_IF_ERROR(get_integer(j, "session", false, session));
  if (session != 0) {
    auto it = sessions.find(session);
    if (it == sessions.end())
      return Status(ErrorCode::kParseError,
                    "session " + std::to_string(session) + " is not declared on an earlier line");
    r.session_id = it->second;
  }
  // Check now what append would refuse, so the error names this line.
  auto normalized = normalize_record(r, 0);
  if (!normalized) return Status(ErrorCode::kParseError, normalized.status().message());
  return std::move(normalized).value();
}

// A phase_times line, with its file-local session id mapped through `sessions`.
Result<PhaseTimes> parse_phase_times(const Json& j, const std::map<int64_t, int64_t>& sessions) {
  PhaseTimes p;
  int64_t session = 0;
  TESSERA_RETURN_IF_ERROR(get_integer(j, "session", true, session));
  TESSERA_RETURN_IF_ERROR(get_string(j, "workload_key", true, p.workload_key));
  if (!is_valid_workload_key(p.workload_key)) return field_error("workload_key", "must be 32 lowercase hex characters");
  TESSERA_RETURN_IF_ERROR(get_string(j, "target", true, p.target));
  const std::pair<const char*, double*> times[] = {{"search_seconds", &p.search_seconds},
                                                   {"build_seconds", &p.build_seconds},
                                                   {"measure_seconds", &p.measure_seconds},
                                                   {"store_seconds", &p.store_seconds}};
  for (const auto& [name, value] : times) {
    TESSERA_RETURN_IF_ERROR(get_number(j, name, true, *value));
    if (!std::isfinite(*value) || *value < 0) return field_error(name, "must be a number of seconds >= 0");
  }
  TESSERA_RETURN_IF_ERROR(get_integer(j, "batches", true, p.batches));
  if (p.batches < 1) return field_error("batches", "must be at least 1");
  auto it = sessions.find(session);
  if (it == sessions.end())
    return Status(ErrorCode::kParseError, "session " + std::to_string(session) + " is not declared on an earlier line");
  p.session_id = it->second;
  return p;
}

// The error of a malformed phase_times line: unlike a malformed record, it
// stops the import (see check_phase_time_lines).
Status phase_times_error(int64_t number, const Status& st) {
  return Status(ErrorCode::kParseError, "line " + std::to_string(number) + ": a phase_times line: " + st.message());
}

// Checks every phase_times line of `in` before the import stores anything: a
// session's split is imported whole or not at all, never with a line of it
// silently skipped. Only lines that may be one, or may declare the session
// one refers to, are parsed; a line that is not a JSON object is left to the
// import, which skips and reports it.
Status check_phase_time_lines(std::istream& in) {
  std::map<int64_t, int64_t> declared;  // session ids of the file, mapped to themselves
  std::string text;
  int64_t number = 0;
  while (std::getline(in, text)) {
    ++number;
    const bool phase = text.find("phase_times") != std::string::npos;
    if (!phase && text.find("command_line") == std::string::npos) continue;
    if (json_too_deep(text)) continue;  // the import skips and reports it
    const Json j = Json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    auto type = j.find("type");
    if (type == j.end() || !type->is_string()) continue;
    if (*type == "session") {
      if (auto s = parse_session(j)) declared[s->id] = s->id;
    } else if (*type == "phase_times") {
      if (auto p = parse_phase_times(j, declared); !p)
        return Status(ErrorCode::kParseError,
                      phase_times_error(number, p.status()).message() + "; nothing of this import was stored");
    }
  }
  if (in.bad()) return Status(ErrorCode::kIOError, "reading line " + std::to_string(number + 1) + " failed");
  return Status::ok();
}

// Import state: records wait in a batch; workload and session lines are
// applied at once (a session must exist before records refer to it).
class Importer {
 public:
  Importer(Store& store, const ImportOptions& options) : store_(store), options_(options) {}

  Status line(int64_t number, std::string text) {
    report_.lines = number;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.find_first_not_of(" \t") == std::string::npos) return Status::ok();
    if (json_too_deep(text))
      return skip(number, "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    Json j;
    try {
      j = Json::parse(text);
    } catch (const Json::parse_error& e) {
      // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 9: ...".
      std::string what = e.what();
      auto at = what.find("column");
      return skip(number, "not valid JSON: " + (at == std::string::npos ? what : what.substr(at)));
    } catch (const Json::out_of_range& e) {
      // A number too large for a double (1e999): "[json.exception.out_of_range.406] number overflow
      // parsing '1e999'".
      std::string what = e.what();
      auto at = what.find("number overflow");
      return skip(number, "a JSON number out of range: " + (at == std::string::npos ? what : what.substr(at)));
    }
    if (!j.is_object()) return skip(number, "not a JSON object");
    std::string type = "record";
    if (Status st = get_string(j, "type", false, type); !st) return skip(number, st.message());
    if (type == "record") {
      auto r = parse_record(j, sessions_);
      if (!r) return skip(number, r.status().message());
      if (auto it = rekeyed_.find(r->workload_key); it != rekeyed_.end()) r->workload_key = it->second;
      batch_.push_back(std::move(r).value());
      if (static_cast<int64_t>(batch_.size()) >= options_.batch_size) return flush(number);
      return Status::ok();
    }
    if (type == "workload") {
      auto w = parse_workload(j);
      if (!w) return skip(number, w.status().message());
      // A file exported before keys were XXH3-128 (schema version 5): its
      // key and the records after it under that key get the new key, as the
      // schema migration rewrites a database.
      if (!w->dag_text.empty() && w->key == legacy_workload_key_of(w->dag_text)) {
        rekeyed_[w->key] = workload_key_of(w->dag_text);
        w->key = rekeyed_[w->key];
      }
      Status st = store_.add_workload(*w);
      if (st.code() == ErrorCode::kInvalidArgument) return skip(number, st.message());
      TESSERA_RETURN_IF_ERROR(st);
      ++report_.workloads;
      return Status::ok();
    }
    if (type == "session") {
      auto s = parse_session(j);
      if (!s) return skip(number, s.status().message());
      TESSERA_ASSIGN_OR_RETURN(int64_t id, store_.find_or_add_session(*s));
      sessions_[s->id] = id;
      ++report_.sessions;
      return Status::ok();
    }
    if (type == "phase_times") {
      // Checked before the import began; what fails here is what that check
      // could not see (a database error, or a type spelled with escapes).
      auto p = parse_phase_times(j, sessions_);
      if (!p) return phase_times_error(number, p.status());
      if (auto it = rekeyed_.find(p->workload_key); it != rekeyed_.end()) p->workload_key = it->second;
      TESSERA_RETURN_IF_ERROR(store_.merge_phase_times(*p).with_context("at line " + std::to_string(number)));
      ++report_.phase_times;
      return Status::ok();
    }
    return skip(number, "unknown line type '" + type + "'");
  }

  Status flush(int64_t number) {
    if (batch_.empty()) return Status::ok();
    auto added = store_.append_unique(batch_);
    if (!added)
      return added.status().with_context("at line " + std::to_string(number) + ", after importing " +
                                         std::to_string(report_.records_added) + " records");
    report_.records_added += added->added;
    report_.duplicates += added->duplicates;
    batch_.clear();
    return Status::ok();
  }

  ImportReport take_report() { return std::move(report_); }

 private:
  Status skip(int64_t number, std::string message) {
    report_.errors.push_back(LineError{number, std::move(message)});
    return Status::ok();
  }

  Store& store_;
  ImportOptions options_;
  std::vector<Record> batch_;
  std::map<int64_t, int64_t> sessions_;         // session id in the file -> id in the store
  std::map<std::string, std::string> rekeyed_;  // a legacy workload key in the file -> its key now
  ImportReport report_;
};

}  // namespace

Result<ExportReport> export_jsonl(Store& store, std::ostream& out, const RecordFilter& filter) {
  ExportReport report;
  const bool everything = filter.workload_key.empty() && filter.target.empty() && !filter.ok_only;
  TESSERA_ASSIGN_OR_RETURN(std::vector<WorkloadInfo> workloads, store.workloads());
  for (const WorkloadInfo& w : workloads) {
    if (!filter.workload_key.empty() && w.key != filter.workload_key) continue;
    TESSERA_RETURN_IF_ERROR(write_line(out, workload_line(w)));
    ++report.workloads;
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<SessionInfo> sessions, store.sessions());
  std::map<int64_t, const SessionInfo*> by_id;
  for (const SessionInfo& s : sessions) by_id[s.id] = &s;
  std::set<int64_t> written;
  // A full export keeps sessions without records too; a filtered one writes a
  // session just before the first record that refers to it.
  if (everything) {
    for (const SessionInfo& s : sessions) {
      TESSERA_RETURN_IF_ERROR(write_line(out, session_line(s)));
      written.insert(s.id);
    }
  }
  RecordFilter in_order = filter;
  in_order.newest_first = false;
  TESSERA_RETURN_IF_ERROR(store.for_each(in_order, [&](const Record& r) -> Status {
    if (r.session_id != 0 && !written.count(r.session_id)) {
      auto it = by_id.find(r.session_id);
      if (it != by_id.end()) TESSERA_RETURN_IF_ERROR(write_line(out, session_line(*it->second)));
      written.insert(r.session_id);
    }
    TESSERA_RETURN_IF_ERROR(write_line(out, record_line(r)));
    ++report.records;
    return Status::ok();
  }));
  report.sessions = static_cast<int64_t>(written.size());
  // The phase times of the sessions written, last: each session is declared by then.
  TESSERA_ASSIGN_OR_RETURN(std::vector<PhaseTimes> phases, store.phase_times());
  for (const PhaseTimes& p : phases) {
    if (!written.count(p.session_id) || !by_id.count(p.session_id)) continue;
    if (!filter.workload_key.empty() && p.workload_key != filter.workload_key) continue;
    if (!filter.target.empty() && p.target != filter.target) continue;
    TESSERA_RETURN_IF_ERROR(write_line(out, phase_times_line(p)));
    ++report.phase_times;
  }
  out.flush();
  if (!out) return Status(ErrorCode::kIOError, "writing the export failed");
  return report;
}

Result<ImportReport> import_jsonl(Store& store, std::istream& in, const ImportOptions& options) {
  if (options.batch_size < 1) return Status(ErrorCode::kInvalidArgument, "batch size must be >= 1");
  // Two passes (check_phase_time_lines, then the import): a stream that
  // cannot seek back, such as a pipe, is read into memory first.
  std::stringstream copy;
  std::istream* source = &in;
  std::streampos start = in.tellg();
  if (start == std::streampos(-1)) {
    in.clear();
    copy << in.rdbuf();
    if (in.bad()) return Status(ErrorCode::kIOError, "reading the input failed");
    copy.clear();
    source = &copy;
    start = 0;
  }
  TESSERA_RETURN_IF_ERROR(check_phase_time_lines(*source));
  // One transaction: an import that fails halfway (a read error, a full
  // disk, a database error) leaves no workload, session or record behind.
  // A busy database runs it again from the first line.
  ImportReport report;
  TESSERA_RETURN_IF_ERROR(store.atomically([&]() -> Status {
    source->clear();
    source->seekg(start);
    if (!*source) return Status(ErrorCode::kIOError, "cannot read the input a second time");
    Importer importer(store, options);
    std::string text;
    int64_t number = 0;
    while (std::getline(*source, text)) TESSERA_RETURN_IF_ERROR(importer.line(++number, std::move(text)));
    if (source->bad()) return Status(ErrorCode::kIOError, "reading line " + std::to_string(number + 1) + " failed");
    TESSERA_RETURN_IF_ERROR(importer.flush(number));
    report = importer.take_report();
    return Status::ok();
  }));
  return report;
}

Result<ExportReport> export_jsonl_file(Store& store, const std::string& path, const RecordFilter& filter) {
  // Written beside `path` and renamed over it once whole: a failed export
  // (a full disk, a database error) leaves no partial file, and a file
  // already at `path` as it was.
  const std::string partial = path + ".partial." + std::to_string(::getpid());
  auto fail = [&](Status st) {
    std::remove(partial.c_str());
    return st;
  };
  std::ofstream out(partial, std::ios::binary | std::ios::trunc);
  if (!out) return Status(ErrorCode::kIOError, path + ": cannot open for writing");
  auto report = export_jsonl(store, out, filter);
  if (!report) return fail(report.status().with_context(path));
  out.close();
  if (!out) return fail(Status(ErrorCode::kIOError, path + ": writing failed"));
  if (std::rename(partial.c_str(), path.c_str()) != 0)
    return fail(Status(ErrorCode::kIOError, path + ": cannot replace it: " + std::strerror(errno)));
  return report;
}

Result<ImportReport> import_jsonl_file(Store& store, const std::string& path, const ImportOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(ErrorCode::kNotFound, path + ": cannot open for reading");
  auto report = import_jsonl(store, in, options);
  if (!report) return report.status().with_context(path);
  return report;
}

}  // namespace tessera::records
