#include "compiler/codegen/interpreter.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>

#include "compiler/ir/op.h"
#include "compiler/lower/lower.h"
#include "compiler/te/compute_dag.h"

namespace tessera {
namespace {

Expr f32(double v) {
  return make_float(v, DType::f32());
}
Expr i64(int64_t v) {
  return make_int(v);
}

// for (i in [0, n)) body(i) of the given kind.
Stmt loop(const Var& i, int64_t n, Stmt body, LoopKind kind = LoopKind::kSerial) {
  return make_for(i, i64(0), i64(n), kind, std::move(body));
}

PrimFunc func(std::vector<Buffer> params, Stmt body) {
  return PrimFunc{"f", std::move(params), std::move(body)};
}

TEST(Interpreter, ScalarLoopLoadsAndStores) {
  Buffer a = make_buffer("A", DType::f32(), {4}), b = make_buffer("B", DType::f32(), {4});
  Var i("i");
  PrimFunc f = func({a, b}, loop(i, 4, make_store(b, make_load(a, i) * f32(2) + f32(1), i)));
  std::vector<float> x = {1, 2, 3, -4}, y(4, 0);
  ASSERT_TRUE(interpret(f, {x.data(), y.data()}).is_ok());
  EXPECT_EQ(y, (std::vector<float>{3, 5, 7, -7}));
}

TEST(Interpreter, IntegerDivAndModFloorTowardNegativeInfinity) {
  Buffer a = make_buffer("A", DType::i64(), {4}), b = make_buffer("B", DType::i64(), {4});
  Buffer q = make_buffer("Q", DType::i64(), {4}), r = make_buffer("R", DType::i64(), {4});
  Var i("i");
  Expr x = make_load(a, i), y = make_load(b, i);
  PrimFunc f = func({a, b, q, r}, loop(i, 4,
                                       make_seq({make_store(q, make_binary(ExprKind::kDiv, x, y), i),
                                                 make_store(r, make_binary(ExprKind::kMod, x, y), i)})));
  std::vector<int64_t> xs = {-7, 7, -7, 7}, ys = {2, -2, -2, 2}, qs(4), rs(4);
  ASSERT_TRUE(interpret(f, {xs.data(), ys.data(), qs.data(), rs.data()}).is_ok());
  EXPECT_EQ(qs, (std::vector<int64_t>{-4, -4, 3, 3}));
  EXPECT_EQ(rs, (std::vector<int64_t>{1, -1, -1, 1}));
}

TEST(Interpreter, Int32ArithmeticWrapsAndDivisionByZeroIsAnError) {
  Buffer a = make_buffer("A", DType::i32(), {2}), o = make_buffer("O", DType::i32(), {2});
  Var i("i");
  Expr x = make_load(a, i);
  PrimFunc wrap = func({a, o}, loop(i, 2, make_store(o, x + x, i)));
  std::vector<int32_t> xs = {0x7fffffff, -3}, out(2);
  ASSERT_TRUE(interpret(wrap, {xs.data(), out.data()}).is_ok());
  EXPECT_EQ(out, (std::vector<int32_t>{-2, -6}));

  PrimFunc by_zero =
      func({a, o}, loop(i, 2, make_store(o, make_binary(ExprKind::kDiv, x, make_int(0, DType::i32())), i)));
  Status st = interpret(by_zero, {xs.data(), out.data()});
  EXPECT_EQ(st.code(), ErrorCode::kRuntimeError);
  EXPECT_NE(st.message().find("division by zero"), std::string::npos) << st.to_string();
}

TEST(Interpreter, VectorRampLoadBroadcastAndStore) {
  Buffer a = make_buffer("A", DType::f32(), {8}), b = make_buffer("B", DType::f32(), {8});
  Expr idx = make_ramp(i64(0), i64(1), 8);
  Expr value = make_load(a, idx) + make_broadcast(f32(1), 8);
  PrimFunc f = func({a, b}, make_store(b, value, make_ramp(i64(7), i64(-1), 8)));  // reversed store
  std::vector<float> x = {0, 1, 2, 3, 4, 5, 6, 7}, y(8);
  ASSERT_TRUE(interpret(f, {x.data(), y.data()}).is_ok());
  EXPECT_EQ(y, (std::vector<float>{8, 7, 6, 5, 4, 3, 2, 1}));
}

TEST(Interpreter, VectorLaneWiseOpsAndComparisons) {
  Buffer a = make_buffer("A", DType::i64(), {4}), o = make_buffer("O", DType::i64(), {4});
  Expr ramp = make_ramp(i64(-2), i64(1), 4);  // -2 -1 0 1
  Expr three = make_broadcast(i64(3), 4);
  Expr v = make_binary(ExprKind::kMod, ramp, three) * make_broadcast(i64(10), 4) +
           make_binary(ExprKind::kDiv, ramp, make_broadcast(i64(2), 4));
  Expr keep = make_binary(ExprKind::kLT, ramp, make_broadcast(i64(1), 4));
  PrimFunc f =
      func({a, o}, make_store(o, make_select(keep, v, make_broadcast(i64(-100), 4)), make_ramp(i64(0), i64(1), 4)));
  std::vector<int64_t> unused(4), out(4);
  ASSERT_TRUE(interpret(f, {unused.data(), out.data()}).is_ok());
  // (-2 mod 3)*10 + (-2 div 2) = 10 - 1; (-1 mod 3)*10 + (-1 div 2) = 20 - 1; 0; masked.
  EXPECT_EQ(out, (std::vector<int64_t>{9, 19, 0, -100}));
}

TEST(Interpreter, SelectDoesNotLoadTheUntakenLanes) {
  // The padding pattern: select(0 <= i - 1 < 4, A[i - 1], 0) for i in [0, 6).
  Buffer a = make_buffer("A", DType::f32(), {4}), b = make_buffer("B", DType::f32(), {6});
  Expr i = make_ramp(i64(0), i64(1), 6);
  Expr shifted = i - make_broadcast(i64(1), 6);
  Expr inside = make_binary(ExprKind::kGE, shifted, make_broadcast(i64(0), 6)) &&
                make_binary(ExprKind::kLT, shifted, make_broadcast(i64(4), 6));
  PrimFunc f = func({a, b}, make_store(b, make_select(inside, make_load(a, shifted), make_broadcast(f32(0), 6)), i));
  std::vector<float> x = {1, 2, 3, 4}, y(6, -1);
  ASSERT_TRUE(interpret(f, {x.data(), y.data()}).is_ok());
  EXPECT_EQ(y, (std::vector<float>{0, 1, 2, 3, 4, 0}));
}

TEST(Interpreter, ScalarSelectEvaluatesOnlyTheTakenBranch) {
  Buffer a = make_buffer("A", DType::f32(), {2}), b = make_buffer("B", DType::f32(), {3});
  Var i("i");
  Expr value = make_select(make_binary(ExprKind::kLT, static_cast<const Expr&>(i), i64(2)), make_load(a, i), f32(9));
  PrimFunc f = func({a, b}, loop(i, 3, make_store(b, value, i)));
  std::vector<float> x = {5, 6}, y(3);
  ASSERT_TRUE(interpret(f, {x.data(), y.data()}).is_ok());
  EXPECT_EQ(y, (std::vector<float>{5, 6, 9}));
}

TEST(Interpreter, CastsTruncateWrapAndRound) {
  Buffer in = make_buffer("In", DType::f32(), {1});
  Buffer o8 = make_buffer("O8", DType::i8(), {1}), ou8 = make_buffer("OU8", DType::u8(), {1});
  Buffer o32 = make_buffer("O32", DType::i32(), {1}), ob = make_buffer("OB", DType::boolean(), {1});
  Buffer oh = make_buffer("OH", DType::f16(), {1}), obf = make_buffer("OBF", DType::bf16(), {1});
  Buffer o64 = make_buffer("O64", DType::i64(), {1});
  Expr x = make_load(in, i64(0));
  Expr big = make_cast(DType::i32(), x * f32(100));  // -270
  PrimFunc f = func(
      {in, o8, ou8, o32, ob, oh, obf, o64},
      make_seq(
          {make_store(o32, make_cast(DType::i32(), x), i64(0)), make_store(o8, make_cast(DType::i8(), big), i64(0)),
           make_store(ou8, make_cast(DType::u8(), big), i64(0)), make_store(ob, make_cast(DType::boolean(), x), i64(0)),
           make_store(oh, make_cast(DType::f16(), x), i64(0)), make_store(obf, make_cast(DType::bf16(), x), i64(0)),
           make_store(o64, make_cast(DType::i64(), make_cast(DType::f16(), x) * make_float(1000, DType::f16())),
                      i64(0))}));
  float v = -2.7f;
  int8_t r8 = 0;
  uint8_t ru8 = 0, rb = 7;
  int32_t r32 = 0;
  uint16_t rh = 0, rbf = 0;
  int64_t r64 = 0;
  ASSERT_TRUE(interpret(f, {&v, &r8, &ru8, &r32, &rb, &rh, &rbf, &r64}).is_ok());
  EXPECT_EQ(r32, -2);         // toward zero
  EXPECT_EQ(r8, -270 + 256);  // wraps to 8 bits
  EXPECT_EQ(ru8, 242);        // -270 mod 256
  EXPECT_EQ(rb, 1);
  EXPECT_EQ(rh, 0xC166);   // -2.7 in float16 is -2.69921875
  EXPECT_EQ(rbf, 0xC02D);  // -2.7 in bfloat16 is -2.703125
  EXPECT_EQ(r64, -2700);   // float16 arithmetic rounds: -2.69921875 * 1000 -> -2700
}

TEST(Interpreter, NarrowIntegerAndBoolLoadsWidenWithTheirSign) {
  Buffer a = make_buffer("A", DType::i8(), {1}), b = make_buffer("B", DType::u8(), {1});
  Buffer c = make_buffer("C", DType::boolean(), {1}), o = make_buffer("O", DType::i32(), {1});
  auto widened = [](const Buffer& buf) { return make_cast(DType::i32(), make_load(buf, i64(0))); };
  PrimFunc f =
      func({a, b, c, o}, make_store(o, widened(a) * make_int(1000, DType::i32()) + widened(b) + widened(c), i64(0)));
  int8_t x = -3;
  uint8_t y = 255, z = 1;
  int32_t out = 0;
  ASSERT_TRUE(interpret(f, {&x, &y, &z, &out}).is_ok());
  EXPECT_EQ(out, -3000 + 255 + 1);
}

TEST(Interpreter, LogicComparisonsAndMinMax) {
  Buffer in = make_buffer("In", DType::f32(), {2}), o = make_buffer("O", DType::i64(), {6});
  Expr x = make_load(in, i64(0)), y = make_load(in, i64(1));  // 1.5, -2
  Expr lt = make_binary(ExprKind::kLT, x, y), ge = make_binary(ExprKind::kGE, x, y);
  auto as_int = [](Expr b) { return make_cast(DType::i64(), b); };
  PrimFunc f = func({in, o}, make_seq({make_store(o, as_int(lt), i64(0)), make_store(o, as_int(ge), i64(1)),
                                       make_store(o, as_int(make_not(lt) && ge), i64(2)),
                                       make_store(o, as_int(lt || make_binary(ExprKind::kNE, x, x)), i64(3)),
                                       make_store(o, make_cast(DType::i64(), min(x, y)), i64(4)),
                                       make_store(o, make_cast(DType::i64(), max(x, y)), i64(5))}));
  std::vector<float> v = {1.5f, -2.0f};
  std::vector<int64_t> out(6, 7);
  ASSERT_TRUE(interpret(f, {v.data(), out.data()}).is_ok());
  EXPECT_EQ(out, (std::vector<int64_t>{0, 1, 1, 0, -2, 1}));
}

TEST(Interpreter, Float32ArithmeticRoundsEachResult) {
  Buffer o = make_buffer("O", DType::f32(), {1});
  Buffer one = make_buffer("One", DType::f32(), {1});
  PrimFunc f = func({one, o}, make_store(o, (make_load(one, i64(0)) + f32(1e-8)) - make_load(one, i64(0)), i64(0)));
  float x = 1.0f, y = -1;
  ASSERT_TRUE(interpret(f, {&x, &y}).is_ok());
  EXPECT_EQ(y, 0.0f);
}

TEST(Interpreter, MathCalls) {
  const std::vector<std::pair<CallOp, double>> cases = {{CallOp::kExp, std::exp(0.5)},
                                                        {CallOp::kLog, std::log(0.5)},
                                                        {CallOp::kSqrt, std::sqrt(0.5)},
                                                        {CallOp::kTanh, std::tanh(0.5)},
                                                        {CallOp::kErf, std::erf(0.5)},
                                                        {CallOp::kAbs, 0.5},
                                                        {CallOp::kFloor, 0.0},
                                                        {CallOp::kCeil, 1.0},
                                                        {CallOp::kRound, 0.0},
                                                        {CallOp::kSigmoid, 1 / (1 + std::exp(-0.5))},
                                                        {CallOp::kPow, std::pow(0.5, 0.5)}};
  Buffer in = make_buffer("In", DType::f32(), {1}), out = make_buffer("Out", DType::f32(), {1});
  for (const auto& [op, want] : cases) {
    Expr x = make_load(in, i64(0));
    std::vector<Expr> args = {x};
    if (op == CallOp::kPow) args.push_back(x);
    PrimFunc f = func({in, out}, make_store(out, make_call(op, args), i64(0)));
    float v = 0.5f, r = -1;
    ASSERT_TRUE(interpret(f, {&v, &r}).is_ok()) << call_op_name(op);
    EXPECT_FLOAT_EQ(r, static_cast<float>(want)) << call_op_name(op);
  }
}

TEST(Interpreter, RoundIsHalfToEvenAndAbsWorksOnIntegers) {
  Buffer in = make_buffer("In", DType::f32(), {4}), out = make_buffer("Out", DType::f32(), {4});
  Buffer iin = make_buffer("I", DType::i32(), {1}), iout = make_buffer("IO", DType::i32(), {1});
  Var i("i");
  PrimFunc f = func({in, out, iin, iout},
                    make_seq({loop(i, 4, make_store(out, make_call(CallOp::kRound, {make_load(in, i)}), i)),
                              make_store(iout, make_call(CallOp::kAbs, {make_load(iin, i64(0))}), i64(0))}));
  std::vector<float> x = {0.5f, 1.5f, 2.5f, -2.5f}, y(4);
  int32_t a = -5, b = 0;
  ASSERT_TRUE(interpret(f, {x.data(), y.data(), &a, &b}).is_ok());
  EXPECT_EQ(y, (std::vector<float>{0, 2, 2, -2}));
  EXPECT_EQ(b, 5);
}

TEST(Interpreter, IfThenElseTakesOneBranch) {
  Buffer o = make_buffer("O", DType::i64(), {5});
  Var i("i");
  Expr even = make_binary(ExprKind::kEQ, make_binary(ExprKind::kMod, static_cast<const Expr&>(i), i64(2)), i64(0));
  PrimFunc f =
      func({o}, loop(i, 5, make_if(even, make_store(o, static_cast<const Expr&>(i), i), make_store(o, i64(0) - i, i))));
  std::vector<int64_t> out(5);
  ASSERT_TRUE(interpret(f, {out.data()}).is_ok());
  EXPECT_EQ(out, (std::vector<int64_t>{0, -1, 2, -3, 4}));
}

TEST(Interpreter, EveryLoopKindRunsAllIterationsInOrder) {
  for (LoopKind kind : {LoopKind::kSerial, LoopKind::kParallel, LoopKind::kVectorized, LoopKind::kUnrolled}) {
    Buffer o = make_buffer("O", DType::i64(), {6});
    Var i("i");
    // O[0] accumulates i in order: a running "last writer" check.
    Stmt body = make_seq({make_store(o, make_load(o, i64(0)) * i64(10) + i, i64(0)),
                          make_store(o, static_cast<const Expr&>(i), i + i64(1))});
    PrimFunc f = func({o}, make_for(i, i64(0), i64(5), kind, body));
    std::vector<int64_t> out(6, 0);
    ASSERT_TRUE(interpret(f, {out.data()}).is_ok()) << loop_kind_name(kind);
    EXPECT_EQ(out, (std::vector<int64_t>{1234, 0, 1, 2, 3, 4})) << loop_kind_name(kind);
  }
}

TEST(Interpreter, ParallelLoopsCanRunInReverseToExposeDependences) {
  Buffer o = make_buffer("O", DType::i64(), {1});
  Var i("i");
  // O[0] = O[0] * 10 + i: the result depends on the iteration order.
  PrimFunc f = func(
      {o}, make_for(i, i64(1), i64(3), LoopKind::kParallel, make_store(o, make_load(o, i64(0)) * i64(10) + i, i64(0))));
  int64_t forward = 0, backward = 0;
  ASSERT_TRUE(interpret(f, {&forward}).is_ok());
  ASSERT_TRUE(interpret(f, {&backward}, InterpretOptions{.reverse_parallel_loops = true}).is_ok());
  EXPECT_EQ(forward, 123);
  EXPECT_EQ(backward, 321);
}

TEST(Interpreter, LoopWithNonZeroMin) {
  Buffer o = make_buffer("O", DType::i64(), {6});
  Var i("i");
  PrimFunc f = func({o}, make_for(i, i64(2), i64(3), LoopKind::kSerial, make_store(o, i * i64(7), i)));
  std::vector<int64_t> out(6, -1);
  ASSERT_TRUE(interpret(f, {out.data()}).is_ok());
  EXPECT_EQ(out, (std::vector<int64_t>{-1, -1, 14, 21, 28, -1}));
}

TEST(Interpreter, AllocateGivesFreshZeroedStorage) {
  for (MemoryScope scope : {MemoryScope::kLocal, MemoryScope::kWorkspace}) {
    Buffer o = make_buffer("O", DType::f32(), {3});
    Buffer t = make_buffer("T", DType::f32(), {1}, scope);
    Var i("i");
    // Each iteration: T[0] += 1 starting from a fresh zero, so O[i] = 1.
    Stmt body = make_allocate(
        t, make_seq({make_store(t, make_load(t, i64(0)) + f32(1), i64(0)), make_store(o, make_load(t, i64(0)), i)}));
    PrimFunc f = func({o}, loop(i, 3, body));
    std::vector<float> out(3, -1);
    ASSERT_TRUE(interpret(f, {out.data()}).is_ok());
    EXPECT_EQ(out, (std::vector<float>{1, 1, 1}));
  }
}

TEST(Interpreter, AttrRunsItsBody) {
  Buffer o = make_buffer("O", DType::f32(), {1});
  PrimFunc f = func({o}, make_attr(AttrKind::kAutoUnrollMaxStep, 16, make_store(o, f32(3), i64(0))));
  float y = 0;
  ASSERT_TRUE(interpret(f, {&y}).is_ok());
  EXPECT_EQ(y, 3.0f);
}

TEST(Interpreter, OutOfBoundsLoadIsARuntimeErrorNamingBufferAndIndex) {
  Buffer a = make_buffer("A", DType::f32(), {4}), b = make_buffer("B", DType::f32(), {5});
  Var i("i");
  PrimFunc f = func({a, b}, loop(i, 5, make_store(b, make_load(a, i), i)));
  std::vector<float> x(4, 1), y(5);
  Status st = interpret(f, {x.data(), y.data()});
  EXPECT_EQ(st.code(), ErrorCode::kRuntimeError);
  EXPECT_NE(st.message().find("buffer A"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("index 4"), std::string::npos) << st.message();
}

TEST(Interpreter, OutOfBoundsVectorStoreIsARuntimeError) {
  Buffer b = make_buffer("B", DType::f32(), {4});
  PrimFunc f = func({b}, make_store(b, make_broadcast(f32(1), 4), make_ramp(i64(-1), i64(1), 4)));
  std::vector<float> y(4);
  Status st = interpret(f, {y.data()});
  EXPECT_EQ(st.code(), ErrorCode::kRuntimeError);
  EXPECT_NE(st.message().find("store of buffer B at index -1"), std::string::npos) << st.message();
}

TEST(Interpreter, TensorReadAndReduceAreInternalErrors) {
  Tensor t = placeholder({4}, DType::f32(), "T");
  Buffer o = make_buffer("O", DType::f32(), {1});
  float y = 0;
  PrimFunc read_left = func({o}, make_store(o, read(t, {i64(0)}), i64(0)));
  EXPECT_EQ(interpret(read_left, {&y}).code(), ErrorCode::kInternal);
  IterVar k = reduce_axis(4, "k");
  PrimFunc reduce_left = func({o}, make_store(o, sum(f32(1), {k}), i64(0)));
  EXPECT_EQ(interpret(reduce_left, {&y}).code(), ErrorCode::kInternal);
}

TEST(Interpreter, UnboundVariableIsAnInternalError) {
  Buffer o = make_buffer("O", DType::i64(), {1});
  Var free_var("n");
  PrimFunc f = func({o}, make_store(o, static_cast<const Expr&>(free_var), i64(0)));
  int64_t y = 0;
  Status st = interpret(f, {&y});
  EXPECT_EQ(st.code(), ErrorCode::kInternal);
  EXPECT_NE(st.message().find("n"), std::string::npos);
}

TEST(Interpreter, WrongArgumentsAreInvalidArguments) {
  Buffer o = make_buffer("O", DType::f32(), {1});
  PrimFunc f = func({o}, make_store(o, f32(1), i64(0)));
  EXPECT_EQ(interpret(f, {}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(interpret(f, {nullptr}).code(), ErrorCode::kInvalidArgument);
}

TEST(Interpreter, LoweredMatmul64RunsWellUnderASecond) {
  const int64_t n = 64;
  Tensor a = placeholder({n, n}, DType::f32(), "A"), b = placeholder({n, n}, DType::f32(), "B");
  IterVar k = reduce_axis(n, "k");
  Tensor c = compute(
      {n, n},
      [&](const Vars& i) {
        return sum(read(a, {i[0], k->var}) * read(b, {k->var, i[1]}), {k});
      },
      "C");
  State s(ComputeDAG::make({a, b, c}).value());
  auto f = lower(s, "mm");
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  std::vector<float> x(n * n), y(n * n), z(n * n);
  for (int64_t i = 0; i < n * n; ++i) {
    x[i] = static_cast<float>(i % 7) - 3;
    y[i] = static_cast<float>(i % 5) - 2;
  }
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(interpret(*f, {x.data(), y.data(), z.data()}).is_ok());
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 0.5);
  for (int64_t i : {int64_t{0}, int64_t{65}, n * n - 1}) {
    float want = 0;
    for (int64_t kk = 0; kk < n; ++kk) want += x[(i / n) * n + kk] * y[kk * n + i % n];
    EXPECT_EQ(z[i], want);
  }
}

}  // namespace
}  // namespace tessera
