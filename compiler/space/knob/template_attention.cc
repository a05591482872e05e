// The attention template: a kernel that fused an attention chain
// (compiler/graph/fuse_ops.h: the scores' MatMul, a scale or mask, the
// Softmax and the context MatMul). Without it the scores of every head make
// a round trip through memory three times (written by their product, read
// and written by the softmax, read by the context): 54 MB a layer for 1,500
// positions and 6 heads, most of a speech encoder's time.
//
// Here each parallel block is a block of rows of one head. The block's
// scores (rows x keys), their row statistics (max, exp-sum, in vectors of
// partial results), the exponentials and the probabilities are computed at
// the block, in buffers of their own that stay in L2, and the context rows
// are then summed over the keys: only Q, K, V and the context touch memory.
//
//   scores: a micro-kernel of `score_rows` rows x `score_cols` keys
//           (vectorized) over the head's width, the rows unrolled;
//   context: `context_rows` rows x the head's width (vectorized) over the
//           keys, the rows unrolled, accumulated in registers (a local copy
//           written out at the end of the block).
//
// Knobs: rows (a block's rows), score_rows, score_cols, context_rows.
#include <algorithm>

#include "compiler/space/knob/template_families.h"
#include "compiler/space/knob/template_util.h"

namespace tessera::template_detail {
namespace {

struct Attention {
  std::string out;                      // the context: a reduction over the keys
  std::string scores;                   // the scores: a reduction over the head's width
  std::vector<std::string> statistics;  // the softmax's per-row reductions (max, exp-sum)
  std::vector<std::string> stored;      // stages that read a statistic (exp, probabilities)
  std::vector<std::string> inlined;     // other stages (a scale, a mask, an operand's view)
  std::string keys_operand;             // the scores' key operand, when read transposed in place
  int keys_dim = -1;                    // its dimension indexed by the key
  int rank = 0;                         // of the output; rows are its axis rank - 2
  int64_t rows = 1, keys = 1, width = 1;
  DType dtype;
};

Status attention_error(const std::string& why) {
  return Status(ErrorCode::kInvalidArgument, "template attention: " + why);
}

bool reads_any(const Tensor& t, const std::vector<std::string>& names) {
  for (const Tensor& in : input_tensors(t))
    if (std::find(names.begin(), names.end(), in->name) != names.end()) return true;
  return false;
}

Result<Attention> analyze(const ComputeDAG& dag) {
  Attention a;
  Tensor output;
  for (const Tensor& t : dag.tensors()) {
    if (!compute_op(t) || !dag.is_output(t)) continue;
    if (output.defined()) return attention_error("the DAG has more than one output");
    output = t;
  }
  if (!output.defined()) return attention_error("the DAG has no computed output");
  const ComputeOpNode* out_op = compute_op(output);
  if (out_op->reduce_axes.size() != 1) return attention_error("the output " + output->name + " is not the context");
  a.out = output->name;
  a.dtype = output->dtype;
  a.rank = static_cast<int>(output->shape.size());
  if (a.rank < 3) return attention_error("the output has fewer than 3 axes");
  a.rows = output->shape[static_cast<size_t>(a.rank) - 2];
  a.width = output->shape[static_cast<size_t>(a.rank) - 1];
  a.keys = out_op->reduce_axes[0]->extent;
  for (const Tensor& t : dag.tensors()) {
    const ComputeOpNode* op = compute_op(t);
    if (!op || t->name == a.out) continue;
    if (op->reduce_axes.empty()) {
      (reads_any(t, a.statistics) ? a.stored : a.inlined).push_back(t->name);
    } else if (static_cast<int>(t->shape.size()) != a.rank) {
      return attention_error("reduction " + t->name + " is not of the output's rank");
    } else if (t->shape.back() == 1) {
      a.statistics.push_back(t->name);
    } else if (a.scores.empty() && t->shape.back() == a.keys) {
      a.scores = t->name;
    } else {
      return attention_error("reduction " + t->name + " is neither the scores nor a row statistic");
    }
  }
  if (a.scores.empty() || a.statistics.empty() || a.stored.empty())
    return attention_error("the DAG is not scores, a softmax and a context product");
  // Keys read in place from a head-split projection ([tokens, heads x
  // width]): along the keys they are a row apart, so the micro-kernel's
  // vector loads would be gathers. They are copied at the block, keys
  // innermost.
  for (const Tensor& t : dag.tensors()) {
    const ComputeOpNode* op = t->name == a.scores ? compute_op(t) : nullptr;
    const std::vector<Tensor> inputs = op ? input_tensors(t) : std::vector<Tensor>{};
    if (inputs.size() != 2 || compute_op(inputs[1])) continue;
    const auto r = static_cast<size_t>(a.rank);
    const ProductReads reads = product_reads(*op, inputs[0]->name, inputs[1]->name, op->axes[r - 2]->var,
                                             op->axes[r - 1]->var, op->reduce_axes[0]->var);
    if (reads.k_last && reads.j_dim >= 0) {
      a.keys_operand = inputs[1]->name;
      a.keys_dim = reads.j_dim;
    }
  }
  return a;
}

// The scores' micro-kernel at the block: [batch..., rows, keys, width] ->
// batch..., keys.o, rows.o, width, rows.i (unrolled), keys.i (vectorized).
Status schedule_scores(Sched& s, const Attention& a, int64_t score_rows, int64_t score_cols) {
  const std::vector<Var> loops = s.loops(a.scores);
  const auto r = static_cast<size_t>(a.rank);
  std::vector<Var> order(loops.begin(), loops.begin() + a.rank - 2);
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> i, s.split(a.scores, loops[r - 2], {score_rows}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> j, s.split(a.scores, loops[r - 1], {score_cols}));
  order.insert(order.end(), {j[0], i[0], loops[r], i[1], j[1]});
  TESSERA_RETURN_IF_ERROR(s.reorder(a.scores, order));
  TESSERA_RETURN_IF_ERROR(s.annotate(a.scores, i[1], IterAnnotation::kUnroll));
  return s.annotate(a.scores, j[1], IterAnnotation::kVectorize);
}

// The context's micro-kernel (its local accumulator) at the block:
// [batch..., rows, width, keys] -> batch..., rows.o, width.o, keys, rows.i
// (unrolled), width.i (vectorized, at most four registers).
Status schedule_context(Sched& s, const Attention& a, const std::string& local, int64_t context_rows, int64_t lanes) {
  const std::vector<Var> loops = s.loops(local);
  const auto r = static_cast<size_t>(a.rank);
  std::vector<Var> order(loops.begin(), loops.begin() + a.rank - 2);
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> i, s.split(local, loops[r - 2], {context_rows}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> c, s.split(local, loops[r - 1], {std::min(a.width, 4 * lanes)}));
  order.insert(order.end(), {i[0], c[0], loops[r], i[1], c[1]});
  TESSERA_RETURN_IF_ERROR(s.reorder(local, order));
  TESSERA_RETURN_IF_ERROR(s.annotate(local, i[1], IterAnnotation::kUnroll));
  return s.annotate(local, c[1], IterAnnotation::kVectorize);
}

// A stage of the block's rows x keys (exp, the probabilities) vectorized
// along the keys.
Status schedule_rows_of_keys(Sched& s, const Attention& a, const std::string& stage, int64_t lanes) {
  const std::vector<Var> loops = s.loops(stage);
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> j, s.split(stage, loops[static_cast<size_t>(a.rank) - 1], {lanes}));
  return s.annotate(stage, j[1], IterAnnotation::kVectorize);
}

// The last stage in DAG order that reads `name`, looking through inlined
// stages (a scale reads the scores; the max and the exponentials read it);
// the output's accumulator for the output.
std::string last_reader(const std::vector<Tensor>& tensors, const Attention& a, const std::string& name) {
  std::string reader;
  for (const Tensor& t : tensors) {
    bool reads = false;
    for (const Tensor& in : input_tensors(t)) reads = reads || in->name == name;
    if (!reads) continue;
    if (std::find(a.inlined.begin(), a.inlined.end(), t->name) != a.inlined.end()) {
      const std::string through = last_reader(tensors, a, t->name);
      if (!through.empty()) reader = through;  // later in DAG order than t itself
    } else {
      reader = t->name == a.out ? a.out + ".local" : t->name;
    }
  }
  return reader;
}

std::vector<int64_t> at_most(std::vector<int64_t> choices, int64_t limit) {
  std::vector<int64_t> kept;
  for (int64_t c : choices)
    if (c <= limit) kept.push_back(c);
  if (kept.empty()) kept.push_back(choices.front());
  return kept;
}

// A block's rows: the divisors of the rows up to 64, so that no block is
// part-empty (a row guard inside the scores' micro-kernel keeps its
// accumulators in memory: 1.5x the time), and 8 and 16 for rows with few
// divisors (97), guarded.
std::vector<int64_t> row_choices(int64_t rows) {
  std::vector<int64_t> choices;
  for (int64_t d = 1; d <= std::min<int64_t>(rows, 64); ++d)
    if (rows % d == 0) choices.push_back(d);
  for (int64_t d : {8, 16})
    if (d < rows && std::find(choices.begin(), choices.end(), d) == choices.end()) choices.push_back(d);
  std::sort(choices.begin(), choices.end());
  return choices;
}

}  // namespace

Result<KnobSpace> define_attention(const ComputeDAG& dag, const Target& target) {
  TESSERA_ASSIGN_OR_RETURN(Attention a, analyze(dag));
  const int64_t lanes = target.vector_lanes(a.dtype);
  KnobSpace space;
  TESSERA_RETURN_IF_ERROR(space.define_knob("rows", row_choices(a.rows)));
  TESSERA_RETURN_IF_ERROR(space.define_knob("score_rows", {2, 4, 6, 8}));
  TESSERA_RETURN_IF_ERROR(
      space.define_knob("score_cols", at_most({lanes, 2 * lanes, 3 * lanes, 4 * lanes}, std::max(a.keys, lanes))));
  TESSERA_RETURN_IF_ERROR(space.define_knob("context_rows", {1, 2, 4, 6}));
  return space;
}

Status apply_attention(const KnobConfig& cfg, const Target& target, State* state) {
  TESSERA_ASSIGN_OR_RETURN(Attention a, analyze(state->dag()));
  Sched s(state);
  const int64_t lanes = target.vector_lanes(a.dtype);
  const int64_t rows = cfg.get_int("rows");
  for (const std::string& stage : a.inlined) TESSERA_RETURN_IF_ERROR(s.compute_inline(stage));
  // Each row's statistics in vectors of partial results (a chain of
  // dependent maxima or sums over 1,500 keys is latency-bound).
  std::vector<bool> partials;
  for (const std::string& stat : a.statistics) {
    partials.push_back(a.keys >= 2 * lanes);
    if (partials.back()) TESSERA_RETURN_IF_ERROR(s.rfactor(stat, 0, lanes));
  }
  TESSERA_RETURN_IF_ERROR(s.cache_write(a.out));
  const std::string local = a.out + ".local";
  // The output: blocks of `rows` rows of a head, in parallel; each written
  // from its local accumulator, vectorized along the head's width.
  const std::vector<Var> loops = s.loops(a.out);
  const auto r = static_cast<size_t>(a.rank);
  TESSERA_ASSIGN_OR_RETURN(std::vector<Var> i, s.split(a.out, loops[r - 2], {rows}));
  std::vector<Var> outer(loops.begin(), loops.begin() + a.rank - 2);
  outer.push_back(i[0]);
  Var blocks = outer[0];
  if (outer.size() > 1) {
    TESSERA_ASSIGN_OR_RETURN(blocks, s.fuse(a.out, outer));
  }
  TESSERA_RETURN_IF_ERROR(s.annotate(a.out, blocks, IterAnnotation::kParallel));
  TESSERA_RETURN_IF_ERROR(s.annotate(a.out, loops[r - 1], IterAnnotation::kVectorize));
  // Everything else once a block, readers first: each stage at the batch
  // loop (extent 1 there) of its last reader, which encloses its other
  // readers' uses too (the exponentials, read by the exp-sum and by the
  // probabilities, go at the probabilities').
  TESSERA_RETURN_IF_ERROR(s.compute_at(local, a.out, blocks));
  const std::vector<Tensor>& tensors = state->dag().tensors();
  for (auto it = tensors.rbegin(); it != tensors.rend(); ++it) {
    const std::string& name = (*it)->name;
    const bool stat = std::find(a.statistics.begin(), a.statistics.end(), name) != a.statistics.end();
    if (!stat && name != a.scores && std::find(a.stored.begin(), a.stored.end(), name) == a.stored.end()) continue;
    const std::string reader = last_reader(tensors, a, name);
    if (reader.empty()) return attention_error("stage " + name + " has no reader");
    TESSERA_RETURN_IF_ERROR(s.compute_at(name, reader, s.loops(reader)[r - 3]));
    if (stat && partials[static_cast<size_t>(std::find(a.statistics.begin(), a.statistics.end(), name) -
                                             a.statistics.begin())]) {
      // At the statistic's innermost row loop: one row's partial results,
      // placed before the statistic's input (which they read) is.
      const std::string rf = name + ".rf";
      TESSERA_RETURN_IF_ERROR(s.compute_at(rf, name, s.loops(name)[r - 1]));
      TESSERA_RETURN_IF_ERROR(s.vectorize_partial_results(rf));
    }
  }
  TESSERA_RETURN_IF_ERROR(schedule_context(s, a, local, micro_kernel_rows(rows, cfg.get_int("context_rows")), lanes));
  for (const std::string& stage : a.stored) TESSERA_RETURN_IF_ERROR(schedule_rows_of_keys(s, a, stage, lanes));
  if (!a.keys_operand.empty()) {
    // A head's keys copied once a block, keys innermost.
    TESSERA_RETURN_IF_ERROR(s.cache_read(a.keys_operand, {a.scores}));
    const std::string keys = a.keys_operand + ".local";
    TESSERA_RETURN_IF_ERROR(s.compute_at(keys, a.scores, s.loops(a.scores)[r - 3]));
    TESSERA_RETURN_IF_ERROR(store_dimension_innermost(s, keys, a.keys_dim));
    const Var last = s.loops(keys).back();
    TESSERA_ASSIGN_OR_RETURN(int64_t extent, s.inferred_extent(keys, last));
    TESSERA_RETURN_IF_ERROR(s.vectorize_by_divisor(keys, last, extent, lanes));
  }
  return schedule_scores(s, a, micro_kernel_rows(rows, cfg.get_int("score_rows")), cfg.get_int("score_cols"));
}

Result<KnobConfig> fallback_attention(const KnobSpace& space, const ComputeDAG& dag, const Target& target) {
  TESSERA_ASSIGN_OR_RETURN(Attention a, analyze(dag));
  const int64_t lanes = target.vector_lanes(a.dtype);
  // A block's scores, exponentials and probabilities (three buffers of rows
  // x keys) in a quarter of L2. The scores' micro-kernel 6 rows x 4
  // registers with 32 registers (24 accumulators, 4 loads of keys for 24
  // FMAs: a 4-trial tune of the speech encoder found it 1.25x faster than 8
  // x 2), else 4 x 2; the context's 6 rows (2 with 16 registers) x the
  // head's width (four registers).
  const int64_t fit = std::max<int64_t>(4, target.l2_bytes / 4 / (3 * a.keys * a.dtype.storage_bytes()));
  const bool many = target.vector_registers() >= 32;
  // The largest block of whole rows that fits, of 4 rows or more; else 8
  // rows, the last block guarded.
  int64_t rows = divisor_at_most(a.rows, std::min<int64_t>(fit, 16));
  if (rows < 4) rows = std::min<int64_t>(8, a.rows);
  return nearest_config(
      space, {{"rows", {rows}},
              {"score_rows", {many ? 6 : 4}},
              {"score_cols", {largest_at_most(innermost_sizes(*space.find("score_cols")), (many ? 4 : 2) * lanes)}},
              {"context_rows", {a.width <= 4 * lanes ? (many ? 6 : 2) : 2}}});
}

}  // namespace tessera::template_detail
