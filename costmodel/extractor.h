// The feature extractor's internals, shared by features.cc (walk, op
// counts, folding) and store_access.cc (per-access analysis). Not public:
// the public view is features.h.
#pragma once

#include <vector>

#include "compiler/ir/stmt.h"
#include "costmodel/access_analysis.h"
#include "costmodel/feature_table.h"
#include "costmodel/features.h"

namespace tessera::costmodel::detail {

// Indices into the three parts of the table.
enum ProgramFeature : int {
#define TESSERA_X(name, agg, scale, doc) kP_##name,
  TESSERA_PROGRAM_FEATURES(TESSERA_X)
#undef TESSERA_X
      kProgramEnd
};
enum StoreFeature : int {
#define TESSERA_X(name, agg, scale, doc) kS_##name,
  TESSERA_STORE_FEATURES(TESSERA_X)
#undef TESSERA_X
      kStoreEnd
};
enum BufferFeature : int {
#define TESSERA_X(name, agg, scale, doc) kB_##name,
  TESSERA_BUFFER_FEATURES(TESSERA_X)
#undef TESSERA_X
      kBufferEnd
};
static_assert(kProgramEnd == kProgramFeatureCount, "update kProgramFeatureCount in features.h");
static_assert(kStoreEnd == kStoreFeatureCount, "update kStoreFeatureCount in features.h");
static_assert(kBufferEnd == kBufferFeatureCount, "update kBufferFeatureCount in features.h");

/// One store's raw (unscaled) features.
struct Row {
  double store[kStoreFeatureCount] = {};
  double buffers[kMaxBuffers][kBufferFeatureCount] = {};
  double work = 0;        // scalar executions: the weight of kMean features
  double flops = 0;       // float ops executed
  double vector_ops = 0;  // lanes of the ops that ran as vector ops
};

/// A loop around the current statement.
struct LoopInfo {
  const VarNode* var;
  int64_t extent;
  LoopKind kind;
  bool unrolled;       // becomes straight-line code: kUnrolled, or auto-unrolled
  bool auto_unrolled;  // ... by an auto-unroll hint
  bool tensorized;     // kTensorized, or inside one: run as tile products
};

/// A load or the store itself, in the store statement being analysed.
struct Access {
  const BufferNode* buffer;
  Expr index;
  bool is_write;
};

/// Per-access results kept while a store's row is built.
struct AccessStats {
  double bytes = 0, lines = 0;
  Footprint whole;
  Footprint level[3];   // inside the 1, 2, 3 innermost loops (and the lanes)
  int reuse_loop = -1;  // innermost loop that leaves the address unchanged
  double stride = 0, stride_moving = 0;
};

/// The accesses of one store that touch one buffer, summed.
struct BufferGroup {
  const BufferNode* buffer;
  int reads = 0, writes = 0, rep = -1;  // rep: the access with the most bytes
  double bytes = 0, lines = 0, unique_bytes = 0, unique_lines = 0;
};

/// Walks a lowered function, builds one Row per store, and folds the rows.
class Extractor {
 public:
  /// Analyses every store of `func`; call once per Extractor.
  void run(const PrimFunc& func) {
    for (const Buffer& b : func.params) param_bytes_ += double(b->num_elements()) * b->dtype.storage_bytes();
    visit(func.body);
  }
  /// The program's feature vector (kFeatureCount entries).
  std::vector<float> finish() const;

 private:
  void visit(const Stmt& s);
  void visit_store(const StoreNode* op);
  void count(const Expr& e, Row& row, double weight);
  void count_addsub(const BinaryNode* b, bool is_add, Row& row, double weight, double n);
  void loop_features(Row& row) const;
  void access_features(const StoreNode* op, Row& row, int lanes, double outer, double flops_per_exec);
  void analyse_access(int a, int lanes, double outer, int& vector_accesses, int& strided);
  void intensity_features(double* r, double outer, double flops_per_exec) const;
  int group_buffers(double* r, BufferGroup* groups) const;
  void buffer_features(Row& row);
  double reuse_loop_features(int l, double* b);
  void accumulation_distance(double* r) const;
  void cache_misses(Row& row);

  static constexpr int kMaxGroups = 16;  // buffers told apart per store

  std::vector<LoopInfo> loops_;
  std::vector<const VarNode*> vars_;
  std::vector<int64_t> auto_unroll_;
  std::vector<std::pair<const BufferNode*, double>> allocs_;  // buffer -> times allocated
  int guarded_ = 0;
  std::vector<Row> rows_;
  double param_bytes_ = 0, alloc_bytes_ = 0;
  int num_allocs_ = 0;
  // Scratch reused across stores so that extraction allocates little.
  std::vector<Access> accesses_;
  std::vector<AccessStats> stats_;
  std::vector<std::vector<double>> access_coefs_;
  std::vector<int64_t> extents_;
  std::vector<int> loop_set_;
  std::vector<double> level_bytes_, level_lines_;
};

}  // namespace tessera::costmodel::detail
