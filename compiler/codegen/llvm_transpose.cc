// Transposes in registers (CodeGen::emit_transposed_tile).
//
// A transpose tiled by the generic schedule reads, at each of T steps of the
// loop along the input rows' contiguous axis, a vector whose lanes are V
// different input rows (a load of stride S, the row length): each lane one
// scalar load. Those T loads together cover a V x T block of the input, each
// of its V rows T contiguous elements. The block is loaded instead as V
// vectors of T elements and transposed by shuffles: T columns of V lanes,
// each the value one of the T strided loads would have read.
#include <llvm/IR/Constants.h>

#include <algorithm>

#include "compiler/arith/linear.h"
#include "compiler/codegen/llvm_emitter.h"
#include "compiler/ir/functor.h"
#include "compiler/ir/util.h"

namespace tessera::codegen_detail {
namespace {

// The tile extents transposed in registers: a cache line of float32 or
// int32 at most.
bool tile_extent_fits(int64_t extent) {
  return extent == 4 || extent == 8 || extent == 16;
}

// The loads of `body` whose lanes walk input rows while the loop variable
// `t` walks along them: index ramp(base, S, V) with S a constant other than
// 1, base advancing by exactly 1 with t, V a multiple of the tile, 32-bit
// elements, no mask, outside any Select (whose branches guard their loads).
// `ok` turns false where some other load depends on t other than as a
// contiguous vector (a gather), or a transposed one is not such a load.
struct TileLoads : IRVisitor {
  TileLoads(const VarNode* t, int64_t tile) : t(t), tile(tile) {}
  const VarNode* t;
  int64_t tile;
  std::vector<const LoadNode*> loads;
  bool ok = true;
  int select_depth = 0;

  void visit(const SelectNode* op) override {
    ++select_depth;
    IRVisitor::visit(op);
    --select_depth;
  }
  void visit(const LoadNode* op) override {
    IRVisitor::visit(op);
    if (!uses_var(op->index, t) && (!op->predicate.defined() || !uses_var(op->predicate, t))) return;
    const auto* ramp = op->index.as<RampNode>();
    int64_t stride = 0;
    if (ramp && is_const_int(ramp->stride, &stride) && stride == 1 && !op->predicate.defined()) return;
    if (!ramp || stride == 0 || stride == 1 || op->predicate.defined() || select_depth > 0 ||
        op->dtype.storage_bytes() != 4 || op->dtype.is_bool() || op->dtype.lanes % tile != 0) {
      ok = false;
      return;
    }
    int64_t coef = 0;
    for (const auto& [atom, c] : arith::linear_form(ramp->base).terms)
      if (const auto* v = atom.as<VarNode>(); v == t)
        coef += c;
      else if (uses_var(atom, t))
        ok = false;  // t inside a division or product
    if (coef != 1) ok = false;
    // A load the tree shares is read twice by the visit, transposed once.
    if (std::find(loads.begin(), loads.end(), op) == loads.end()) loads.push_back(op);
  }
};

// Each transposed load replaced by a variable bound to its column.
struct ReplaceLoads : IRMutator {
  std::vector<std::pair<const LoadNode*, Var>> columns;
  Expr visit(const LoadNode* op, const Expr& self) override {
    for (const auto& [load, var] : columns)
      if (load == op) return var;
    return IRMutator::visit(op, self);
  }
};

// The T x T block of `rows` (T vectors of T lanes) transposed: for k =
// T/2, ..., 2, 1, rows i and i + k (bit k of i clear) swap their k x k
// off-diagonal blocks. Each round is one or two cheap shuffles on x86
// (vshuff64x2, vshuff32x4, vunpcklpd, vmovsldup with a blend), where a
// perfect shuffle of whole vectors would be vpermt2ps every time.
std::vector<llvm::Value*> transpose_square(llvm::IRBuilder<>& b, std::vector<llvm::Value*> rows) {
  const int n = static_cast<int>(rows.size());
  for (int k = n / 2; k >= 1; k /= 2) {
    llvm::SmallVector<int, 16> upper, lower;  // rows i and i + k of the round's result
    for (int c = 0; c < n; ++c) {
      upper.push_back((c & k) == 0 ? c : n + c - k);
      lower.push_back((c & k) == 0 ? c + k : n + c);
    }
    for (int i = 0; i < n; ++i) {
      if (i & k) continue;
      llvm::Value* a = rows[static_cast<size_t>(i)];
      llvm::Value* c = rows[static_cast<size_t>(i + k)];
      rows[static_cast<size_t>(i)] = b.CreateShuffleVector(a, c, upper);
      rows[static_cast<size_t>(i + k)] = b.CreateShuffleVector(a, c, lower);
    }
  }
  return rows;
}

// Vectors of equal length joined end to end; their count a power of two
// (emit_transposed_tile checks it), so each round pairs them all.
llvm::Value* concatenate(llvm::IRBuilder<>& b, std::vector<llvm::Value*> parts) {
  while (parts.size() > 1) {
    std::vector<llvm::Value*> joined;
    for (size_t i = 0; i + 1 < parts.size(); i += 2) {
      const int n = static_cast<int>(llvm::cast<llvm::FixedVectorType>(parts[i]->getType())->getNumElements());
      llvm::SmallVector<int, 64> both;
      for (int l = 0; l < 2 * n; ++l) both.push_back(l);
      joined.push_back(b.CreateShuffleVector(parts[i], parts[i + 1], both));
    }
    parts = std::move(joined);
  }
  return parts[0];
}

}  // namespace

bool CodeGen::emit_transposed_tile(const ForNode* op) {
  int64_t tile = 0, min = 0;
  if (op->loop_kind != LoopKind::kSerial || !is_const_int(op->extent, &tile) || !tile_extent_fits(tile) ||
      !is_const_int(op->min, &min) || select_depth_ > 0)
    return false;
  const auto* store = op->body.as<StoreNode>();
  if (!store) return false;
  TileLoads found(op->var.node(), tile);
  found(op->body);
  if (!found.ok || found.loads.empty()) return false;
  for (const LoadNode* load : found.loads)
    if (load->buffer.same_as(store->buffer) || (load->dtype.lanes / tile) & ((load->dtype.lanes / tile) - 1))
      return false;

  // Every transposed load's columns, computed before the first store.
  llvm::Type* index_type = type_of(op->var.dtype());
  vars_[op->var.node()] = llvm::ConstantInt::get(index_type, min);
  ReplaceLoads replace;
  std::vector<std::vector<llvm::Value*>> columns;  // per load, per step
  for (const LoadNode* load : found.loads) {
    const auto* ramp = load->index.as<RampNode>();
    const int lanes = load->dtype.lanes;
    llvm::Type* elem = storage_type(load->dtype);
    llvm::Type* row_type = llvm::FixedVectorType::get(elem, static_cast<unsigned>(tile));
    llvm::Value* base = emit(ramp->base);
    llvm::Value* stride = emit(ramp->stride);
    std::vector<std::vector<llvm::Value*>> blocks;  // per group of `tile` rows, its columns
    for (int g = 0; g < lanes / tile; ++g) {
      std::vector<llvm::Value*> rows;
      for (int64_t j = 0; j < tile; ++j) {
        llvm::Value* row = b_.CreateAdd(base, b_.CreateMul(stride, llvm::ConstantInt::get(index_type, g * tile + j)));
        rows.push_back(
            b_.CreateAlignedLoad(row_type, element_ptr(load->buffer, row), llvm::Align(load->dtype.storage_bytes())));
      }
      blocks.push_back(transpose_square(b_, std::move(rows)));
    }
    std::vector<llvm::Value*> steps;
    for (int64_t s = 0; s < tile; ++s) {
      std::vector<llvm::Value*> parts;
      for (const auto& block : blocks) parts.push_back(block[static_cast<size_t>(s)]);
      steps.push_back(concatenate(b_, std::move(parts)));
    }
    columns.push_back(std::move(steps));
    replace.columns.emplace_back(load, Var("column" + std::to_string(replace.columns.size()), load->dtype));
  }
  const Stmt body = replace(op->body);
  for (int64_t s = 0; s < tile; ++s) {
    vars_[op->var.node()] = llvm::ConstantInt::get(index_type, min + s);
    for (size_t l = 0; l < columns.size(); ++l)
      vars_[replace.columns[l].second.node()] = columns[l][static_cast<size_t>(s)];
    emit(body);
  }
  return true;
}

}  // namespace tessera::codegen_detail
