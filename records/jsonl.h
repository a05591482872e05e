// JSON Lines export and import of a records database: one JSON object a line,
// with stable field names (docs/records.md lists them). A file moves records
// between machines and versions; importing it de-duplicates, so importing the
// same file twice adds nothing the second time.
#pragma once

#include <cstdint>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "base/status.h"
#include "records/store.h"

namespace tessera::records {

/// What export_jsonl wrote.
struct ExportReport {
  int64_t workloads = 0;
  int64_t sessions = 0;
  int64_t records = 0;
  int64_t phase_times = 0;  ///< phase_times lines: one per (session, workload, target) written
};

/// Writes the records that pass `filter` (in insertion order), preceded by the
/// workloads and sessions they need and followed by those sessions' phase
/// times (of the filter's workload and target). With an empty filter every
/// workload and session is written, so that importing the file into an empty
/// database reproduces this one. kIOError when the stream fails.
Result<ExportReport> export_jsonl(Store& store, std::ostream& out, const RecordFilter& filter = {});

/// A line of an import that was skipped, and why. Lines count from 1.
struct LineError {
  int64_t line = 0;
  std::string message;
};

/// What import_jsonl did.
struct ImportReport {
  int64_t lines = 0;
  int64_t records_added = 0;
  int64_t duplicates = 0;         ///< records already stored (same workload, target, steps, costs, timestamp)
  int64_t workloads = 0;          ///< workload lines applied
  int64_t sessions = 0;           ///< session lines applied (matched or added)
  int64_t phase_times = 0;        ///< phase_times lines applied (merged: see Store::merge_phase_times)
  std::vector<LineError> errors;  ///< malformed lines; every other line was imported
};

/// Import settings.
struct ImportOptions {
  int64_t batch_size = 1000;  ///< records per transaction
};

/// Reads JSON Lines from `in` into `store`. A malformed line is reported in the
/// report's errors with its line number and skipped; the good lines are imported.
/// A malformed phase_times line is the exception: kParseError naming its line,
/// and nothing of the import is stored (every such line is checked first).
/// A database error (locked, full, read-only) stops the import and is returned;
/// the batches committed before it stay.
Result<ImportReport> import_jsonl(Store& store, std::istream& in, const ImportOptions& options = {});

/// export_jsonl to a file (replaced if present). kIOError when it cannot be written.
Result<ExportReport> export_jsonl_file(Store& store, const std::string& path, const RecordFilter& filter = {});
/// import_jsonl from a file. kNotFound when it cannot be opened.
Result<ImportReport> import_jsonl_file(Store& store, const std::string& path, const ImportOptions& options = {});

}  // namespace tessera::records
