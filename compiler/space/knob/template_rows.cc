// The row template: softmax and layer_norm (compiler/ops/reduction.h) as a
// model fuses them, and any DAG of their shape: reduction stages over the
// output's trailing axes (kept with extent 1: the row statistics) and one
// output of the input's shape that combines them with the input, maybe with
// elementwise stages before or after.
//
// Rows run in parallel blocks. Every statistic of a row (softmax's max and
// exp-sum, layer_norm's sum and squared deviations) is computed at the row
// block, right before the block is written, so the block is read from
// memory once and from L1 after; one that only another statistic's stage
// reads (softmax's max, read by exp) goes at that reader's row. A stage
// between two statistics (softmax's exp(x - max) as compiler/graph builds
// it, summed and divided) is stored for the block, vectorized along the
// row, so exp runs once per element. The generic schedule computes every
// statistic at the root, reading the input column-wise to vectorize across
// rows. The write-back is vectorized along the row.
//
// Knobs: tile_rows [outer, rows per block] (of the innermost row axis),
// tile_cols [outer, vector width].
#include <algorithm>

#include "compiler/space/knob/template_families.h"
#include "compiler/space/knob/template_util.h"

namespace tessera::template_detail {
namespace {

struct Rows {
  std::string out;                      // the DAG's output
  std::vector<std::string> statistics;  // reductions, in DAG order
  std::vector<std::string> inlined;     // other computed stages, but:
  std::vector<std::string> stored;      // those that read a statistic and feed another (softmax's exp)
  int row_axes = 0;                     // leading axes of `out` that index rows
  int64_t rows = 1, cols = 1;
  int64_t last_row_extent = 1;  // the innermost row axis, split by tile_rows
  DType dtype;
};

Status rows_error(const std::string& why) {
  return Status(ErrorCode::kInvalidArgument, "template rows: " + why);
}

// The number of leading axes a statistic of `shape` keeps from `out`: after
// them every extent is 1; -1 when it is not of that form.
int kept_axes(const std::vector<int64_t>& shape, const std::vector<int64_t>& out) {
  if (shape.size() != out.size()) return -1;
  int kept = static_cast<int>(shape.size());
  while (kept > 0 && shape[static_cast<size_t>(kept) - 1] == 1 && out[static_cast<size_t>(kept) - 1] != 1) --kept;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d)
    if (d < kept ? shape[static_cast<size_t>(d)] != out[static_cast<size_t>(d)] : shape[static_cast<size_t>(d)] != 1)
      return -1;
  return kept;
}

Result<Rows> analyze(const ComputeDAG& dag) {
  Rows r;
  Tensor output;
  for (const Tensor& t : dag.tensors()) {
    if (!compute_op(t) || !dag.is_output(t)) continue;
    if (output.defined()) return rows_error("the DAG has more than one output");
    output = t;
  }
  if (!output.defined()) return rows_error("the DAG has no computed output");
  if (!compute_op(output)->reduce_axes.empty()) return rows_error("the output " + output->name + " is a reduction");
  r.out = output->name;
  r.dtype = output->dtype;
  const std::vector<int64_t>& shape = output->shape;
  r.row_axes = -1;
  for (const Tensor& t : dag.tensors()) {
    const ComputeOpNode* op = compute_op(t);
    if (!op || t->name == r.out) continue;
    if (op->reduce_axes.empty()) {
      r.inlined.push_back(t->name);
      continue;
    }
    const int kept = kept_axes(t->shape, shape);
    if (kept < 1 || (r.row_axes >= 0 && kept != r.row_axes))
      return rows_error("reduction " + t->name + " is not a per-row statistic of " + r.out + "'s trailing axes");
    r.row_axes = kept;
    r.statistics.push_back(t->name);
  }
  if (r.statistics.empty()) return rows_error("the DAG has no per-row statistic");
  // A stage between two statistics (exp(x - max), summed and then divided)
  // is stored whole rather than inlined into both readers, which would
  // evaluate it twice.
  auto reads = [&](const std::string& reader, const std::vector<std::string>& names) {
    for (const Tensor& t : dag.tensors()) {
      if (t->name != reader) continue;
      for (const Tensor& in : input_tensors(t))
        if (std::find(names.begin(), names.end(), in->name) != names.end()) return true;
    }
    return false;
  };
  std::vector<std::string> inlined;
  for (const std::string& stage : r.inlined) {
    bool feeds_statistic = false;
    for (const std::string& stat : r.statistics) feeds_statistic = feeds_statistic || reads(stat, {stage});
    (feeds_statistic && reads(stage, r.statistics) ? r.stored : inlined).push_back(stage);
  }
  r.inlined = std::move(inlined);
  for (size_t d = 0; d < shape.size(); ++d) (static_cast<int>(d) < r.row_axes ? r.rows : r.cols) *= shape[d];
  r.last_row_extent = shape[static_cast<size_t>(r.row_axes) - 1];
  return r;
}

// Vectorizes `col` of `stage` by `width` (the tile_cols knob's vector): a
// width that does not divide the row leaves a masked remainder. Row-sized
// divisors of a row of 77 are 7 and 11: vectorize_by_divisor left softmax's
// exp scalar (3x the time of the vectorized rows of 128).
Status vectorize_columns(Sched& s, const std::string& stage, const Var& col, int64_t width) {
  if (width <= 1) return Status::ok();
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> cv, s.split(stage, col, {width}));
  return s.annotate(stage, cv[1], IterAnnotation::kVectorize);
}

// The reduce axis of statistic `stat` that apply_rows splits into vector-wide
// partial sums: its innermost, when it holds at least two vectors (where
// whole vectors do not divide it, the partial sums past its end add the
// reduction's identity, their loads masked). A statistic summed one element
// at a time is a chain of dependent adds: layer_norm's two sums over 384
// columns ran at 8 GFLOP/s, softmax's max and sum over 6625 classes took
// 0.36 ms of a 7.8 ms recognizer.
int partials_axis(const ComputeDAG& dag, const std::string& stat, int64_t lanes) {
  for (const Tensor& t : dag.tensors()) {
    const ComputeOpNode* op = t->name == stat ? compute_op(t) : nullptr;
    if (!op || op->reduce_axes.empty()) continue;
    const int64_t extent = op->reduce_axes.back()->extent;
    return lanes > 1 && extent >= 2 * lanes ? static_cast<int>(op->reduce_axes.size()) - 1 : -1;
  }
  return -1;
}

// Places `stat`'s partial sums (stat + ".rf", [lanes, row...]) at `loop` of
// `at`, where one row's are a vector: their reduce loops outside, the
// vector of partial sums innermost and vectorized.
Status place_partials(Sched& s, const std::string& stat, const std::string& at, const Var& loop) {
  const std::string rf = stat + ".rf";
  TESSERA_RETURN_IF_ERROR(s.compute_at(rf, at, loop));
  return s.vectorize_partial_results(rf);
}

// The stages that read `stage` as the schedule places them: an inlined
// reader stands for its own readers (a layer norm's output, inlined into
// the scale and shift after it, stands for the output that reads them).
std::vector<std::string> scheduled_readers(const ComputeDAG& dag, const Rows& r, const std::string& stage) {
  std::vector<std::string> readers;
  for (const Tensor& t : dag.tensors()) {
    const std::vector<Tensor> inputs = input_tensors(t);
    if (std::none_of(inputs.begin(), inputs.end(), [&](const Tensor& in) { return in->name == stage; })) continue;
    const bool inlined = std::find(r.inlined.begin(), r.inlined.end(), t->name) != r.inlined.end();
    for (const std::string& reader : inlined ? scheduled_readers(dag, r, t->name) : std::vector{t->name})
      if (std::find(readers.begin(), readers.end(), reader) == readers.end()) readers.push_back(reader);
  }
  return readers;
}

}  // namespace

Result<KnobSpace> define_rows(const ComputeDAG& dag, const Target& target) {
  TESSERA_ASSIGN_OR_RETURN(Rows r, analyze(dag));
  const int64_t lanes = target.vector_lanes(r.dtype);
  KnobSpace space;
  TESSERA_RETURN_IF_ERROR(space.define_split("tile_rows", r.last_row_extent, SplitPolicy::tiles(), 2));
  TESSERA_RETURN_IF_ERROR(
      space.define_split("tile_cols", r.cols, SplitPolicy::tiles(), 2, vector_split_filter(r.cols, lanes)));
  return space;
}

Status apply_rows(const KnobConfig& cfg, const Target& target, State* state) {
  TESSERA_ASSIGN_OR_RETURN(Rows r, analyze(state->dag()));
  Sched s(state);
  for (const std::string& stage : r.inlined) TESSERA_RETURN_IF_ERROR(s.compute_inline(stage));
  const int64_t lanes = target.vector_lanes(r.dtype);
  std::vector<bool> partials(r.statistics.size(), false);
  for (size_t i = 0; i < r.statistics.size(); ++i) {
    const int axis = partials_axis(state->dag(), r.statistics[i], lanes);
    if (axis < 0) continue;
    TESSERA_RETURN_IF_ERROR(s.rfactor(r.statistics[i], axis, lanes));
    partials[i] = true;
  }
  // out: rows... r cols... -> (rows... r.0) parallel, r.1, col.0, col.1
  // vectorized. Only the innermost row axis is split, so a row's index stays
  // linear in the loops and bound inference gives each statistic one row.
  const std::vector<Var> loops = s.loops(r.out);
  std::vector<Var> outer(loops.begin(), loops.begin() + r.row_axes - 1);
  const std::vector<Var> col_loops(loops.begin() + r.row_axes, loops.end());
  Var col = col_loops[0];
  if (col_loops.size() > 1) {
    TESSERA_ASSIGN_OR_RETURN(col, s.fuse(r.out, col_loops));
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> rb, s.split(r.out, loops[r.row_axes - 1], {cfg.get("tile_rows")[1]}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> cv, s.split(r.out, col, {cfg.get("tile_cols")[1]}));
  outer.push_back(rb[0]);
  Var blocks = outer[0];
  if (outer.size() > 1) {
    TESSERA_ASSIGN_OR_RETURN(blocks, s.fuse(r.out, outer));
  }
  TESSERA_RETURN_IF_ERROR(s.annotate(r.out, blocks, IterAnnotation::kParallel));
  if (cfg.get("tile_cols")[1] > 1) TESSERA_RETURN_IF_ERROR(s.annotate(r.out, cv[1], IterAnnotation::kVectorize));
  // Every statistic, and a stage stored between two (softmax's exp), is
  // computed at the row block, right before it is written: the block is
  // read from memory once and from L1 after. Readers are placed before what
  // they read (a stage's readers must already run inside its loop).
  std::vector<std::string> at_rows;
  for (const Tensor& t : state->dag().tensors()) {
    const bool stat = std::find(r.statistics.begin(), r.statistics.end(), t->name) != r.statistics.end();
    if (stat || std::find(r.stored.begin(), r.stored.end(), t->name) != r.stored.end()) at_rows.push_back(t->name);
  }
  for (auto it = at_rows.rbegin(); it != at_rows.rend(); ++it) {
    const std::string& stage = *it;
    // At the output's row block where the output reads it; else at the one
    // row of its one reader (softmax's max, which only exp reads).
    const std::vector<std::string> readers = scheduled_readers(state->dag(), r, stage);
    if (std::find(readers.begin(), readers.end(), r.out) != readers.end() || readers.size() != 1) {
      TESSERA_RETURN_IF_ERROR(s.compute_at(stage, r.out, rb[1]));
    } else {
      const std::vector<Var> reader_loops = s.loops(readers[0]);
      TESSERA_RETURN_IF_ERROR(s.compute_at(stage, readers[0], reader_loops[static_cast<size_t>(r.row_axes) - 1]));
    }
    const size_t i =
        static_cast<size_t>(std::find(r.statistics.begin(), r.statistics.end(), stage) - r.statistics.begin());
    if (i == r.statistics.size()) {  // stored: vectorized along the row
      const std::vector<Var> loops = s.loops(stage);
      const std::vector<Var> cols(loops.begin() + r.row_axes, loops.end());
      Var col = cols[0];
      if (cols.size() > 1) {
        TESSERA_ASSIGN_OR_RETURN(col, s.fuse(stage, cols));
      }
      TESSERA_RETURN_IF_ERROR(vectorize_columns(s, stage, col, cfg.get("tile_cols")[1]));
    } else if (partials[i]) {
      // At the statistic's innermost row loop (one row: the loops of its
      // row axes, which bound inference gives extent 1, then its reduce).
      const size_t rank = s.state().stage(s.state().stage_index(stage)).axes.size();
      TESSERA_RETURN_IF_ERROR(place_partials(s, stage, stage, s.loops(stage)[rank - 1]));
    }
  }
  return Status::ok();
}

Result<KnobConfig> fallback_rows(const KnobSpace& space, const ComputeDAG& dag, const Target& target) {
  TESSERA_ASSIGN_OR_RETURN(Rows r, analyze(dag));
  const int64_t lanes = target.vector_lanes(r.dtype);
  // Blocks of about 4k elements (a parallel task worth its launch, 16 KiB of
  // float rows in L1), written a few vectors at a time.
  const int64_t rows_per_block = std::max<int64_t>(1, 4096 / r.cols);
  return nearest_config(space,
                        {{"tile_rows", {0, rows_per_block}},
                         {"tile_cols", {0, preferred_vector_width(innermost_sizes(*space.find("tile_cols")), lanes)}}});
}

}  // namespace tessera::template_detail
