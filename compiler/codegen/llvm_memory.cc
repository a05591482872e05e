// Loads and stores: contiguous vectors, predicated (masked) lanes, strided
// spans, and the lane-by-lane fallbacks.
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <optional>

#include "base/int_div.h"
#include "compiler/codegen/llvm_emitter.h"
#include "compiler/ir/op.h"

namespace tessera::codegen_detail {

llvm::Value* CodeGen::element_ptr(const Buffer& buf, llvm::Value* index) {
  return b_.CreateInBoundsGEP(storage_type(buf->dtype), buffer_base(buf.get()), index);
}

llvm::Value* CodeGen::clamp_index(const Buffer& buf, llvm::Value* index) {
  if (select_depth_ == 0) return index;
  llvm::Type* ty = index->getType();
  llvm::Value* zero = llvm::Constant::getNullValue(ty);
  llvm::Value* last = llvm::ConstantInt::get(ty, buf->num_elements() - 1);
  return b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, index, last),
                                  zero);
}

llvm::Value* CodeGen::lanes_in_buffer(const Buffer& buf, llvm::Value* lanes, int n) {
  return b_.CreateAnd(b_.CreateICmpSGE(lanes, llvm::Constant::getNullValue(lanes->getType())),
                      b_.CreateICmpSLT(lanes, splat(b_.getInt64(buf->num_elements()), n)));
}

void CodeGen::guard_branch_load(const Buffer& buf, const Expr& index, int n, int64_t span, llvm::Value** ptr,
                                llvm::Value** mask) {
  auto both = [&](llvm::Value* a, llvm::Value* c) { return a ? b_.CreateAnd(a, c) : c; };
  llvm::Value* uniform = nullptr;
  llvm::Value* lanes = nullptr;
  for (llvm::Value* cond : branch_conds_) {
    const auto* vec = llvm::dyn_cast<llvm::FixedVectorType>(cond->getType());
    if (!vec) {
      uniform = both(uniform, cond);
    } else if (static_cast<int>(vec->getNumElements()) == n) {
      lanes = both(lanes, cond);
    } else {
      llvm::Value* at = emit(index);
      *mask = both(*mask, lanes_in_buffer(buf, n == 1 ? splat(at, 1) : at, n));
      return;
    }
  }
  if (lanes) *mask = both(*mask, lanes);
  if (!uniform) return;
  if (buf->num_elements() >= span)
    *ptr = b_.CreateSelect(uniform, *ptr, buffer_base(buf.get()));
  else
    *mask = both(*mask, splat(uniform, n));
}

// A predicated load or store touches only the lanes its predicate holds:
// LLVM's masked load/store when contiguous (a scalar one is a one-lane
// vector); otherwise lane by lane, loads from an index clamped into the
// buffer and selected, stores under a branch each. (LLVM 19's masked
// gather on AVX-512 emitted a vgatherqps whose registers overlap: #UD.)
llvm::Value* CodeGen::emit_masked_load(const LoadNode* op) {
  DType t = op->dtype;
  llvm::Type* vec = llvm::FixedVectorType::get(storage_type(t), t.lanes);
  llvm::Align align(t.storage_bytes());
  llvm::Value* mask = emit(op->predicate);
  if (t.lanes == 1) mask = b_.CreateVectorSplat(1, mask);
  llvm::Value* zero = llvm::Constant::getNullValue(vec);
  llvm::Value* out;
  if (const auto* ramp = op->index.as<RampNode>(); t.lanes == 1 || (ramp && is_const_value(ramp->stride, 1))) {
    llvm::Value* base = emit(ramp ? ramp->base : op->index);
    llvm::Value* ptr = b_.CreateGEP(storage_type(t), buffer_base(op->buffer.get()), base);  // may point outside
    if (select_depth_ > 0) guard_branch_load(op->buffer, op->index, t.lanes, t.lanes, &ptr, &mask);
    out = b_.CreateMaskedLoad(vec, ptr, align, mask, zero);
  } else if (llvm::Value* strided = emit_strided_load(op, mask)) {
    out = strided;
  } else {
    ++select_depth_;  // clamp_index keeps every lane inside the buffer
    llvm::Value* index = clamp_index(op->buffer, emit(op->index));
    --select_depth_;
    out = zero;
    for (int i = 0; i < t.lanes; ++i) {
      llvm::Value* lane =
          b_.CreateAlignedLoad(storage_type(t), element_ptr(op->buffer, b_.CreateExtractElement(index, i)), align);
      out = b_.CreateInsertElement(
          out, b_.CreateSelect(b_.CreateExtractElement(mask, i), lane, llvm::Constant::getNullValue(storage_type(t))),
          i);
    }
  }
  if (t.lanes == 1) out = b_.CreateExtractElement(out, uint64_t{0});
  return t.is_bool() ? b_.CreateICmpNE(out, llvm::Constant::getNullValue(out->getType())) : out;
}

void CodeGen::emit_masked_store(const StoreNode* op, llvm::Value* value) {
  DType t = op->value.dtype();
  llvm::Align align(t.storage_bytes());
  llvm::Value* mask = emit(op->predicate);
  if (t.lanes == 1) {
    mask = b_.CreateVectorSplat(1, mask);
    value = b_.CreateVectorSplat(1, value);
  }
  if (const auto* ramp = op->index.as<RampNode>(); t.lanes == 1 || (ramp && is_const_value(ramp->stride, 1))) {
    llvm::Value* base = emit(ramp ? ramp->base : op->index);
    b_.CreateMaskedStore(value, b_.CreateGEP(storage_type(t), buffer_base(op->buffer.get()), base), align, mask);
    return;
  }
  llvm::Value* index = emit(op->index);
  for (int i = 0; i < t.lanes; ++i) {
    auto* store = llvm::BasicBlock::Create(ctx_, "lane.store", fn_);
    auto* next = llvm::BasicBlock::Create(ctx_, "lane.next", fn_);
    b_.CreateCondBr(b_.CreateExtractElement(mask, i), store, next);
    b_.SetInsertPoint(store);
    b_.CreateAlignedStore(b_.CreateExtractElement(value, i), element_ptr(op->buffer, b_.CreateExtractElement(index, i)),
                          align);
    b_.CreateBr(next);
    b_.SetInsertPoint(next);
  }
}

// A ramp of a small constant stride (a stride-2 window, every other
// column): one contiguous load of the span it covers, ending at its last
// element (a vector of odd length, which LLVM splits without reading past
// it), then a shuffle picking every stride-th lane. With a mask (i1 per
// lane) the span is loaded masked, each lane's element live when the lane
// is and the elements between lanes off. Null when not such a load. Inside a Select's branch, guarded like any (its
// lanes may lie outside the buffer).
llvm::Value* CodeGen::emit_strided_load(const LoadNode* op, llvm::Value* mask) {
  const auto* ramp = op->index.as<RampNode>();
  int64_t stride = 0;
  if (!ramp || !is_const_int(ramp->stride, &stride) || stride < 2 || stride > 4) return nullptr;
  const DType t = op->dtype;
  const int span = static_cast<int>((t.lanes - 1) * stride + 1);
  llvm::Type* elem = storage_type(t);
  llvm::Type* wide_type = llvm::FixedVectorType::get(elem, span);
  llvm::Value* ptr = b_.CreateGEP(elem, buffer_base(op->buffer.get()), emit(ramp->base));  // guarded: may point outside
  if (select_depth_ > 0) guard_branch_load(op->buffer, op->index, t.lanes, span, &ptr, &mask);
  const llvm::Align align(t.storage_bytes());
  llvm::Value* wide;
  if (mask) {
    llvm::SmallVector<int, 256> spread;  // element j: lane j / stride, or the all-false operand between lanes
    for (int j = 0; j < span; ++j) spread.push_back(j % stride == 0 ? static_cast<int>(j / stride) : t.lanes);
    llvm::Value* wide_mask = b_.CreateShuffleVector(mask, llvm::Constant::getNullValue(mask->getType()), spread);
    wide = b_.CreateMaskedLoad(wide_type, ptr, align, wide_mask, llvm::Constant::getNullValue(wide_type));
  } else {
    wide = b_.CreateAlignedLoad(wide_type, ptr, align);
  }
  llvm::SmallVector<int, 64> lanes;
  for (int i = 0; i < t.lanes; ++i) lanes.push_back(static_cast<int>(i * stride));
  return b_.CreateShuffleVector(wide, lanes);
}

std::optional<LaneOffsets> lane_offsets(const Expr& e, int lanes) {
  int64_t c = 0;
  if (e.dtype().lanes == 1) return LaneOffsets{e, std::vector<int64_t>(static_cast<size_t>(lanes), 0)};
  if (const auto* bc = e.as<BroadcastNode>())
    return LaneOffsets{bc->value, std::vector<int64_t>(static_cast<size_t>(lanes), 0)};
  if (const auto* ramp = e.as<RampNode>()) {
    if (!is_const_int(ramp->stride, &c)) return std::nullopt;
    LaneOffsets r{ramp->base, {}};
    for (int i = 0; i < lanes; ++i) r.offsets.push_back(i * c);
    return r;
  }
  const ExprKind k = e->kind;
  if (k != ExprKind::kAdd && k != ExprKind::kSub && k != ExprKind::kMul && k != ExprKind::kDiv && k != ExprKind::kMod)
    return std::nullopt;
  const auto* bin = static_cast<const BinaryNode*>(e.get());
  if (k == ExprKind::kMul && is_const_int(bin->a)) return lane_offsets(bin->b * bin->a, lanes);
  auto a = lane_offsets(bin->a, lanes);
  if (!a) return std::nullopt;
  if (k == ExprKind::kAdd || k == ExprKind::kSub) {
    auto b = lane_offsets(bin->b, lanes);
    if (!b) return std::nullopt;
    for (size_t i = 0; i < a->offsets.size(); ++i)
      a->offsets[i] += k == ExprKind::kAdd ? b->offsets[i] : -b->offsets[i];
    a->invariant = k == ExprKind::kAdd ? a->invariant + b->invariant : a->invariant - b->invariant;
    return a;
  }
  if (!is_const_int(bin->b, &c) || c == 0) return std::nullopt;
  if (k == ExprKind::kMul) {
    for (int64_t& o : a->offsets) o *= c;
    a->invariant = a->invariant * make_int(c, a->invariant.dtype());
    return a;
  }
  // Division and remainder mix the invariant part into each lane; only a
  // constant one keeps the lanes constant.
  int64_t base = 0;
  if (!is_const_int(a->invariant, &base)) return std::nullopt;
  for (int64_t& o : a->offsets) o = k == ExprKind::kDiv ? floordiv(base + o, c) : floormod(base + o, c);
  a->invariant = make_int(0, a->invariant.dtype());
  return a;
}

// A load whose lanes read a few contiguous runs at constant offsets from a
// lane-invariant index (an interleave of two planes, each element twice):
// one dense load per run, then one shuffle into the lanes. Otherwise, lane
// by lane, each lane would be a scalar load (LLVM's gather is not used:
// see emit_masked_load). Null when not such a load, or inside a Select's
// branch, where lanes may lie outside the buffer.
llvm::Value* CodeGen::emit_segmented_load(const LoadNode* op) {
  constexpr size_t kMaxRuns = 8;
  if (select_depth_ > 0) return nullptr;
  const int n = op->dtype.lanes;
  auto split = lane_offsets(op->index, n);
  if (!split) return nullptr;
  std::vector<int64_t> distinct = split->offsets;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  std::vector<std::pair<int64_t, int>> runs;  // first offset, length
  for (int64_t o : distinct) {
    if (!runs.empty() && runs.back().first + runs.back().second == o)
      ++runs.back().second;
    else
      runs.push_back({o, 1});
  }
  // Runs of one or two elements on average gain nothing over lane by lane.
  if (runs.size() > kMaxRuns || (runs.size() > 1 && 2 * runs.size() > distinct.size())) return nullptr;
  llvm::Type* elem = storage_type(op->dtype);
  const llvm::Align align(op->dtype.storage_bytes());
  llvm::Value* invariant = emit(split->invariant);
  // Every run loaded and widened to one pool of the distinct offsets, in order.
  const int pool_size = static_cast<int>(distinct.size());
  llvm::Value* pool = nullptr;
  int filled = 0;
  for (const auto& [first, length] : runs) {
    llvm::Value* at = b_.CreateAdd(invariant, llvm::ConstantInt::get(invariant->getType(), first));
    llvm::Value* run =
        b_.CreateAlignedLoad(llvm::FixedVectorType::get(elem, length), element_ptr(op->buffer, at), align);
    llvm::SmallVector<int, 256> widen(pool_size, -1);
    for (int i = 0; i < length; ++i) widen[filled + i] = i;
    llvm::Value* placed = b_.CreateShuffleVector(run, widen);
    if (!pool) {
      pool = placed;
    } else {
      llvm::SmallVector<int, 256> merge;
      for (int i = 0; i < pool_size; ++i) merge.push_back(i < filled ? i : pool_size + i);
      pool = b_.CreateShuffleVector(pool, placed, merge);
    }
    filled += length;
  }
  llvm::SmallVector<int, 256> pick;
  for (int64_t o : split->offsets)
    pick.push_back(static_cast<int>(std::lower_bound(distinct.begin(), distinct.end(), o) - distinct.begin()));
  return b_.CreateShuffleVector(pool, pick);
}

llvm::Value* CodeGen::emit_load(const LoadNode* op) {
  DType t = op->dtype;
  llvm::Type* elem = storage_type(t);
  llvm::Align align(t.storage_bytes());
  auto finish = [&](llvm::Value* v) -> llvm::Value* {
    return t.is_bool() ? b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType())) : v;
  };
  if (op->predicate.defined()) return emit_masked_load(op);
  if (t.lanes == 1)
    return finish(b_.CreateAlignedLoad(elem, element_ptr(op->buffer, clamp_index(op->buffer, emit(op->index))), align));
  if (const auto* ramp = op->index.as<RampNode>(); ramp && is_const_value(ramp->stride, 1)) {
    llvm::Type* vec = llvm::FixedVectorType::get(elem, t.lanes);
    llvm::Value* base = emit(ramp->base);
    if (select_depth_ == 0) return finish(b_.CreateAlignedLoad(vec, element_ptr(op->buffer, base), align));
    llvm::Value* ptr = b_.CreateGEP(elem, buffer_base(op->buffer.get()), base);  // guarded: may point outside
    llvm::Value* mask = nullptr;
    guard_branch_load(op->buffer, op->index, t.lanes, t.lanes, &ptr, &mask);
    if (!mask) return finish(b_.CreateAlignedLoad(vec, ptr, align));
    return finish(b_.CreateMaskedLoad(vec, ptr, align, mask, llvm::Constant::getNullValue(vec)));
  }
  if (llvm::Value* v = emit_strided_load(op, nullptr)) return finish(v);
  if (llvm::Value* v = emit_segmented_load(op)) return finish(v);
  llvm::Value* index = clamp_index(op->buffer, emit(op->index));
  llvm::Value* out = llvm::PoisonValue::get(llvm::FixedVectorType::get(elem, t.lanes));
  for (int i = 0; i < t.lanes; ++i) {
    llvm::Value* lane = b_.CreateAlignedLoad(elem, element_ptr(op->buffer, b_.CreateExtractElement(index, i)), align);
    out = b_.CreateInsertElement(out, lane, i);
  }
  return finish(out);
}

void CodeGen::emit_store(const StoreNode* op) {
  DType t = op->value.dtype();
  llvm::Value* value = emit(op->value);
  if (t.is_bool()) value = b_.CreateZExt(value, type_of(DType::u8(t.lanes)));
  if (op->predicate.defined()) return emit_masked_store(op, value);
  llvm::Align align(t.storage_bytes());
  if (t.lanes == 1) {
    b_.CreateAlignedStore(value, element_ptr(op->buffer, emit(op->index)), align);
    return;
  }
  if (const auto* ramp = op->index.as<RampNode>(); ramp && is_const_value(ramp->stride, 1)) {
    b_.CreateAlignedStore(value, element_ptr(op->buffer, emit(ramp->base)), align);
    return;
  }
  llvm::Value* index = emit(op->index);
  for (int i = 0; i < t.lanes; ++i)
    b_.CreateAlignedStore(b_.CreateExtractElement(value, i), element_ptr(op->buffer, b_.CreateExtractElement(index, i)),
                          align);
}

}  // namespace tessera::codegen_detail
