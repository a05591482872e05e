// Parsing the text form: hand-written IR, scopes, round trips of corner
// cases, and errors that say line:column.
#include "compiler/ir/parser.h"

#include <gtest/gtest.h>

#include <cmath>

#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/structural.h"
#include "tests/compiler/ir_matchers.h"

namespace tessera {
namespace {

class Parser : public ::testing::Test {
 protected:
  Parser() {
    ctx.add(a);
    ctx.add(b);
    ctx.add(n);
  }
  Buffer a = make_buffer("A", DType::f32(), {64});
  Buffer b = make_buffer("B", DType::f32(), {64});
  Var n{"n"};
  ParseContext ctx;

  // The parse error of `text`: its code and message.
  Status error_of(const std::string& text) {
    Result<Stmt> s = parse_stmt(text, ctx);
    return s.is_ok() ? Status(ErrorCode::kInternal, "parsed: " + to_string(*s)) : s.status();
  }
};

TEST_F(Parser, HandWrittenTextUsesCPrecedence) {
  Var i("i");
  Stmt want = make_for(i, 0, n, LoopKind::kSerial,
                       make_store(b,
                                  make_binary(ExprKind::kAdd, make_load(a, i),
                                              make_binary(ExprKind::kMul, make_float(2.0), make_load(a, i + 1))),
                                  i));
  Result<Stmt> got = parse_stmt("for i in [0, n) { B[i] = A[i] + 2.0 * A[i + 1] }", ctx);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_IR_EQ(*got, want);
}

TEST_F(Parser, FreeNamesComeFromTheContextAndLoopsBindTheirOwn) {
  Result<Stmt> s = parse_stmt("for n in [0, 4) { A[n] = 1.0f }; A[n] = 2.0f", ctx);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  const auto* seq = s->as<SeqNode>();
  ASSERT_NE(seq, nullptr);
  const auto* loop = seq->stmts[0].as<ForNode>();
  EXPECT_FALSE(loop->var.same_as(n));  // the loop's own n
  EXPECT_TRUE(loop->body.as<StoreNode>()->index.same_as(loop->var));
  EXPECT_TRUE(seq->stmts[1].as<StoreNode>()->index.same_as(n));  // the context's n after the loop
}

TEST_F(Parser, AllocCoversTheRestOfItsBlockUnlessBraced) {
  Result<Stmt> rest = parse_stmt("alloc t: float32[4] local\nt[0] = 1.0f\nA[0] = t[0]", ctx);
  ASSERT_TRUE(rest.is_ok()) << rest.status().to_string();
  ASSERT_NE(rest->as<AllocateNode>(), nullptr);
  EXPECT_EQ(rest->as<AllocateNode>()->body.as<SeqNode>()->stmts.size(), 2u);
  Result<Stmt> braced = parse_stmt("alloc t: float32[4] local { t[0] = 1.0f }\nA[0] = 2.0f", ctx);
  ASSERT_TRUE(braced.is_ok()) << braced.status().to_string();
  ASSERT_NE(braced->as<SeqNode>(), nullptr);
  EXPECT_NE(braced->as<SeqNode>()->stmts[0].as<AllocateNode>(), nullptr);
  EXPECT_EQ(error_of("alloc t: float32[4] local\nt[0] = 1.0f }\nt[0] = 2.0f").message(),
            "2:13: expected the end but found '}'");
}

TEST_F(Parser, FunctionDeclaresItsParameters) {
  Result<PrimFunc> f =
      parse_func("func add(X: float32[4], Y: float32[4]) {\n  for i in [0, 4) { Y[i] = X[i] + 1.0f }\n}");
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f->name, "add");
  ASSERT_EQ(f->params.size(), 2u);
  EXPECT_EQ(f->params[1]->shape, std::vector<int64_t>{4});
  EXPECT_EQ(to_string(*f),
            "func add(X: float32[4], Y: float32[4]) {\n  for i in [0, 4) {\n    Y[i] = (X[i] + 1.0f)\n  }\n}\n");
}

TEST_F(Parser, ExpressionsOfEveryKindRoundTrip) {
  Var i("i"), f("f", DType::f32()), h("h", DType::f64());
  ctx.add(i);
  ctx.add(f);
  ctx.add(h);
  const Expr exprs[] = {
      make_select(make_binary(ExprKind::kLT, i, n), make_int(-3, DType::i32()), make_int(7, DType::i32())),
      make_cast(DType::i32(), Expr(5)),
      make_cast(DType::i32(), Expr(-5)),
      make_cast(DType::f32(), i),
      make_cast(DType::boolean(), i),
      make_not(make_binary(ExprKind::kOr, make_bool(true), make_binary(ExprKind::kGE, i, Expr(-2)))),
      make_call(CallOp::kPow, {f, make_float(0.5)}),
      make_call(CallOp::kAbs, {i}),
      make_call(CallOp::kSigmoid, {make_call(CallOp::kErf, {f})}),
      make_binary(ExprKind::kMax, make_float(-INFINITY), f),
      make_binary(ExprKind::kAdd, h, make_float(1.0 / 3.0, DType::f64())),
      make_binary(ExprKind::kMul, make_float(1e-5), make_float(3.4e38)),
      make_float(NAN),
      make_load(a, make_ramp(i * 4, Expr(1), 4)),
      make_binary(ExprKind::kMod, make_broadcast(i, 8), make_ramp(Expr(1), Expr(2), 8)),
      make_binary(ExprKind::kDiv, make_int(-9, DType::i8()), make_int(2, DType::i8())),
      make_float(2.5, DType::f16()),
      make_float(0.1),
  };
  for (const Expr& e : exprs) {
    const std::string text = to_string(e);
    Result<Expr> back = parse_expr(text, ctx);
    ASSERT_TRUE(back.is_ok()) << text << ": " << back.status().to_string();
    EXPECT_TRUE(structural_equal(e, *back)) << text << " came back as " << to_string(*back);
    EXPECT_EQ(structural_hash(e), structural_hash(*back)) << text;
  }
}

TEST_F(Parser, StatementsOfEveryKindRoundTrip) {
  Var i("i"), j("j"), k("k", DType::i32());
  Buffer tmp = make_buffer("tmp", DType::f32(), {4}, MemoryScope::kWorkspace);
  Stmt s = make_attr(
      AttrKind::kAutoUnrollMaxStep, 64,
      make_seq(
          {make_for(i, 1, n, LoopKind::kParallel,
                    make_if(make_binary(ExprKind::kLT, i, Expr(3)), make_store(a, 0.0f, i), make_store(a, 1.0f, i))),
           make_allocate(tmp, make_seq({make_store(tmp, 2.0f, 0), make_store(b, make_load(tmp, 0), 0)})),
           make_for(j, 0, 4, LoopKind::kVectorized, make_if(make_bool(true), make_store(b, 3.0f, j))),
           make_for(k, 0, 2, LoopKind::kUnrolled, make_seq({})), make_store(b, 4.0f, 1)}));
  EXPECT_IR_EQ(s, to_string(s));
  const std::string text = to_string(s);
  Result<Stmt> back = parse_stmt(text, ParseContext::of(s));
  ASSERT_TRUE(back.is_ok()) << back.status().to_string() << "\n" << text;
  EXPECT_EQ(to_string(*back), text);
}

TEST_F(Parser, ShadowedAndDuplicateNamesRoundTrip) {
  Var i1("i"), i2("i"), m1("m"), m2("m");
  ctx.add(m1);
  Stmt s = make_for(i1, 0, 4, LoopKind::kSerial,
                    make_for(i2, 0, 4, LoopKind::kSerial, make_store(a, 0.0f, i1 * 16 + i2 * 4 + m1 + m2)));
  EXPECT_IR_EQ(s, to_string(s));
  EXPECT_NE(to_string(s).find("i_1"), std::string::npos);
  EXPECT_NE(to_string(s).find("m_1"), std::string::npos);
}

TEST_F(Parser, ErrorsSayLineAndColumn) {
  Status e = error_of("A[0] = 1.0f\nA[q] = 1.0f");
  EXPECT_EQ(e.code(), ErrorCode::kParseError);
  EXPECT_EQ(e.message(), "2:3: unknown variable 'q'");
  EXPECT_EQ(error_of("C[0] = 1.0f").message(), "1:1: unknown buffer 'C'");
  EXPECT_EQ(error_of("A[0] = 1").message(), "1:6: store of int64 to A, which takes float32");
  EXPECT_EQ(error_of("A[0] = A[1] + 1").message(), "1:13: operands of '+' have types float32 and int64");
  EXPECT_EQ(error_of("for i in [0, 4) {\n  A[i] = 0.0f\n").message(), "3:1: expected '}' but found the end");
  EXPECT_EQ(error_of("for i in [2, 4) { A[i] = 0.0f }").message(),
            "1:14: a loop from a non-zero minimum is written [min, +extent)");
  EXPECT_EQ(error_of("A[0] = -A[1]").message(), "1:8: '-' applies to constants only; write (0 - x)");
  EXPECT_EQ(error_of("A[0] = 1.0q").message(), "1:8: 'q' is not a float type suffix (f, float16, bfloat16, float64)");
  EXPECT_EQ(error_of("A[0] = foo(1.0f)").message(), "1:8: unknown function 'foo'");
  EXPECT_EQ(error_of("A[0] = sum(A[0], axes=[k:4])").message(),
            "1:8: reductions do not parse: the text form is for lowered loop IR");
  EXPECT_EQ(error_of("A[0] = max(A[0], axes=[k:4])").message(),
            "1:18: reductions do not parse: the text form is for lowered loop IR");
  EXPECT_EQ(error_of("A[0] = 1.0f $").message(), "1:13: unexpected character '$'");
  EXPECT_EQ(error_of("if 1 { A[0] = 0.0f }").message(), "1:1: if condition of type int64, not bool");
  EXPECT_EQ(error_of("alloc t: float32[4] global\nt[0] = 0.0f").message(),
            "1:21: an alloc is local or workspace, not global");
  EXPECT_EQ(error_of("A[0] = select(true, 1.0f, 2)").message(), "1:8: select branches of types float32 and int64");
}

TEST_F(Parser, TypeErrorsAreErrorsNotAborts) {
  EXPECT_EQ(error_of("A[0] = float32(ramp(0, 1, 4))").code(), ErrorCode::kParseError);
  EXPECT_EQ(error_of("A[0] = !1.0f").code(), ErrorCode::kParseError);
  EXPECT_EQ(error_of("A[0] = exp(1)").code(), ErrorCode::kParseError);
  EXPECT_EQ(error_of("A[0] = x1(1.0f)").code(), ErrorCode::kParseError);
  EXPECT_EQ(error_of("A[1.0f] = 1.0f").code(), ErrorCode::kParseError);
  EXPECT_EQ(error_of("A[0] = 99999999999999999999").code(), ErrorCode::kParseError);
  EXPECT_EQ(parse_expr("1 2").status().message(), "1:3: expected the end but found '2'");
}

TEST_F(Parser, PredicatedAccessesRoundTrip) {
  Expr lanes = make_ramp(n, 1, 8);
  Expr live = make_binary(ExprKind::kLT, lanes, make_broadcast(make_int(61), 8));
  Stmt want = make_store(b, make_load(a, lanes, live), lanes, live);
  const std::string text = to_string(want);
  EXPECT_EQ(text, "B[ramp(n, 1, 8) if (ramp(n, 1, 8) < x8(61))] = A[ramp(n, 1, 8) if (ramp(n, 1, 8) < x8(61))]\n");
  Result<Stmt> got = parse_stmt(text, ctx);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(structural_equal(*got, want)) << to_string(*got);
  // A scalar access takes a scalar predicate.
  Stmt scalar = make_store(b, make_load(a, n, n < 3), n, n < 3);
  EXPECT_TRUE(structural_equal(parse_stmt(to_string(scalar), ctx).value(), scalar));
}

TEST_F(Parser, PredicateMustMatchTheIndexLanes) {
  Status st = error_of("B[ramp(n, 1, 8) if (n < 3)] = x8(1.0f)");
  EXPECT_EQ(st.code(), ErrorCode::kParseError) << st.to_string();
  EXPECT_NE(st.message().find("predicate of B of type bool, not boolx8"), std::string::npos) << st.to_string();
  st = error_of("B[n if n] = 1.0f");
  EXPECT_NE(st.message().find("predicate of B of type int64, not bool"), std::string::npos) << st.to_string();
}

TEST_F(Parser, TensorReadsResolveThroughTheContext) {
  Tensor t = make_ref<const TensorNode>("T", std::vector<int64_t>{4, 4}, DType::f32(), Ref<const Object>());
  ctx.add(t);
  Result<Expr> e = parse_expr("T[1, n]", ctx);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_TRUE(structural_equal(*e, make_tensor_read(t, {Expr(1), n})));
}

TEST(IrMatchers, FailureShowsBothSidesAndADiff) {
  Buffer a = make_buffer("A", DType::f32(), {4});
  Var i("i");
  Stmt s = make_for(i, 0, 4, LoopKind::kSerial, make_store(a, 1.0f, i));
  EXPECT_IR_EQ(s, "for j in [0, 4) {\n  A[j] = 1.0f\n}");
  ::testing::AssertionResult r = testing::ir_equal("s", "text", s, "for j in [0, 4) { A[j] = 2.0f }");
  ASSERT_FALSE(r);
  const std::string message = r.message();
  EXPECT_NE(message.find("-   A[j] = 2.0f"), std::string::npos) << message;
  EXPECT_NE(message.find("+   A[i] = 1.0f"), std::string::npos) << message;
  EXPECT_NE(message.find("  }"), std::string::npos) << message;
  ::testing::AssertionResult bad = testing::ir_equal("s", "text", s, "for j in [0, 4) { A[j] = }");
  ASSERT_FALSE(bad);
  EXPECT_NE(std::string(bad.message()).find("does not parse: parse-error: 1:26:"), std::string::npos) << bad.message();
}

TEST(IrMatchers, FunctionsCompareByParameterPosition) {
  Buffer x = make_buffer("x", DType::f32(), {4}), y = make_buffer("y", DType::f32(), {4});
  Var i("i");
  PrimFunc f{"scale", {x, y}, make_for(i, 0, 4, LoopKind::kVectorized, make_store(y, make_load(x, i) * 2.0f, i))};
  EXPECT_IR_EQ(f, "func g(A: float32[4], B: float32[4]) { vectorized k in [0, 4) { B[k] = A[k] * 2.0f } }");
  EXPECT_FALSE(testing::ir_equal(
      "f", "text", f, "func g(A: float32[4], B: float32[4]) { vectorized k in [0, 4) { A[k] = B[k] * 2.0f } }"));
  EXPECT_FALSE(testing::ir_equal(
      "f", "text", f, "func g(A: float32[8], B: float32[4]) { vectorized k in [0, 4) { B[k] = A[k] * 2.0f } }"));
}

}  // namespace
}  // namespace tessera
