// Store: every measurement of every tuning run, in one SQLite file.
//
// Several processes may write one database at once (WAL mode; writers wait for
// the lock and retry with backoff). A batch appended in one call is committed
// whole or not at all, also when the writer is killed. Nothing here aborts on
// bad input: files, locks and disks that say no become error values.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "records/record.h"

namespace tessera::records {

/// How Store::open treats the file.
struct OpenOptions {
  bool read_only = false;      ///< never write; the schema must already be current
  bool create = true;          ///< create the file when it does not exist (writable opens only)
  int busy_timeout_ms = 5000;  ///< how long one statement waits for another writer's lock
  int max_retries = 8;         ///< retries of a whole transaction that still found the lock taken
  int64_t max_size_bytes = 0;  ///< a quota for the file; writes beyond it fail as "full". 0: none
};

/// Which records for_each() and list() visit.
struct RecordFilter {
  std::string workload_key;          ///< empty: every workload
  std::string target;                ///< empty: every target
  bool ok_only = false;              ///< only successful measurements
  bool infrastructure_only = false;  ///< only infrastructure errors (Record::infrastructure)
  std::string worker;                ///< empty: every worker; otherwise only what this worker id measured
  bool newest_first = false;         ///< by timestamp, newest first; otherwise in insertion order
  int64_t limit = 0;                 ///< at most this many; 0: all
};

/// What prune() keeps: the best `keep_k` ok records of every (workload, target),
/// every error younger than the age limit.
struct PruneOptions {
  int64_t keep_k = 10;                                   ///< >= 1
  std::optional<double> drop_errors_older_than_seconds;  ///< empty: keep every error
  bool drop_infrastructure = false;                      ///< drop every infrastructure error, whatever its age
  std::string drop_worker;                               ///< non-empty: drop every record this worker id measured
  double now = 0;                                        ///< Unix seconds; 0: the current time
  /// Count what would go, and roll the deletion back: the database is left
  /// as it was.
  bool dry_run = false;
};

/// What prune() removed.
struct PruneReport {
  int64_t dropped_ok = 0;              ///< ok records beyond the best k
  int64_t dropped_errors = 0;          ///< error records older than the limit
  int64_t dropped_infrastructure = 0;  ///< infrastructure errors (drop_infrastructure)
  int64_t dropped_worker = 0;          ///< records of PruneOptions::drop_worker
};

/// What append_unique() did with a batch.
struct AppendReport {
  int64_t added = 0;
  int64_t duplicates = 0;  ///< already stored with the same steps, costs and timestamp
};

/// A records database. One Store is one connection: use it from one thread at a
/// time; open one Store per thread or process. Move-only.
class Store {
 public:
  /// Opens (and when writable, creates and migrates) the database at `path`.
  /// Errors: kNotFound (no file and !create), kDatabaseError (not SQLite, another
  /// program's database, a newer schema), kIOError (the file is not writable and
  /// read_only was not asked), kUnavailable (locked past the retries).
  static Result<Store> open(const std::string& path, const OpenOptions& options = {});

  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  ~Store();

  const std::string& path() const;

  /// Registers a workload, or fills in fields that were empty/zero for its key.
  Status add_workload(const WorkloadInfo& workload);
  /// The workload registered under `key`, or nullopt.
  Result<std::optional<WorkloadInfo>> workload(const std::string& key);
  /// Every registered workload, by key.
  Result<std::vector<WorkloadInfo>> workloads();

  /// Starts a tuning session and returns its id (info.id is ignored).
  Result<int64_t> begin_session(const SessionInfo& info);
  /// Marks session `id` ended at `ended` (0: now). kNotFound for an unknown id.
  Status end_session(int64_t id, double ended = 0);
  /// Every session, by id.
  Result<std::vector<SessionInfo>> sessions();
  /// The id of a session equal to `info` in every field but id and ended, adding
  /// it when there is none (used by import to keep provenance without copies).
  Result<int64_t> find_or_add_session(const SessionInfo& info);

  /// Adds one batch's times to what (session, workload, target) has
  /// (PhaseTimes::batches counts the calls). kInvalidArgument for a negative
  /// or non-finite time, a bad key, or session 0.
  Status add_phase_times(const PhaseTimes& times);
  /// Every session's phase times, by session, workload and target. Empty for
  /// a database of schema 6 opened read-only (the table came with version 7).
  Result<std::vector<PhaseTimes>> phase_times();

  // Import of phase times (records/jsonl.cc).
  /// Sets the times of (session, workload, target) to `times`, batches
  /// included, unless the store already holds as many batches or more for
  /// it: importing a file twice, or an older export of the same session,
  /// changes nothing. The same checks as add_phase_times, and batches >= 1.
  Status merge_phase_times(const PhaseTimes& times);

  /// Stores one region's times (RegionTime::id is ignored). kInvalidArgument
  /// for a bad region key, an empty backend or basis, a negative or
  /// non-finite time.
  Status add_region_time(const RegionTime& time);
  /// The newest time of `region_key` on `target` through `backend`, or
  /// nullopt. Empty for a database older than schema 8 opened read-only.
  Result<std::optional<RegionTime>> latest_region_time(const std::string& region_key, const std::string& target,
                                                       const std::string& backend);
  /// Every region time, oldest first.
  Result<std::vector<RegionTime>> region_times();

  /// Stores one model check (ModelCheck::id is ignored). kInvalidArgument
  /// for a bad workload key, record id 0, a negative or non-finite time.
  Status add_model_check(const ModelCheck& check);
  /// The newest check of `workload_key` on `target`, or nullopt. Empty for
  /// a database older than schema 9 opened read-only.
  Result<std::optional<ModelCheck>> latest_model_check(const std::string& workload_key, const std::string& target);
  /// Every model check, oldest first.
  Result<std::vector<ModelCheck>> model_checks();

  /// Runs `body`, calls to this Store, in one write transaction: everything
  /// they write is stored, or nothing when `body` fails (an import that
  /// fails halfway leaves no session or record behind). The write lock is
  /// held throughout; a busy database runs `body` again, so it must be safe
  /// to run again.
  Status atomically(const std::function<Status()>& body);

  /// Appends a batch in one transaction: all of it is stored or none of it.
  /// kInvalidArgument (nothing stored) when any record is malformed; see
  /// normalize_record for what is checked.
  Status append(const std::vector<Record>& batch);
  /// Like append, but skips records equal to a stored one (same workload, target,
  /// steps, costs and timestamp), including earlier records of the same batch.
  Result<AppendReport> append_unique(const std::vector<Record>& batch);

  /// The k successful records of (workload, target) with the lowest mean cost,
  /// best first; ties go to the earlier record.
  Result<std::vector<Record>> best_k(const std::string& workload_key, const std::string& target, int64_t k);
  /// Every record of (workload, target), good and bad, oldest first.
  Result<std::vector<Record>> records_of(const std::string& workload_key, const std::string& target);
  /// Whether the step list was already measured for (workload, target), with any
  /// outcome but an infrastructure error. The steps may be spelled in any JSON layout.
  Result<bool> measured(const std::string& workload_key, const std::string& target, const std::string& steps_json);
  /// One row per (workload, target) that has records, ordered by workload then target.
  Result<std::vector<WorkloadStats>> stats();
  /// Number of records that pass `filter` (its order and limit are ignored).
  Result<int64_t> count(const RecordFilter& filter = {});
  /// Calls `visit` on each record that passes `filter`; stops at its first error.
  Status for_each(const RecordFilter& filter, const std::function<Status(const Record&)>& visit);
  /// The records that pass `filter`.
  Result<std::vector<Record>> list(const RecordFilter& filter);

  /// Drops ok records beyond the best keep_k of each (workload, target),
  /// infrastructure errors when asked, and errors older than the limit, in one
  /// transaction.
  Result<PruneReport> prune(const PruneOptions& options);

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::records
