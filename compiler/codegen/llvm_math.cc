// exp and tanh of float32 vectors as straight-line code.
//
// LLVM lowers llvm.exp of a vector (and Tessera lowered tanh) to one libm
// call a lane: a 64-lane sigmoid cost 64 calls of expf, and a recurrent
// cell's gates, a softmax or a SiLU ran at a few elements a nanosecond at
// best. Here each is a polynomial on the vector:
//
//  exp:  x = n ln2 + r, |r| <= ln2 / 2 (ln2 split in two so that n ln2 is
//        exact); e^r by its degree-6 minimax polynomial (Cephes' expf
//        coefficients); 2^n put in the exponent bits. Within 2 ulp of libm on
//        [-87.3, 88.7]; 0 below, +inf above, NaN kept.
//  tanh: the odd rational minimax approximation p(x) / q(x) on [-7.9, 7.9]
//        (degree 13 over 6, the published coefficients Eigen uses), ±1
//        beyond, x itself for |x| < 4e-4 (where tanh x = x in float32).
//        Within a few ulp.
//
// Scalars keep libm: a scalar loop is not where the time goes, and its
// results stay the reference's.
#include <llvm/IR/Intrinsics.h>

#include <cmath>

#include "compiler/codegen/llvm_emitter.h"

namespace tessera::codegen_detail {

namespace {

llvm::Value* constant(llvm::Value* like, double v) { return llvm::ConstantFP::get(like->getType(), v); }

// a * b + c, fused.
llvm::Value* fma(llvm::IRBuilder<>& b, llvm::Value* a, llvm::Value* x, llvm::Value* c) {
  return b.CreateIntrinsic(llvm::Intrinsic::fma, {a->getType()}, {a, x, c});
}

// c[0] + x (c[1] + x (c[2] + ...)), Horner's rule from the highest term.
llvm::Value* horner(llvm::IRBuilder<>& b, llvm::Value* x, const std::vector<double>& c) {
  llvm::Value* p = constant(x, c.back());
  for (size_t i = c.size() - 1; i-- > 0;) p = fma(b, p, x, constant(x, c[i]));
  return p;
}

}  // namespace

llvm::Value* CodeGen::emit_vector_exp(llvm::Value* x) {
  auto& b = b_;
  const double lo = -87.33654, hi = 88.72283;  // e^lo is the smallest normal float, e^hi the largest
  llvm::Value* clamped = b.CreateMaxNum(b.CreateMinNum(x, constant(x, hi)), constant(x, lo));
  llvm::Value* n = b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, b.CreateFMul(clamped, constant(x, 1.4426950408889634)));
  // r = x - n ln2, ln2 = 0.693359375 - 2.12194440e-4 (the first part exact in few bits).
  llvm::Value* r = fma(b, n, constant(x, -0.693359375), clamped);
  r = fma(b, n, constant(x, 2.12194440e-4), r);
  // e^r = 1 + r + r^2 (1/2 + r (1/6 + ...)).
  llvm::Value* p = horner(b, r, {5.0000001201e-1, 1.6666665459e-1, 4.1665795894e-2, 8.3334519073e-3,
                                 1.3981999507e-3, 1.9875691500e-4});
  llvm::Value* r2 = b.CreateFMul(r, r);
  llvm::Value* e_r = b.CreateFAdd(fma(b, p, r2, r), constant(x, 1.0));
  // 2^n as 2^(n >> 1) * 2^(n - (n >> 1)): each power's n + 127 put in the
  // exponent bits, both normal for n in [-126, 128] (the clamp's range).
  auto* vt = llvm::cast<llvm::FixedVectorType>(x->getType());
  auto* it = llvm::FixedVectorType::get(b.getInt32Ty(), vt->getNumElements());
  llvm::Value* ni = b.CreateFPToSI(n, it);
  llvm::Value* half = b.CreateAShr(ni, llvm::ConstantInt::get(it, 1));
  auto power = [&](llvm::Value* e) {
    llvm::Value* bits = b.CreateShl(b.CreateAdd(e, llvm::ConstantInt::get(it, 127)), llvm::ConstantInt::get(it, 23));
    return b.CreateBitCast(bits, vt);
  };
  llvm::Value* y = b.CreateFMul(b.CreateFMul(e_r, power(half)), power(b.CreateSub(ni, half)));
  y = b.CreateSelect(b.CreateFCmpOLT(x, constant(x, lo)), constant(x, 0.0), y);
  y = b.CreateSelect(b.CreateFCmpOGT(x, constant(x, hi)), constant(x, HUGE_VAL), y);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, y);
}

llvm::Value* CodeGen::emit_vector_tanh(llvm::Value* x) {
  auto& b = b_;
  const double bound = 7.90531110763549805;  // tanh is 1 - 2^-24 from here in float32
  llvm::Value* c = b.CreateMaxNum(b.CreateMinNum(x, constant(x, bound)), constant(x, -bound));
  llvm::Value* x2 = b.CreateFMul(c, c);
  llvm::Value* p = horner(b, x2, {4.89352455891786e-03, 6.37261928875436e-04, 1.48572235717979e-05,
                                  5.12229709037114e-08, -8.60467152213735e-11, 2.00018790482477e-13,
                                  -2.76076847742355e-16});
  llvm::Value* q = horner(b, x2, {4.89352518554385e-03, 2.26843463243900e-03, 1.18534705686654e-04,
                                  1.19825839466702e-06});
  llvm::Value* y = b.CreateFDiv(b.CreateFMul(c, p), q);
  llvm::Value* tiny = b.CreateFCmpOLT(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x), constant(x, 0.0004));
  y = b.CreateSelect(tiny, x, y);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, y);
}

}  // namespace tessera::codegen_detail
