// Code for the dot products of packed words: CallOp::kDotU8S8, acc + the
// four-way u8 x s8 dot product of each int32 lane, and CallOp::kDotBf16,
// acc + the two-way bfloat16 dot product of each lane in float32.
//
// Where the target has the instruction (x86 VNNI: vpdpbusd on 512-bit
// vectors with AVX512-VNNI, on 256- and 128-bit ones with AVX-VNNI or
// AVX512-VL; AArch64: USDOT with +i8mm), a vector of int32 becomes one call
// per register of the widest of those that divides its lanes (24 lanes:
// three 256-bit calls), the accumulator its first operand.
// AArch64 with +dotprod alone has only signed x signed SDOT: the unsigned
// bytes are shifted into int8 (a ^ 0x80 = a - 128) and 128 * (sum of b's
// bytes) added back, by a second SDOT of -128s taken off (b is the weight:
// LLVM hoists that one where b is loop-invariant). Elsewhere the bytes are widened and
// multiplied in int32 and the four products of each lane summed: exact, as
// the instruction is, and not VPMADDUBSW, whose 16-bit sums saturate. (LLVM
// turns that form into VPMADDWD where it has it.)
//
// bfloat16: vdpbf16ps (AVX512-BF16; 256- and 128-bit with AVX512-VL) and AArch64's
// BFDOT (+bf16), one a register. Elsewhere each half is widened to float32
// by a shift (a bfloat16 is the top half of a float32) and the two exact
// products summed: the definition, rounded once.
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsAArch64.h>
#include <llvm/IR/IntrinsicsX86.h>

#include "compiler/codegen/llvm_emitter.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/ir/functor.h"
#include "compiler/ir/op.h"
#include "compiler/ir/structural.h"
#include "compiler/lower/simplify.h"

namespace tessera::codegen_detail {
namespace {

// Lanes [first, first + n) of `v`.
llvm::Value* lanes_of(llvm::IRBuilder<>& b, llvm::Value* v, int first, int n) {
  std::vector<int> mask(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) mask[static_cast<size_t>(i)] = first + i;
  return b.CreateShuffleVector(v, mask);
}

// `parts` (equal vectors) side by side.
llvm::Value* concat(llvm::IRBuilder<>& b, std::vector<llvm::Value*> parts) {
  while (parts.size() > 1) {
    std::vector<llvm::Value*> joined;
    for (size_t i = 0; i + 1 < parts.size(); i += 2) {
      const int n = static_cast<int>(llvm::cast<llvm::FixedVectorType>(parts[i]->getType())->getNumElements());
      std::vector<int> mask(static_cast<size_t>(2 * n));
      for (int l = 0; l < 2 * n; ++l) mask[static_cast<size_t>(l)] = l;
      joined.push_back(b.CreateShuffleVector(parts[i], parts[i + 1], mask));
    }
    parts = std::move(joined);
  }
  return parts[0];
}

// The widest of `widths` (widest first) that divides `lanes`, or 0.
int widest_dividing(const std::vector<int>& widths, int lanes) {
  for (int w : widths)
    if (lanes % w == 0) return w;
  return 0;
}

// Whether `hi` - `lo` simplifies to the constant 1.
bool next_to(const Expr& lo, const Expr& hi) {
  const Expr d = simplify(hi - lo);
  const auto* imm = d.as<IntImmNode>();
  return imm && imm->value == 1;
}

// The index of the word two neighbouring bfloat16 loads `lo` and `hi` (each
// unpredicated, of one buffer) read together: lo's scalar index, or the base
// of its ramp of stride 2; null where they are not such a pair.
const Expr* word_index(const LoadNode* lo, const LoadNode* hi) {
  if (!lo || !hi || lo->buffer.get() != hi->buffer.get() || lo->predicate.defined() || hi->predicate.defined())
    return nullptr;
  if (lo->dtype.element_of() != DType::bf16()) return nullptr;
  if (lo->dtype.lanes == 1) return next_to(lo->index, hi->index) ? &lo->index : nullptr;
  const auto* a = lo->index.as<RampNode>();
  const auto* b = hi->index.as<RampNode>();
  if (!a || !b || !is_const_value(a->stride, 2) || !is_const_value(b->stride, 2)) return nullptr;
  return next_to(a->base, b->base) ? &a->base : nullptr;
}

// Lane `lane` of vector expression `e`, as a scalar expression.
class LaneOf final : public IRMutator {
 public:
  explicit LaneOf(int lane) : lane_(lane) {}

 protected:
  using IRMutator::visit;
  Expr visit(const RampNode* op, const Expr&) override {
    return mutate(op->base) + mutate(op->stride) * make_int(lane_, op->base.dtype());
  }
  Expr visit(const BroadcastNode* op, const Expr&) override { return mutate(op->value); }

 private:
  int lane_;
};

// Whether lanes `i` and `j` of `e` are provably equal by its form: every
// load in it reads one address for both (lane_offsets), every ramp has
// stride 0.
bool lanes_equal_in_form(const Expr& e, int i, int j) {
  if (e.dtype().lanes == 1 || e.as<BroadcastNode>()) return true;
  if (const auto* ramp = e.as<RampNode>()) return is_const_value(ramp->stride, 0);
  if (const auto* cast = e.as<CastNode>()) return lanes_equal_in_form(cast->value, i, j);
  if (const auto* load = e.as<LoadNode>()) {
    if (load->predicate.defined() && !lanes_equal_in_form(load->predicate, i, j)) return false;
    const auto split = lane_offsets(load->index, load->dtype.lanes);
    return split && split->offsets[static_cast<size_t>(i)] == split->offsets[static_cast<size_t>(j)];
  }
  if (const auto* call = e.as<CallNode>()) {
    for (const Expr& a : call->args)
      if (!lanes_equal_in_form(a, i, j)) return false;
    return true;
  }
  if (const auto* sel = e.as<SelectNode>())
    return lanes_equal_in_form(sel->cond, i, j) && lanes_equal_in_form(sel->true_value, i, j) &&
           lanes_equal_in_form(sel->false_value, i, j);
  if (const auto* n = e.as<NotNode>()) return lanes_equal_in_form(n->a, i, j);
  if (is_binary(e->kind)) {
    const auto* bin = static_cast<const BinaryNode*>(e.get());
    return lanes_equal_in_form(bin->a, i, j) && lanes_equal_in_form(bin->b, i, j);
  }
  return false;
}

// Whether lanes `i` and `j` of `e` are provably equal: by form, or as the
// same scalar expression once each lane is simplified (a padded input's
// guard reads (ramp / 2) % 2, equal across a tile's columns).
bool lanes_equal(const Expr& e, int i, int j) {
  if (lanes_equal_in_form(e, i, j)) return true;
  return structural_equal(simplify(LaneOf(i)(e)), simplify(LaneOf(j)(e)));
}

}  // namespace

llvm::Value* CodeGen::emit_dot_pair(llvm::Value* acc, const CallNode* dot0, const CallNode* dot1) {
  const int lanes = dot0->dtype.lanes;
  const Expr& a0 = dot0->args[0];
  const Expr& a1 = dot1->args[0];
  const Expr& b0 = dot0->args[1];
  const Expr& b1 = dot1->args[1];
  // Lane 4t + 2r + c of a tile is its row r, column c: the unsigned words
  // (rows) agree across c, the signed ones (columns) across r.
  bool tiles = target_.is_aarch64() && llvm_has_feature(target_, "i8mm") && lanes % 4 == 0 && select_depth_ == 0;
  for (int t = 0; tiles && t < lanes; t += 4)
    tiles = lanes_equal(a0, t, t + 1) && lanes_equal(a0, t + 2, t + 3) && lanes_equal(a1, t, t + 1) &&
            lanes_equal(a1, t + 2, t + 3) && lanes_equal(b0, t, t + 2) && lanes_equal(b0, t + 1, t + 3) &&
            lanes_equal(b1, t, t + 2) && lanes_equal(b1, t + 1, t + 3);
  if (!tiles) return emit_dot_u8s8(emit_dot_u8s8(acc, dot0), dot1);
  // USMMLA: acc[2r + c] += the eight bytes of row r of its first operand
  // (words a0, a1 of lane 2r) by those of column c of its second (words b0,
  // b1 of lane c).
  auto* v4i32 = llvm::FixedVectorType::get(b_.getInt32Ty(), 4);
  auto* v16i8 = llvm::FixedVectorType::get(b_.getInt8Ty(), 16);
  llvm::Function* usmmla = llvm::Intrinsic::getDeclaration(&mod_, llvm::Intrinsic::aarch64_neon_usmmla, {v4i32, v16i8});
  // The rows: each row's two words as one 64-bit value (neighbouring words
  // of a row of bytes become one load), two rows a register. The first
  // operand is the same for every tile of a pair of rows; LLVM merges the
  // repeats.
  auto* i64 = b_.getInt64Ty();
  auto* v2i64 = llvm::FixedVectorType::get(i64, 2);
  auto row_words = [&](int t) {
    llvm::Value* v = llvm::PoisonValue::get(v2i64);
    for (int r = 0; r < 2; ++r) {
      llvm::Value* low = b_.CreateZExt(emit(LaneOf(t + 2 * r)(a0)), i64);
      llvm::Value* high = b_.CreateShl(b_.CreateZExt(emit(LaneOf(t + 2 * r)(a1)), i64), 32);
      v = b_.CreateInsertElement(v, b_.CreateOr(low, high), static_cast<uint64_t>(r));
    }
    return b_.CreateBitCast(v, v16i8);
  };
  // The columns: two vector operands, their words interleaved per tile.
  llvm::Value* b0v = emit(b0);
  llvm::Value* b1v = emit(b1);
  if (!acc) acc = llvm::Constant::getNullValue(type_of(dot0->dtype));
  std::vector<llvm::Value*> parts;
  for (int t = 0; t < lanes; t += 4) {
    llvm::Value* columns =
        b_.CreateBitCast(b_.CreateShuffleVector(b0v, b1v, {t, lanes + t, t + 1, lanes + t + 1}), v16i8);
    llvm::Value* sums = lanes == 4 ? acc : lanes_of(b_, acc, t, 4);
    parts.push_back(b_.CreateCall(usmmla, {sums, row_words(t), columns}));
  }
  return concat(b_, std::move(parts));
}

const std::vector<int>& CodeGen::dot_widths() {
  if (dot_widths_) return *dot_widths_;
  dot_widths_.emplace();
  if (target_.is_x86()) {
    const bool vnni512 = llvm_has_feature(target_, "avx512vnni");
    if (vnni512 && target_.vector_bits >= 512) dot_widths_->push_back(16);
    if ((vnni512 && llvm_has_feature(target_, "avx512vl")) || llvm_has_feature(target_, "avxvnni"))
      dot_widths_->insert(dot_widths_->end(), {8, 4});
  }
  if (target_.is_aarch64() && (llvm_has_feature(target_, "i8mm") || llvm_has_feature(target_, "dotprod")))
    dot_widths_->push_back(4);
  return *dot_widths_;
}

llvm::Value* CodeGen::emit_dot_parts(int lanes, int width, llvm::Value* acc, llvm::Value* a, llvm::Value* b,
                                     const std::function<llvm::Value*(llvm::Value*, llvm::Value*, llvm::Value*)>& one) {
  std::vector<llvm::Value*> parts;
  for (int first = 0; first < lanes; first += width) {
    auto part = [&](llvm::Value* v) { return lanes == width ? v : lanes_of(b_, v, first, width); };
    parts.push_back(one(part(acc), part(a), part(b)));
  }
  return concat(b_, std::move(parts));
}

// One AArch64 dot product of four int32 lanes: USDOT, or SDOT of the
// unsigned bytes shifted by 128 with 128 * sum(b) added back.
llvm::Value* CodeGen::emit_aarch64_dot(llvm::Value* acc, llvm::Value* a, llvm::Value* b) {
  auto* v4i32 = llvm::FixedVectorType::get(b_.getInt32Ty(), 4);
  auto* v16i8 = llvm::FixedVectorType::get(b_.getInt8Ty(), 16);
  a = b_.CreateBitCast(a, v16i8);
  b = b_.CreateBitCast(b, v16i8);
  acc = b_.CreateBitCast(acc, v4i32);
  if (llvm_has_feature(target_, "i8mm")) {
    llvm::Function* usdot = llvm::Intrinsic::getDeclaration(&mod_, llvm::Intrinsic::aarch64_neon_usdot, {v4i32, v16i8});
    return b_.CreateCall(usdot, {acc, a, b});
  }
  llvm::Function* sdot = llvm::Intrinsic::getDeclaration(&mod_, llvm::Intrinsic::aarch64_neon_sdot, {v4i32, v16i8});
  llvm::Value* minus_128 = llvm::ConstantInt::get(v16i8, 0x80);
  llvm::Value* shifted = b_.CreateCall(sdot, {acc, b_.CreateXor(a, minus_128), b});
  llvm::Value* b_times_minus_128 = b_.CreateCall(sdot, {llvm::Constant::getNullValue(v4i32), minus_128, b});
  return b_.CreateSub(shifted, b_times_minus_128);
}

llvm::Value* CodeGen::emit_dot_u8s8(llvm::Value* acc, const CallNode* dot) {
  const int lanes = dot->dtype.lanes;
  llvm::Value* a = emit(dot->args[0]);
  llvm::Value* b = emit(dot->args[1]);
  llvm::Type* i32 = b_.getInt32Ty();
  const int width = widest_dividing(dot_widths(), lanes);
  if (width > 0) {
    if (!acc) acc = llvm::Constant::getNullValue(type_of(dot->dtype));
    if (target_.is_aarch64())
      return emit_dot_parts(lanes, width, acc, a, b,
                            [&](llvm::Value* c, llvm::Value* x, llvm::Value* y) { return emit_aarch64_dot(c, x, y); });
    const llvm::Intrinsic::ID id = width == 16  ? llvm::Intrinsic::x86_avx512_vpdpbusd_512
                                   : width == 8 ? llvm::Intrinsic::x86_avx512_vpdpbusd_256
                                                : llvm::Intrinsic::x86_avx512_vpdpbusd_128;
    llvm::Function* fn = llvm::Intrinsic::getDeclaration(&mod_, id);
    llvm::FunctionType* ft = fn->getFunctionType();
    auto* words = llvm::FixedVectorType::get(i32, static_cast<unsigned>(width));
    return emit_dot_parts(lanes, width, acc, a, b, [&](llvm::Value* c, llvm::Value* x, llvm::Value* y) {
      llvm::Value* r =
          b_.CreateCall(fn, {b_.CreateBitCast(c, ft->getParamType(0)), b_.CreateBitCast(x, ft->getParamType(1)),
                             b_.CreateBitCast(y, ft->getParamType(2))});
      return b_.CreateBitCast(r, words);
    });
  }
  // Portable: each lane's four bytes widened, multiplied and summed.
  auto* bytes = llvm::FixedVectorType::get(b_.getInt8Ty(), static_cast<unsigned>(4 * lanes));
  auto* wide = llvm::FixedVectorType::get(i32, static_cast<unsigned>(4 * lanes));
  llvm::Value* products =
      b_.CreateMul(b_.CreateZExt(b_.CreateBitCast(a, bytes), wide), b_.CreateSExt(b_.CreateBitCast(b, bytes), wide));
  llvm::Value* sum = nullptr;
  for (int byte = 0; byte < 4; ++byte) {
    std::vector<int> mask(static_cast<size_t>(lanes));
    for (int l = 0; l < lanes; ++l) mask[static_cast<size_t>(l)] = 4 * l + byte;
    llvm::Value* p = b_.CreateShuffleVector(products, mask);
    sum = sum ? b_.CreateAdd(sum, p) : p;
  }
  if (lanes == 1) sum = b_.CreateExtractElement(sum, uint64_t{0});
  return acc ? b_.CreateAdd(acc, sum) : sum;
}

llvm::Value* CodeGen::emit_pack_bf16(const CallNode* pack) {
  const int lanes = pack->dtype.lanes;
  llvm::Type* words = type_of(pack->dtype);
  // Loads of neighbouring bfloat16 elements: one load of the words they
  // are. A broadcast pair (the same scalars in every lane) loads one word.
  const Expr& lo = pack->args[0];
  const Expr& hi = pack->args[1];
  const auto* lo_b = lo.as<BroadcastNode>();
  const auto* hi_b = hi.as<BroadcastNode>();
  const LoadNode* lo_load = (lo_b ? lo_b->value : lo).as<LoadNode>();
  const LoadNode* hi_load = (hi_b ? hi_b->value : hi).as<LoadNode>();
  if (select_depth_ == 0 && static_cast<bool>(lo_b) == static_cast<bool>(hi_b)) {
    if (const Expr* index = word_index(lo_load, hi_load)) {
      llvm::Value* ptr = element_ptr(lo_load->buffer, emit(*index));
      const int loaded = lo_b ? 1 : lanes;
      llvm::Type* type = loaded == 1 ? static_cast<llvm::Type*>(b_.getInt32Ty())
                                     : llvm::FixedVectorType::get(b_.getInt32Ty(), static_cast<unsigned>(loaded));
      llvm::Value* word = b_.CreateAlignedLoad(type, ptr, llvm::Align(2));
      return lo_b ? b_.CreateVectorSplat(static_cast<unsigned>(lanes), word) : word;
    }
  }
  // Otherwise each value rounded to bfloat16 (to nearest even, a NaN kept
  // quiet) and the two halves put together.
  auto bits = [&](const Expr& e) -> llvm::Value* {
    llvm::Value* v = emit(e);
    llvm::Type* halves = lanes == 1 ? static_cast<llvm::Type*>(b_.getInt16Ty())
                                    : llvm::FixedVectorType::get(b_.getInt16Ty(), static_cast<unsigned>(lanes));
    if (e.dtype().element_of() == DType::bf16()) return b_.CreateZExt(b_.CreateBitCast(v, halves), words);
    llvm::Value* x = b_.CreateBitCast(v, words);
    auto constant = [&](uint32_t c) { return llvm::ConstantInt::get(words, c); };
    llvm::Value* odd = b_.CreateAnd(b_.CreateLShr(x, constant(16)), constant(1));
    llvm::Value* rounded = b_.CreateLShr(b_.CreateAdd(x, b_.CreateAdd(constant(0x7fff), odd)), constant(16));
    llvm::Value* quiet_nan = b_.CreateOr(b_.CreateLShr(x, constant(16)), constant(0x40));
    return b_.CreateSelect(b_.CreateFCmpUNO(v, v), quiet_nan, rounded);
  };
  llvm::Value* low = bits(lo);
  llvm::Value* high = b_.CreateShl(bits(hi), llvm::ConstantInt::get(words, 16));
  return b_.CreateOr(b_.CreateAnd(low, llvm::ConstantInt::get(words, 0xffff)), high);
}

const std::vector<int>& CodeGen::bf16_dot_widths() {
  if (bf16_dot_widths_) return *bf16_dot_widths_;
  bf16_dot_widths_.emplace();
  if (target_.is_x86() && llvm_has_feature(target_, "avx512bf16")) {
    if (target_.vector_bits >= 512) bf16_dot_widths_->push_back(16);
    if (llvm_has_feature(target_, "avx512vl")) bf16_dot_widths_->insert(bf16_dot_widths_->end(), {8, 4});
  }
  if (target_.is_aarch64() && llvm_has_feature(target_, "bf16")) bf16_dot_widths_->push_back(4);
  return *bf16_dot_widths_;
}

llvm::Value* CodeGen::emit_dot_bf16(llvm::Value* acc, const CallNode* dot) {
  const int lanes = dot->dtype.lanes;
  llvm::Value* a = emit(dot->args[0]);
  llvm::Value* b = emit(dot->args[1]);
  const int width = widest_dividing(bf16_dot_widths(), lanes);
  if (width > 0) {
    llvm::Function* fn = nullptr;
    if (target_.is_aarch64()) {
      auto* v4f32 = llvm::FixedVectorType::get(b_.getFloatTy(), 4);
      auto* v8bf16 = llvm::FixedVectorType::get(b_.getBFloatTy(), 8);
      fn = llvm::Intrinsic::getDeclaration(&mod_, llvm::Intrinsic::aarch64_neon_bfdot, {v4f32, v8bf16});
    } else {
      fn = llvm::Intrinsic::getDeclaration(&mod_, width == 16  ? llvm::Intrinsic::x86_avx512bf16_dpbf16ps_512
                                                  : width == 8 ? llvm::Intrinsic::x86_avx512bf16_dpbf16ps_256
                                                               : llvm::Intrinsic::x86_avx512bf16_dpbf16ps_128);
    }
    llvm::FunctionType* ft = fn->getFunctionType();
    if (!acc) acc = llvm::Constant::getNullValue(type_of(dot->dtype));
    return emit_dot_parts(lanes, width, acc, a, b, [&](llvm::Value* c, llvm::Value* x, llvm::Value* y) {
      return b_.CreateCall(fn, {b_.CreateBitCast(c, ft->getParamType(0)), b_.CreateBitCast(x, ft->getParamType(1)),
                                b_.CreateBitCast(y, ft->getParamType(2))});
    });
  }
  // Portable: each word's halves as float32, the two exact products summed.
  llvm::Type* f32 = type_of(dot->dtype);
  auto low = [&](llvm::Value* w) { return b_.CreateBitCast(b_.CreateShl(w, 16), f32); };
  auto high = [&](llvm::Value* w) {
    return b_.CreateBitCast(b_.CreateAnd(w, llvm::ConstantInt::get(w->getType(), 0xffff0000u)), f32);
  };
  llvm::Value* sum = b_.CreateFAdd(b_.CreateFMul(low(a), low(b)), b_.CreateFMul(high(a), high(b)));
  return acc ? b_.CreateFAdd(acc, sum) : sum;
}

}  // namespace tessera::codegen_detail
