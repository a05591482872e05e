// exp, log and tanh of float32 vectors as straight-line code.
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
//  log:  x = m 2^e with m in [sqrt(1/2), sqrt(2)) (subnormals scaled by
//        2^23 first); log(m) = f - f^2/2 + f^3 p(f), f = m - 1, by Cephes'
//        logf polynomial; e ln2 added in two parts. Within 2 ulp of libm;
//        -inf at 0, NaN below it, +inf and NaN kept. A log-mel front end's
//        8,080 logs took 32 us as libm calls.
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

llvm::Value* constant(llvm::Value* like, double v) {
  return llvm::ConstantFP::get(like->getType(), v);
}

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
  llvm::Value* n =
      b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, b.CreateFMul(clamped, constant(x, 1.4426950408889634)));
  // r = x - n ln2, ln2 = 0.693359375 - 2.12194440e-4 (the first part exact in few bits).
  llvm::Value* r = fma(b, n, constant(x, -0.693359375), clamped);
  r = fma(b, n, constant(x, 2.12194440e-4), r);
  // e^r = 1 + r + r^2 (1/2 + r (1/6 + ...)).
  llvm::Value* p = horner(
      b, r, {5.0000001201e-1, 1.6666665459e-1, 4.1665795894e-2, 8.3334519073e-3, 1.3981999507e-3, 1.9875691500e-4});
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

llvm::Value* CodeGen::emit_vector_log(llvm::Value* x) {
  auto& b = b_;
  auto* vt = llvm::cast<llvm::FixedVectorType>(x->getType());
  auto* it = llvm::FixedVectorType::get(b.getInt32Ty(), vt->getNumElements());
  auto int_constant = [&](int64_t v) { return llvm::ConstantInt::get(it, static_cast<uint64_t>(v), true); };
  // Subnormals scaled into the normal range, their exponent corrected.
  llvm::Value* subnormal = b.CreateFCmpOLT(x, constant(x, 1.1754943508222875e-38));
  llvm::Value* scaled = b.CreateSelect(subnormal, b.CreateFMul(x, constant(x, 8388608.0)), x);
  llvm::Value* bits = b.CreateBitCast(scaled, it);
  // x = m 2^e with m in [1/2, 1).
  llvm::Value* e = b.CreateSub(b.CreateLShr(bits, int_constant(23)), int_constant(126));
  e = b.CreateSelect(subnormal, b.CreateSub(e, int_constant(23)), e);
  llvm::Value* m =
      b.CreateBitCast(b.CreateOr(b.CreateAnd(bits, int_constant(0x007fffff)), int_constant(0x3f000000)), vt);
  // m below sqrt(1/2) doubles (e one less): f = m - 1 in [-0.29, 0.41).
  llvm::Value* low = b.CreateFCmpOLT(m, constant(x, 0.707106781186547524));
  llvm::Value* ef = b.CreateSIToFP(b.CreateSelect(low, b.CreateSub(e, int_constant(1)), e), vt);
  llvm::Value* f = b.CreateFSub(b.CreateSelect(low, b.CreateFAdd(m, m), m), constant(x, 1.0));
  llvm::Value* f2 = b.CreateFMul(f, f);
  llvm::Value* p = horner(b, f,
                          {3.3333331174e-1, -2.4999993993e-1, 2.0000714765e-1, -1.6668057665e-1, 1.4249322787e-1,
                           -1.2420140846e-1, 1.1676998740e-1, -1.1514610310e-1, 7.0376836292e-2});
  llvm::Value* y = b.CreateFMul(b.CreateFMul(p, f), f2);
  y = fma(b, ef, constant(x, -2.12194440e-4), y);
  y = fma(b, f2, constant(x, -0.5), y);
  llvm::Value* r = b.CreateFAdd(f, y);
  r = fma(b, ef, constant(x, 0.693359375), r);
  r = b.CreateSelect(b.CreateFCmpOEQ(x, constant(x, 0.0)), constant(x, -HUGE_VAL), r);
  r = b.CreateSelect(b.CreateFCmpOLT(x, constant(x, 0.0)), constant(x, std::nan("")), r);
  r = b.CreateSelect(b.CreateFCmpOEQ(x, constant(x, HUGE_VAL)), x, r);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, r);
}

llvm::Value* CodeGen::emit_vector_tanh(llvm::Value* x) {
  auto& b = b_;
  const double bound = 7.90531110763549805;  // tanh is 1 - 2^-24 from here in float32
  llvm::Value* c = b.CreateMaxNum(b.CreateMinNum(x, constant(x, bound)), constant(x, -bound));
  llvm::Value* x2 = b.CreateFMul(c, c);
  llvm::Value* p = horner(b, x2,
                          {4.89352455891786e-03, 6.37261928875436e-04, 1.48572235717979e-05, 5.12229709037114e-08,
                           -8.60467152213735e-11, 2.00018790482477e-13, -2.76076847742355e-16});
  llvm::Value* q =
      horner(b, x2, {4.89352518554385e-03, 2.26843463243900e-03, 1.18534705686654e-04, 1.19825839466702e-06});
  llvm::Value* y = b.CreateFDiv(b.CreateFMul(c, p), q);
  llvm::Value* tiny = b.CreateFCmpOLT(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x), constant(x, 0.0004));
  y = b.CreateSelect(tiny, x, y);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, y);
}

}  // namespace tessera::codegen_detail
