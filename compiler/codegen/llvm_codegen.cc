#include "compiler/codegen/llvm_codegen.h"

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/Transforms/IPO/AlwaysInliner.h>
#include <llvm/Transforms/InstCombine/InstCombine.h>
#include <llvm/Transforms/Scalar/DeadStoreElimination.h>
#include <llvm/Transforms/Scalar/EarlyCSE.h>
#include <llvm/Transforms/Scalar/GVN.h>
#include <llvm/Transforms/Scalar/LICM.h>
#include <llvm/Transforms/Scalar/LoopPassManager.h>
#include <llvm/Transforms/Scalar/LoopRotation.h>
#include <llvm/Transforms/Scalar/SROA.h>
#include <llvm/Transforms/Scalar/SimplifyCFG.h>

#include <unordered_map>
#include <unordered_set>

#include "compiler/codegen/llvm_emitter.h"
#include "compiler/codegen/llvm_init.h"
#include "compiler/ir/functor.h"
#include "compiler/ir/util.h"

namespace tessera {
namespace codegen_detail {
namespace {

// Buffers allocated inside a statement (not captured by an outlined body).
class AllocatedBuffers final : public IRVisitor {
 public:
  std::unordered_set<const BufferNode*> buffers;

 protected:
  using IRVisitor::visit;
  void visit(const AllocateNode* op) override {
    buffers.insert(op->buffer.get());
    IRVisitor::visit(op);
  }
};

// The two dot products of sum x + y when both are dot_u8s8 (none: not).
std::optional<std::pair<const CallNode*, const CallNode*>> dot_u8s8_pair(const Expr& x, const Expr& y) {
  const auto* a = x.as<CallNode>();
  const auto* b = y.as<CallNode>();
  if (!a || !b || a->op != CallOp::kDotU8S8 || b->op != CallOp::kDotU8S8) return std::nullopt;
  return std::pair{a, b};
}
std::optional<std::pair<const CallNode*, const CallNode*>> dot_u8s8_pair(const Expr& sum) {
  if (!sum.defined() || sum.kind() != ExprKind::kAdd) return std::nullopt;
  const auto* add = static_cast<const BinaryNode*>(sum.get());
  return dot_u8s8_pair(add->a, add->b);
}

}  // namespace

llvm::Value* CodeGen::unsupported(const std::string& why, llvm::Type* type) {
  if (error_.is_ok()) error_ = codegen_error(why);
  return llvm::PoisonValue::get(type);
}

llvm::Value* CodeGen::var_value(const VarNode* var) {
  auto it = vars_.find(var);
  if (it != vars_.end()) return it->second;
  return unsupported("variable " + var->name + " is not bound by an enclosing loop", type_of(var->dtype));
}

llvm::Value* CodeGen::buffer_base(const BufferNode* buf) {
  auto it = buffers_.find(buf);
  if (it != buffers_.end()) return it->second;
  unsupported("buffer " + buf->name + " is neither a parameter nor allocated", b_.getPtrTy());
  return llvm::ConstantPointerNull::get(b_.getPtrTy());
}

llvm::Type* CodeGen::type_of(DType t) {
  llvm::Type* scalar = nullptr;
  switch (t.code) {
    case TypeCode::kFloat:
      scalar = t.bits == 16 ? b_.getHalfTy() : t.bits == 64 ? b_.getDoubleTy() : b_.getFloatTy();
      break;
    case TypeCode::kBFloat: scalar = b_.getBFloatTy(); break;
    case TypeCode::kInt:
    case TypeCode::kUInt: scalar = b_.getIntNTy(t.bits); break;
    case TypeCode::kHandle: scalar = b_.getPtrTy(); break;
  }
  return t.lanes > 1 ? llvm::FixedVectorType::get(scalar, t.lanes) : scalar;
}

// Bools occupy a byte in memory.
llvm::Type* CodeGen::storage_type(DType t) {
  return t.is_bool() ? static_cast<llvm::Type*>(b_.getInt8Ty()) : type_of(t.element_of());
}

void CodeGen::set_attributes(llvm::Function* fn, bool inline_always) {
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  if (target_.cpu != "generic") fn->addFnAttr("target-cpu", target_.cpu);
  if (!target_.features.empty()) fn->addFnAttr("target-features", target_.feature_string());
  // Some x86 tunings prefer 256-bit vectors and split wider ones; the schedule
  // chose the width, so say it is wanted.
  std::string width = std::to_string(target_.vector_bits);
  fn->addFnAttr("prefer-vector-width", width);
  fn->addFnAttr("min-legal-vector-width", width);
  if (inline_always) fn->addFnAttr(llvm::Attribute::AlwaysInline);
}

void CodeGen::add_argument_sizes(const PrimFunc& f) {
  std::vector<uint64_t> sizes = {f.params.size()};
  for (const Buffer& p : f.params)
    sizes.push_back(static_cast<uint64_t>(p->num_elements() * p->dtype.element_of().storage_bytes()));
  llvm::Constant* init = llvm::ConstantDataArray::get(ctx_, sizes);
  // The suffix is runtime/c_abi.h's TESSERA_KERNEL_ARGS_SUFFIX.
  auto* table = new llvm::GlobalVariable(mod_, init->getType(), /*isConstant=*/true, llvm::GlobalValue::ExternalLinkage,
                                         init, f.name + "__tessera_args");
  table->setAlignment(llvm::Align(8));
}

Status CodeGen::add_function(const PrimFunc& f) {
  base_name_ = f.name;
  llvm::Type* ptr = b_.getPtrTy();
  llvm::Type* i32 = b_.getInt32Ty();
  // The implementation takes each buffer as a noalias, 64-byte aligned pointer;
  // the exported wrapper unpacks the ABI's argument array and calls it.
  std::vector<llvm::Type*> params(f.params.size(), ptr);
  auto* impl_ty = llvm::FunctionType::get(i32, params, false);
  auto* impl = llvm::Function::Create(impl_ty, llvm::Function::InternalLinkage, f.name + ".impl", mod_);
  set_attributes(impl, /*inline_always=*/true);
  for (size_t i = 0; i < f.params.size(); ++i) {
    impl->addParamAttr(i, llvm::Attribute::NoAlias);
    impl->addParamAttr(i, llvm::Attribute::getWithAlignment(ctx_, llvm::Align(64)));
    impl->getArg(i)->setName(f.params[i]->name);
    buffers_[f.params[i].get()] = impl->getArg(i);
  }
  fn_ = impl;
  entry_ = llvm::BasicBlock::Create(ctx_, "entry", impl);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "body", impl);
  b_.SetInsertPoint(body);
  emit(f.body);
  release_tiles();
  b_.CreateRet(b_.getInt32(0));
  b_.SetInsertPoint(entry_);
  b_.CreateBr(body);

  auto* api_ty = llvm::FunctionType::get(i32, {ptr}, false);
  auto* api = llvm::Function::Create(api_ty, llvm::Function::ExternalLinkage, f.name, mod_);
  set_attributes(api, false);
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", api));
  std::vector<llvm::Value*> args;
  for (size_t i = 0; i < f.params.size(); ++i) {
    llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptr, api->getArg(0), i);
    args.push_back(b_.CreateLoad(ptr, slot));
  }
  b_.CreateRet(b_.CreateCall(impl, args));
  add_argument_sizes(f);
  buffers_.clear();
  vars_.clear();
  if (!error_.is_ok()) return error_.with_context("cannot emit function " + f.name);
  std::string err;
  llvm::raw_string_ostream os(err);
  if (llvm::verifyFunction(*impl, &os) || llvm::verifyFunction(*api, &os))
    return codegen_error("LLVM rejected the generated function " + f.name + ": " + os.str());
  return Status::ok();
}

llvm::Value* CodeGen::emit(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::kIntImm: {
      const auto* n = e.as<IntImmNode>();
      return llvm::ConstantInt::get(type_of(n->dtype), n->value, /*signed=*/true);
    }
    case ExprKind::kFloatImm: return llvm::ConstantFP::get(type_of(e.dtype()), e.as<FloatImmNode>()->value);
    case ExprKind::kVar: return var_value(e.as<VarNode>());
    case ExprKind::kAdd:
    case ExprKind::kSub:
    case ExprKind::kMul:
    case ExprKind::kDiv:
    case ExprKind::kMod:
    case ExprKind::kMin:
    case ExprKind::kMax:
    case ExprKind::kEQ:
    case ExprKind::kNE:
    case ExprKind::kLT:
    case ExprKind::kLE:
    case ExprKind::kGT:
    case ExprKind::kGE:
    case ExprKind::kAnd:
    case ExprKind::kOr: return emit_binary(static_cast<const BinaryNode*>(e.get()));
    case ExprKind::kNot: return b_.CreateNot(emit(e.as<NotNode>()->a));
    case ExprKind::kSelect: {
      // Both branches are evaluated, so a load in a branch that is not taken
      // (padding's read outside the input) must still stay inside its buffer
      // (guard_branch_load). A condition the same for every lane stays scalar.
      const auto* n = e.as<SelectNode>();
      const auto* uniform = n->cond.as<BroadcastNode>();
      if (is_uniform_chain(n)) return emit_select_chain(n);
      llvm::Value* cond = emit(uniform ? uniform->value : n->cond);
      ++select_depth_;
      branch_conds_.push_back(cond);
      llvm::Value* t = emit(n->true_value);
      branch_conds_.back() = b_.CreateNot(cond);
      llvm::Value* f = emit(n->false_value);
      branch_conds_.pop_back();
      --select_depth_;
      return b_.CreateSelect(cond, t, f);
    }
    case ExprKind::kCast: {
      const auto* n = e.as<CastNode>();
      return emit_cast(n->dtype, emit(n->value), n->value.dtype());
    }
    case ExprKind::kCall: return emit_call(e.as<CallNode>());
    case ExprKind::kLoad: return emit_load(e.as<LoadNode>());
    case ExprKind::kRamp: {
      const auto* n = e.as<RampNode>();
      llvm::Value* base = splat(emit(n->base), n->lanes);
      std::vector<llvm::Constant*> steps;
      for (int i = 0; i < n->lanes; ++i) steps.push_back(llvm::ConstantInt::get(type_of(n->base.dtype()), i));
      llvm::Value* offsets = b_.CreateMul(llvm::ConstantVector::get(steps), splat(emit(n->stride), n->lanes));
      return b_.CreateAdd(base, offsets);
    }
    case ExprKind::kBroadcast: {
      const auto* n = e.as<BroadcastNode>();
      return splat(emit(n->value), n->lanes);
    }
    case ExprKind::kTensorRead:
      return unsupported("a TensorRead of " + e.as<TensorReadNode>()->tensor->name +
                             " is left in the loop IR (lowering replaces tensor reads by loads)",
                         type_of(e.dtype()));
    case ExprKind::kReduce:
      return unsupported(std::string("a Reduce (") + reduce_op_name(e.as<ReduceNode>()->op) +
                             ") is left in the loop IR (lowering replaces reductions by loops)",
                         type_of(e.dtype()));
  }
  return unsupported(std::string("no code for a ") + expr_kind_name(e.kind()) + " expression", type_of(e.dtype()));
}

llvm::Value* CodeGen::emit_binary(const BinaryNode* op) {
  // acc + dot: the dot-product instruction accumulates itself; acc + (dot +
  // dot) of u8 x s8 words, the pair a matrix-multiply instruction may take.
  if (op->kind == ExprKind::kAdd) {
    if (const auto pair = dot_u8s8_pair(op->a, op->b)) return emit_dot_pair(nullptr, pair->first, pair->second);
    for (const auto& [dot, acc] : {std::pair{op->b, op->a}, std::pair{op->a, op->b}}) {
      if (const auto pair = dot_u8s8_pair(dot)) return emit_dot_pair(emit(acc), pair->first, pair->second);
      // (acc + dot0) + dot1, as the simplifier leaves a sum of the pair.
      if (acc.kind() == ExprKind::kAdd) {
        const auto* inner = static_cast<const BinaryNode*>(acc.get());
        for (const auto& [first, rest] : {std::pair{inner->b, inner->a}, std::pair{inner->a, inner->b}})
          if (const auto pair = dot_u8s8_pair(first, dot)) return emit_dot_pair(emit(rest), pair->first, pair->second);
      }
      if (const auto* call = dot.as<CallNode>(); call && call->op == CallOp::kDotU8S8)
        return emit_dot_u8s8(emit(acc), call);
      else if (call && call->op == CallOp::kDotBf16)
        return emit_dot_bf16(emit(acc), call);
    }
  }
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  DType t = op->a.dtype();
  if (t.is_float()) {
    switch (op->kind) {
      case ExprKind::kAdd: return b_.CreateFAdd(a, b);
      case ExprKind::kSub: return b_.CreateFSub(a, b);
      case ExprKind::kMul: return b_.CreateFMul(a, b);
      case ExprKind::kDiv: return b_.CreateFDiv(a, b);
      case ExprKind::kMod: {
        llvm::Value* q = b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, b_.CreateFDiv(a, b));
        return b_.CreateFSub(a, b_.CreateFMul(q, b));
      }
      // Compare-and-select maps to one min/max instruction.
      case ExprKind::kMin: return b_.CreateSelect(b_.CreateFCmpOLT(a, b), a, b);
      case ExprKind::kMax: return b_.CreateSelect(b_.CreateFCmpOGT(a, b), a, b);
      case ExprKind::kEQ: return b_.CreateFCmpOEQ(a, b);
      case ExprKind::kNE: return b_.CreateFCmpUNE(a, b);
      case ExprKind::kLT: return b_.CreateFCmpOLT(a, b);
      case ExprKind::kLE: return b_.CreateFCmpOLE(a, b);
      case ExprKind::kGT: return b_.CreateFCmpOGT(a, b);
      case ExprKind::kGE: return b_.CreateFCmpOGE(a, b);
      default: break;
    }
  }
  bool is_signed = t.is_int();
  switch (op->kind) {
    case ExprKind::kAdd: return b_.CreateAdd(a, b);
    case ExprKind::kSub: return b_.CreateSub(a, b);
    case ExprKind::kMul: return b_.CreateMul(a, b);
    case ExprKind::kDiv:
    case ExprKind::kMod: {
      // In a Select's branch, a lane the branch does not keep may have read
      // no element (guard_branch_load): it divides by 1, not by a zero that
      // would trap.
      if (select_depth_ > 0 && !llvm::isa<llvm::Constant>(b))
        b = b_.CreateSelect(b_.CreateICmpEQ(b, llvm::Constant::getNullValue(b->getType())),
                            llvm::ConstantInt::get(b->getType(), 1), b);
      if (!is_signed) return op->kind == ExprKind::kDiv ? b_.CreateUDiv(a, b) : b_.CreateURem(a, b);
      // Floor semantics: adjust truncating division when the signs differ.
      llvm::Value* q = b_.CreateSDiv(a, b);
      llvm::Value* r = b_.CreateSRem(a, b);
      llvm::Value* zero = llvm::Constant::getNullValue(a->getType());
      llvm::Value* adjust =
          b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateICmpNE(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(b, zero)));
      if (op->kind == ExprKind::kDiv) return b_.CreateSub(q, b_.CreateZExt(adjust, q->getType()));
      return b_.CreateSelect(adjust, b_.CreateAdd(r, b), r);
    }
    case ExprKind::kMin:
      return b_.CreateBinaryIntrinsic(is_signed ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, a, b);
    case ExprKind::kMax:
      return b_.CreateBinaryIntrinsic(is_signed ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, a, b);
    case ExprKind::kEQ: return b_.CreateICmpEQ(a, b);
    case ExprKind::kNE: return b_.CreateICmpNE(a, b);
    case ExprKind::kLT: return is_signed ? b_.CreateICmpSLT(a, b) : b_.CreateICmpULT(a, b);
    case ExprKind::kLE: return is_signed ? b_.CreateICmpSLE(a, b) : b_.CreateICmpULE(a, b);
    case ExprKind::kGT: return is_signed ? b_.CreateICmpSGT(a, b) : b_.CreateICmpUGT(a, b);
    case ExprKind::kGE: return is_signed ? b_.CreateICmpSGE(a, b) : b_.CreateICmpUGE(a, b);
    case ExprKind::kAnd: return b_.CreateAnd(a, b);
    case ExprKind::kOr: return b_.CreateOr(a, b);
    default:
      return unsupported(std::string("no code for ") + expr_kind_name(op->kind) + " of " + t.to_string(),
                         type_of(op->dtype));
  }
}

llvm::Value* CodeGen::emit_cast(DType to, llvm::Value* v, DType from) {
  llvm::Type* ty = type_of(to);
  if (to.is_bool()) {
    return from.is_float() ? b_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()))
                           : b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  }
  if (from.is_float() && to.is_float()) return b_.CreateFPCast(v, ty);
  if (from.is_float()) return to.is_int() ? b_.CreateFPToSI(v, ty) : b_.CreateFPToUI(v, ty);
  if (to.is_float()) return from.is_int() ? b_.CreateSIToFP(v, ty) : b_.CreateUIToFP(v, ty);
  return b_.CreateIntCast(v, ty, from.is_int());
}

// Applies a scalar libm function lane by lane.
llvm::Value* CodeGen::per_lane(llvm::Value* v, DType t, const char* name) {
  llvm::Type* scalar = type_of(t.element_of());
  std::string fn_name = std::string(name) + (t.bits == 32 ? "f" : "");
  llvm::FunctionCallee fn = mod_.getOrInsertFunction(fn_name, scalar, scalar);
  if (t.lanes == 1) return b_.CreateCall(fn, {v});
  llvm::Value* out = llvm::PoisonValue::get(v->getType());
  for (int i = 0; i < t.lanes; ++i)
    out = b_.CreateInsertElement(out, b_.CreateCall(fn, {b_.CreateExtractElement(v, i)}), i);
  return out;
}

llvm::Value* CodeGen::emit_call(const CallNode* op) {
  if (op->op == CallOp::kDotU8S8) return emit_dot_u8s8(nullptr, op);
  if (op->op == CallOp::kDotBf16) return emit_dot_bf16(nullptr, op);
  if (op->op == CallOp::kPackBf16) return emit_pack_bf16(op);
  DType t = op->dtype;
  llvm::Value* x = emit(op->args[0]);
  // Half and bfloat math runs in float.
  bool widen = t.is_float() && t.bits == 16;
  DType ct = widen ? DType::f32(t.lanes) : t;
  if (widen) x = b_.CreateFPExt(x, type_of(ct));
  llvm::Value* r = nullptr;
  // float32 vectors: exp, log and tanh as polynomials (llvm_math.cc), not a libm
  // call a lane.
  const bool vector_f32 = ct.lanes > 1 && ct.is_float() && ct.bits == 32;
  auto exp = [&](llvm::Value* v) {
    return vector_f32 ? emit_vector_exp(v) : b_.CreateUnaryIntrinsic(llvm::Intrinsic::exp, v);
  };
  switch (op->op) {
    case CallOp::kExp: r = exp(x); break;
    case CallOp::kLog: r = vector_f32 ? emit_vector_log(x) : b_.CreateUnaryIntrinsic(llvm::Intrinsic::log, x); break;
    case CallOp::kSqrt: r = b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x); break;
    case CallOp::kFloor: r = b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x); break;
    case CallOp::kCeil: r = b_.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x); break;
    case CallOp::kRound: r = b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, x); break;
    case CallOp::kTanh: r = vector_f32 ? emit_vector_tanh(x) : per_lane(x, ct, "tanh"); break;
    case CallOp::kErf: r = per_lane(x, ct, "erf"); break;
    // The kernel's libm calls resolve against the loading process's libm,
    // as tanhf and erff do (on aarch64 boards too: the runtime links libm).
    case CallOp::kSin: r = b_.CreateUnaryIntrinsic(llvm::Intrinsic::sin, x); break;
    case CallOp::kCos: r = b_.CreateUnaryIntrinsic(llvm::Intrinsic::cos, x); break;
    case CallOp::kTan: r = per_lane(x, ct, "tan"); break;
    case CallOp::kAsin: r = per_lane(x, ct, "asin"); break;
    case CallOp::kAcos: r = per_lane(x, ct, "acos"); break;
    case CallOp::kAtan: r = per_lane(x, ct, "atan"); break;
    case CallOp::kSinh: r = per_lane(x, ct, "sinh"); break;
    case CallOp::kCosh: r = per_lane(x, ct, "cosh"); break;
    case CallOp::kAsinh: r = per_lane(x, ct, "asinh"); break;
    case CallOp::kAcosh: r = per_lane(x, ct, "acosh"); break;
    case CallOp::kAtanh: r = per_lane(x, ct, "atanh"); break;
    case CallOp::kPow: {
      llvm::Value* y = emit(op->args[1]);
      if (widen) y = b_.CreateFPExt(y, type_of(ct));
      r = b_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, x, y);
      break;
    }
    case CallOp::kSigmoid: {
      llvm::Value* one = llvm::ConstantFP::get(x->getType(), 1.0);
      llvm::Value* e = exp(b_.CreateFNeg(x));
      r = b_.CreateFDiv(one, b_.CreateFAdd(one, e));
      break;
    }
    case CallOp::kDotU8S8: break;   // emit_dot_u8s8, above
    case CallOp::kDotBf16: break;   // emit_dot_bf16, above
    case CallOp::kPackBf16: break;  // emit_pack_bf16, above
    case CallOp::kAbs:
      if (!t.is_float()) return b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b_.getFalse());
      r = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
      break;
  }
  return widen ? b_.CreateFPTrunc(r, type_of(t)) : r;
}

void CodeGen::emit(const Stmt& s) {
  switch (s.kind()) {
    case StmtKind::kStore: return emit_store(s.as<StoreNode>());
    case StmtKind::kFor: return emit_for(s.as<ForNode>());
    case StmtKind::kSeq: {
      const std::vector<Stmt>& stmts = s.as<SeqNode>()->stmts;
      for (size_t i = 0; i < stmts.size(); ++i) {
        // C zeroed, then a tile product into it: its tiles start at zero.
        if (i + 1 < stmts.size() && emit_zeroed_tile_product(stmts[i], stmts[i + 1])) {
          ++i;
          continue;
        }
        emit(stmts[i]);
      }
      return;
    }
    case StmtKind::kIfThenElse: {
      const auto* n = s.as<IfThenElseNode>();
      llvm::Value* cond = emit(n->cond);
      auto* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn_);
      auto* else_bb = n->else_case.defined() ? llvm::BasicBlock::Create(ctx_, "else", fn_) : nullptr;
      auto* done = llvm::BasicBlock::Create(ctx_, "endif", fn_);
      b_.CreateCondBr(cond, then_bb, else_bb ? else_bb : done);
      b_.SetInsertPoint(then_bb);
      emit(n->then_case);
      b_.CreateBr(done);
      if (else_bb) {
        b_.SetInsertPoint(else_bb);
        emit(n->else_case);
        b_.CreateBr(done);
      }
      b_.SetInsertPoint(done);
      return;
    }
    case StmtKind::kAllocate: return emit_allocate(s.as<AllocateNode>());
    case StmtKind::kAttr: return emit(s.as<AttrNode>()->body);
  }
}

void CodeGen::emit_allocate(const AllocateNode* op) {
  const Buffer& buf = op->buffer;
  llvm::Type* elem = storage_type(buf->dtype);
  if (buf->scope == MemoryScope::kLocal) {
    // In the entry block, so SROA can promote small buffers to registers.
    llvm::IRBuilder<> entry(entry_, entry_->begin());
    auto* slot = entry.CreateAlloca(elem, entry.getInt64(buf->num_elements()), buf->name);
    slot->setAlignment(llvm::Align(64));
    buffers_[buf.get()] = slot;
    emit(op->body);
    return;
  }
  llvm::FunctionCallee alloc = mod_.getOrInsertFunction("tessera_workspace_alloc", b_.getPtrTy(), b_.getInt64Ty());
  llvm::FunctionCallee release = mod_.getOrInsertFunction("tessera_workspace_free", b_.getVoidTy(), b_.getPtrTy());
  int64_t bytes = buf->num_elements() * buf->dtype.storage_bytes();
  llvm::Value* ptr = b_.CreateCall(alloc, {b_.getInt64(bytes)});
  buffers_[buf.get()] = ptr;
  emit(op->body);
  b_.CreateCall(release, {ptr});
}

void CodeGen::emit_serial_loop(const Var& var, llvm::Value* begin, llvm::Value* end, const Stmt& body) {
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, "for." + var.name(), fn_);
  auto* loop_body = llvm::BasicBlock::Create(ctx_, "body." + var.name(), fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "end." + var.name(), fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* phi = b_.CreatePHI(begin->getType(), 2, var.name());
  phi->addIncoming(begin, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(phi, end), loop_body, exit);
  b_.SetInsertPoint(loop_body);
  vars_[var.node()] = phi;
  emit(body);
  llvm::Value* next = b_.CreateAdd(phi, llvm::ConstantInt::get(phi->getType(), 1), "", /*NUW=*/true, /*NSW=*/true);
  phi->addIncoming(next, b_.GetInsertBlock());
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
}

void CodeGen::emit_for(const ForNode* op) {
  if (op->loop_kind == LoopKind::kParallel && parallel_depth_ == 0) return emit_parallel(op);
  if (op->loop_kind == LoopKind::kTensorized) return emit_tensorized(op);
  if (emit_transposed_tile(op)) return;
  llvm::Value* begin = emit(op->min);
  llvm::Value* end = b_.CreateAdd(begin, emit(op->extent));
  emit_serial_loop(op->var, begin, end, op->body);
}

void CodeGen::return_if_error(llvm::Value* status) {
  auto* fail = llvm::BasicBlock::Create(ctx_, "parallel.fail", fn_);
  auto* ok = llvm::BasicBlock::Create(ctx_, "parallel.ok", fn_);
  b_.CreateCondBr(b_.CreateICmpNE(status, b_.getInt32(0)), fail, ok);
  b_.SetInsertPoint(fail);
  b_.CreateRet(status);
  b_.SetInsertPoint(ok);
}

// A parallel loop becomes a task body `int32 f(task, num_tasks, closure)`
// that runs a contiguous chunk of iterations; the closure carries the free
// variables and buffers the loop uses. The body calls an always-inline inner
// function whose buffer parameters are noalias, as in the kernel itself.
void CodeGen::emit_parallel(const ForNode* op) {
  Stmt loop = make_for(op->var, op->min, op->extent, LoopKind::kSerial, op->body);
  std::vector<Var> free = free_vars(loop);
  AllocatedBuffers inner;
  inner(loop);
  std::vector<Buffer> captured;
  for (const Buffer& buf : buffers_used(loop))
    if (!inner.buffers.count(buf.get())) captured.push_back(buf);

  llvm::Type* ptr = b_.getPtrTy();
  llvm::Type* i32 = b_.getInt32Ty();
  std::vector<llvm::Type*> fields;
  for (const Var& v : free) fields.push_back(type_of(v.dtype()));
  for (size_t i = 0; i < captured.size(); ++i) fields.push_back(ptr);
  llvm::StructType* closure_ty = llvm::StructType::get(ctx_, fields);

  // In the caller: fill the closure and launch.
  llvm::Value* closure;
  {
    llvm::IRBuilder<> entry(entry_, entry_->begin());
    closure = entry.CreateAlloca(closure_ty);
  }
  for (size_t i = 0; i < free.size(); ++i)
    b_.CreateStore(var_value(free[i].node()), b_.CreateStructGEP(closure_ty, closure, i));
  for (size_t i = 0; i < captured.size(); ++i)
    b_.CreateStore(buffer_base(captured[i].get()), b_.CreateStructGEP(closure_ty, closure, free.size() + i));

  std::string name = base_name_ + ".parallel" + std::to_string(outlined_++);
  auto* task_ty = llvm::FunctionType::get(i32, {i32, i32, ptr}, false);
  auto* task = llvm::Function::Create(task_ty, llvm::Function::InternalLinkage, name, mod_);
  set_attributes(task, false);
  std::vector<llvm::Type*> body_params = {i32, i32};
  body_params.insert(body_params.end(), fields.begin(), fields.end());
  auto* body_fn = llvm::Function::Create(llvm::FunctionType::get(i32, body_params, false),
                                         llvm::Function::InternalLinkage, name + ".body", mod_);
  set_attributes(body_fn, true);
  for (size_t i = 0; i < captured.size(); ++i) body_fn->addParamAttr(2 + free.size() + i, llvm::Attribute::NoAlias);

  llvm::FunctionCallee launch =
      mod_.getOrInsertFunction("tessera_parallel_launch", llvm::FunctionType::get(i32, {ptr, ptr, i32}, false));
  llvm::Value* status = b_.CreateCall(launch, {task, closure, b_.getInt32(0)});
  return_if_error(status);

  // Save the caller's context and emit the two new functions.
  auto saved_fn = fn_;
  auto saved_entry = entry_;
  auto saved_vars = vars_;
  auto saved_buffers = buffers_;
  llvm::BasicBlock* saved_block = b_.GetInsertBlock();
  {
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", task));
    std::vector<llvm::Value*> args = {task->getArg(0), task->getArg(1)};
    for (size_t i = 0; i < fields.size(); ++i)
      args.push_back(b_.CreateLoad(fields[i], b_.CreateStructGEP(closure_ty, task->getArg(2), i)));
    b_.CreateRet(b_.CreateCall(body_fn, args));
  }
  fn_ = body_fn;
  entry_ = llvm::BasicBlock::Create(ctx_, "entry", body_fn);
  auto* start = llvm::BasicBlock::Create(ctx_, "start", body_fn);
  b_.SetInsertPoint(start);
  vars_.clear();
  buffers_.clear();
  for (size_t i = 0; i < free.size(); ++i) vars_[free[i].node()] = body_fn->getArg(2 + i);
  for (size_t i = 0; i < captured.size(); ++i) buffers_[captured[i].get()] = body_fn->getArg(2 + free.size() + i);
  llvm::Type* i64 = b_.getInt64Ty();
  llvm::Value* extent = emit(op->extent);
  llvm::Value* min = emit(op->min);
  llvm::Value* tasks = b_.CreateSExt(body_fn->getArg(1), i64);
  llvm::Value* task_id = b_.CreateSExt(body_fn->getArg(0), i64);
  llvm::Value* chunk = b_.CreateSDiv(b_.CreateAdd(extent, b_.CreateSub(tasks, b_.getInt64(1))), tasks);
  llvm::Value* begin = b_.CreateMul(task_id, chunk);
  llvm::Value* end = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateAdd(begin, chunk), extent);
  ++parallel_depth_;
  emit_serial_loop(op->var, b_.CreateAdd(min, begin), b_.CreateAdd(min, end), op->body);
  --parallel_depth_;
  b_.CreateRet(b_.getInt32(0));
  b_.SetInsertPoint(entry_);
  b_.CreateBr(start);

  fn_ = saved_fn;
  entry_ = saved_entry;
  vars_ = std::move(saved_vars);
  buffers_ = std::move(saved_buffers);
  b_.SetInsertPoint(saved_block);
}

// ---------------------------------------------------------------------------

// A chain of selects on conditions the same for every lane, one select in a
// branch of another (a concatenation of many inputs: select(i < 1, a,
// select(i < 2, b, ...))). Evaluating every branch costs each element the
// whole chain; branching on the scalar condition evaluates the taken one.
bool CodeGen::is_uniform_chain(const SelectNode* n) {
  auto uniform_select = [](const Expr& e) {
    const auto* s = e.as<SelectNode>();
    return s && s->cond.as<BroadcastNode>();
  };
  return n->cond.as<BroadcastNode>() && (uniform_select(n->true_value) || uniform_select(n->false_value));
}

llvm::Value* CodeGen::emit_select_chain(const SelectNode* n) {
  llvm::Value* cond = emit(n->cond.as<BroadcastNode>()->value);
  llvm::Function* fn = b_.GetInsertBlock()->getParent();
  llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "select.true", fn);
  llvm::BasicBlock* else_bb = llvm::BasicBlock::Create(ctx_, "select.false", fn);
  llvm::BasicBlock* merge_bb = llvm::BasicBlock::Create(ctx_, "select.end", fn);
  b_.CreateCondBr(cond, then_bb, else_bb);
  b_.SetInsertPoint(then_bb);
  llvm::Value* t = emit(n->true_value);
  llvm::BasicBlock* then_end = b_.GetInsertBlock();
  b_.CreateBr(merge_bb);
  b_.SetInsertPoint(else_bb);
  llvm::Value* f = emit(n->false_value);
  llvm::BasicBlock* else_end = b_.GetInsertBlock();
  b_.CreateBr(merge_bb);
  b_.SetInsertPoint(merge_bb);
  llvm::PHINode* phi = b_.CreatePHI(t->getType(), 2);
  phi->addIncoming(t, then_end);
  phi->addIncoming(f, else_end);
  return phi;
}

}  // namespace codegen_detail

namespace {

using codegen_detail::CodeGen;
using codegen_detail::codegen_error;

struct Compiled {
  std::unique_ptr<llvm::LLVMContext> ctx;
  std::unique_ptr<llvm::Module> mod;
  std::unique_ptr<llvm::TargetMachine> tm;
};

// The loop IR arrives vectorized, unrolled and tiled by its schedule, so
// LLVM's job is scalar cleanup: inline the kernel body, promote local buffers
// and the accumulators of unrolled micro-tiles to registers (SROA, LICM with
// promotion, GVN and dead-store elimination), and remove redundancy. A third of O3's time, the same code for
// scheduled kernels.
llvm::ModulePassManager fast_pipeline() {
  llvm::ModulePassManager mpm;
  mpm.addPass(llvm::AlwaysInlinerPass());
  llvm::FunctionPassManager fpm;
  fpm.addPass(llvm::SROAPass(llvm::SROAOptions::ModifyCFG));
  fpm.addPass(llvm::EarlyCSEPass(/*UseMemorySSA=*/true));
  fpm.addPass(llvm::InstCombinePass());
  fpm.addPass(llvm::SimplifyCFGPass());
  llvm::LoopPassManager lpm;
  lpm.addPass(llvm::LoopRotatePass());
  lpm.addPass(llvm::LICMPass(llvm::LICMOptions()));
  fpm.addPass(llvm::createFunctionToLoopPassAdaptor(std::move(lpm), /*UseMemorySSA=*/true));
  fpm.addPass(llvm::SROAPass(llvm::SROAOptions::ModifyCFG));
  fpm.addPass(llvm::GVNPass());
  // Accumulators of a micro-tile whose window loops are unrolled live in
  // straight-line code, where no loop lets LICM promote them: GVN forwards
  // each tap's reload, dead-store elimination drops each tap's store.
  fpm.addPass(llvm::DSEPass());
  fpm.addPass(llvm::InstCombinePass());
  fpm.addPass(llvm::SimplifyCFGPass());
  mpm.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(fpm)));
  return mpm;
}

Result<Compiled> compile(const std::vector<PrimFunc>& funcs, const Target& target, const CodegenOptions& options) {
  ensure_llvm_initialized();
  Compiled c;
  std::string error;
  const llvm::Target* llvm_target = llvm::TargetRegistry::lookupTarget(target.triple, error);
  if (!llvm_target) return codegen_error("unknown triple " + target.triple + ": " + error);
  llvm::TargetOptions target_options;
  target_options.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  c.tm.reset(llvm_target->createTargetMachine(target.triple, target.cpu, target.feature_string(), target_options,
                                              llvm::Reloc::PIC_, llvm::CodeModel::Small,
                                              llvm::CodeGenOptLevel::Aggressive));
  if (!c.tm) return codegen_error("LLVM cannot create a target machine for " + target.to_string());
  c.ctx = std::make_unique<llvm::LLVMContext>();
  c.mod = std::make_unique<llvm::Module>("tessera", *c.ctx);
  c.mod->setTargetTriple(target.triple);
  c.mod->setDataLayout(c.tm->createDataLayout());
  CodeGen gen(*c.ctx, *c.mod, target);
  for (const PrimFunc& f : funcs) TESSERA_RETURN_IF_ERROR(gen.add_function(f));

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(c.tm.get());
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm =
      options.full_pipeline ? pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3) : fast_pipeline();
  mpm.run(*c.mod, mam);
  return c;
}

Result<std::string> emit_file(const std::vector<PrimFunc>& funcs, const Target& target, const CodegenOptions& options,
                              llvm::CodeGenFileType type) {
  TESSERA_ASSIGN_OR_RETURN(Compiled c, compile(funcs, target, options));
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (c.tm->addPassesToEmitFile(pm, os, nullptr, type))
    return codegen_error("LLVM cannot emit this file type for " + target.triple);
  pm.run(*c.mod);
  return std::string(buffer.data(), buffer.size());
}

}  // namespace

Result<std::string> emit_llvm_ir(const std::vector<PrimFunc>& funcs, const Target& target,
                                 const CodegenOptions& options) {
  TESSERA_ASSIGN_OR_RETURN(Compiled c, compile(funcs, target, options));
  std::string text;
  llvm::raw_string_ostream os(text);
  c.mod->print(os, nullptr);
  return os.str();
}

Result<std::string> emit_object(const std::vector<PrimFunc>& funcs, const Target& target,
                                const CodegenOptions& options) {
  return emit_file(funcs, target, options, llvm::CodeGenFileType::ObjectFile);
}

Result<std::string> emit_assembly(const std::vector<PrimFunc>& funcs, const Target& target,
                                  const CodegenOptions& options) {
  return emit_file(funcs, target, options, llvm::CodeGenFileType::AssemblyFile);
}

}  // namespace tessera
