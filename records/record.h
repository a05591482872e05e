// The data that records/ stores: workloads, tuning sessions and measurement
// records. The compiler's notions (workload keys, step lists, targets, knob
// configurations) are opaque data here: strings and JSON text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tessera::records {

/// Which search space produced a record's schedule.
enum class SpaceKind { kKnob, kSketch, kManual };

/// "knob", "sketch" or "manual": the spelling stored in the database and in JSON Lines.
const char* space_kind_name(SpaceKind kind);
/// Parses a space kind name; kInvalidArgument for anything else.
Result<SpaceKind> parse_space_kind(std::string_view name);

/// The error kind of a successful measurement. Other kinds are kebab-case words
/// chosen by the measurer ("invalid-schedule", "build-timeout", "crash", ...).
inline constexpr std::string_view kErrorOk = "ok";

/// A tensor computation, described for people and for GFLOP/s figures. The key
/// identifies it; every other field is informational and may be empty.
struct WorkloadInfo {
  std::string key;        ///< 32 lowercase hex characters, from the compiler
  std::string dag_text;   ///< canonical ComputeDAG text
  std::string op_name;    ///< e.g. "matmul"
  std::string shapes;     ///< e.g. "1024x1024 1024x1024 -> 1024x1024 float32" (arguments: inputs -> outputs)
  double flop_count = 0;  ///< floating-point operations per run; 0 when unknown

  bool operator==(const WorkloadInfo&) const = default;
};

/// Provenance of a tuning run: every record it produces points at it.
struct SessionInfo {
  int64_t id = 0;  ///< assigned by the store; 0 before begin_session
  std::string command_line;
  std::string host;
  std::string tool_version;
  std::string llvm_version;
  int64_t seed = 0;
  double started = 0;           ///< Unix seconds; 0 means "now" at begin_session
  std::optional<double> ended;  ///< Unix seconds; empty while the session runs

  bool operator==(const SessionInfo&) const = default;
};

/// Where a tuning session's time went on one (workload, target), as the tuner
/// clocked it (wall seconds, summed over its batches): proposing candidates
/// and learning from results (search), building, measuring (queueing
/// included) and writing records (store).
struct PhaseTimes {
  int64_t session_id = 0;
  std::string workload_key;
  std::string target;
  double search_seconds = 0, build_seconds = 0, measure_seconds = 0, store_seconds = 0;
  int64_t batches = 0;  ///< batches these times add up

  bool operator==(const PhaseTimes&) const = default;
};

/// One region of a model that an external backend can run, timed both ways
/// on one target: the backend's code, and Tessera's kernels for the same
/// operators (as the records stood, `tessera_basis`). `tessera compile
/// --byoc auto` runs the region where it was faster, as long as the records
/// behind Tessera's time have not changed since.
struct RegionTime {
  int64_t id = 0;              ///< assigned by the store; 0 before add_region_time
  std::string region_key;      ///< 32 lowercase hex characters: the region's code, from the compiler
  std::string backend;         ///< "dnnl"
  std::string target;          ///< the target both ways ran on
  std::string operators;       ///< the region's operators, comma-separated, for people
  double backend_seconds = 0;  ///< median of the backend's call
  double tessera_seconds = 0;  ///< sum of the medians of Tessera's calls for the same operators
  std::string tessera_basis;   ///< which of Tessera's schedules were timed (the compiler's digest)
  /// Where the region runs, as decided: usually where it was faster, but the
  /// whole model's time may overrule that (compiler/model/choose_byoc.h).
  bool on_backend = false;
  int64_t session_id = 0;  ///< the tuning session that measured it; 0: none
  double timestamp = 0;    ///< Unix seconds; 0 means "now" at add_region_time

  bool operator==(const RegionTime&) const = default;
};

/// A workload's best record checked in the model it was tuned for, after
/// the tuning: the model's calls of that workload timed with the record's
/// schedule and with the fallback an untuned compile gives (alternating
/// runs, each call's median, summed over the workload's calls). A record
/// measured alone can lose in the model (a winner of noise, or caches the
/// model's other kernels share); while it is still the workload's best,
/// compile keeps the fallback when `keeps_fallback`.
struct ModelCheck {
  int64_t id = 0;               ///< assigned by the store; 0 before add_model_check
  std::string workload_key;     ///< 32 lowercase hex characters
  std::string target;           ///< the target both ran on
  int64_t record_id = 0;        ///< the record checked (the workload's best then)
  double record_seconds = 0;    ///< the workload's calls in the model with the record's schedule
  double fallback_seconds = 0;  ///< the same calls with the untuned compile's schedule
  bool keeps_fallback = false;  ///< the record lost: compile uses the fallback while it is the best
  int64_t session_id = 0;       ///< the tuning session that checked it; 0: none
  double timestamp = 0;         ///< Unix seconds; 0 means "now" at add_model_check

  bool operator==(const ModelCheck&) const = default;
};

/// One measurement of one schedule of one workload on one target, good or bad.
struct Record {
  int64_t id = 0;            ///< assigned by the store; 0 before append
  std::string workload_key;  ///< 32 lowercase hex characters
  std::string target;        ///< e.g. "llvm -mtriple=x86_64-linux-gnu -mcpu=icelake-server"
  std::string device_key;    ///< which device (kind) ran it, e.g. "x86-icelake"; may be empty
  SpaceKind space = SpaceKind::kSketch;
  std::string steps_json;        ///< a JSON array of step objects (stored in canonical form)
  std::string knob_config_json;  ///< a JSON value, or empty when the space has no knobs
  std::vector<double> costs;     ///< seconds per repeat; non-empty when error_kind is "ok"
  std::string error_kind{kErrorOk};
  std::string error_message;
  double build_seconds = 0;
  double run_seconds = 0;
  double timestamp = 0;    ///< Unix seconds; 0 means "now" at append
  int64_t session_id = 0;  ///< 0 when the record belongs to no session
  /// True when the kernel's output was compared with a reference before it
  /// was timed (a wrong one is error_kind "wrong-answer"); false for records
  /// measured without a check and for records from before checks were kept.
  bool checked = false;
  /// True when the error is the measuring infrastructure's, not the schedule's
  /// (no worker, tracker unreachable, job lost, deadline passed before a
  /// worker took the job, protocol errors): such a record says nothing about
  /// the schedule, so it never counts as measured and is measured again on
  /// resume. Never true for an ok record.
  bool infrastructure = false;
  /// The id of the worker that measured it, as the tracker knows it (empty:
  /// nobody did, e.g. a build error, or a record from before workers were kept).
  std::string worker;
  /// That worker's CURVE public key (Z85); empty on plaintext farms.
  std::string worker_key;

  /// True when the measurement succeeded.
  bool ok() const { return error_kind == kErrorOk; }
  /// Mean of the costs in seconds; +infinity when there are none.
  double mean_cost() const;

  bool operator==(const Record&) const = default;
};

/// Per (workload, target) figures; costs on different targets do not compare.
struct WorkloadStats {
  std::string workload_key;
  std::string target;
  std::string op_name;    ///< from the workloads table; empty when not registered
  std::string shapes;     ///< from the workloads table; empty when not registered
  double flop_count = 0;  ///< 0 when unknown
  int64_t count = 0;      ///< records, good and bad
  int64_t ok_count = 0;
  int64_t infrastructure_count = 0;  ///< of `count`, infrastructure errors (Record::infrastructure)
  std::optional<double> best_cost;   ///< lowest mean cost of an ok record, seconds
  double last_timestamp = 0;
};

/// "Best", one definition for the tune summary, `records best` and compile:
/// the ok record with the lowest mean cost, whatever produced it (the untuned
/// default "[]" and the baselines compete like every candidate); a tie goes to
/// the earlier record (lower id, then earlier in `records`). Store::best_k
/// orders by the same rule. Null when no record is ok.
const Record* best_of(const std::vector<Record>& records);

/// Whether an error was the infrastructure's, told from its kind and message:
/// "no-worker", "protocol-error", "no-result" (the runner's deadline passed),
/// "measurement-error" (a worker's result that cannot be true), and
/// a "timeout" whose message says no result came from the farm (how the runner's
/// deadline was reported before "no-result"). Classifies records stored before
/// Record::infrastructure existed (old JSON Lines; the schema migration's SQL
/// says the same).
bool is_infrastructure_error(std::string_view error_kind, std::string_view error_message);

/// True for 32 lowercase hexadecimal characters.
bool is_valid_workload_key(std::string_view key);

/// Parses `json` and prints it in the one form the store keeps: compact, object
/// keys sorted. Two spellings of the same JSON value canonicalize equally.
/// kInvalidArgument naming `what` when the text is not JSON.
Result<std::string> canonical_json(std::string_view json, std::string_view what);

/// The deepest nesting of arrays and objects a stored JSON text may have:
/// schedules and knob configurations need a few levels. Deeper text is
/// refused before it is parsed (parsing and printing it recurse a level at a
/// time: 100,000 levels overflowed the stack).
inline constexpr int kMaxJsonDepth = 64;

/// Whether `json` nests arrays and objects deeper than kMaxJsonDepth
/// (brackets inside strings do not count).
bool json_too_deep(std::string_view json);

/// True when `json` is already in the form canonical_json prints (the fast path
/// of canonical_json; false may also mean "not sure").
bool is_canonical_json(std::string_view json);

/// A stable 64-bit hash (MurmurHash64A, seed 0x5453524453544550, little-endian
/// loads) of canonical step-list text, for de-dup lookups. Stored in databases:
/// never change it.
int64_t steps_hash(std::string_view canonical_steps);

/// Checks what append() requires of a record and returns it in stored form:
/// steps and knob config canonical, timestamp filled in with `now` when 0.
Result<Record> normalize_record(Record record, double now);

/// The current time in Unix seconds.
double unix_now();

}  // namespace tessera::records
