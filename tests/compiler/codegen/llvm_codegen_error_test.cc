// LLVM codegen refuses loop IR it cannot emit with an error naming the node,
// instead of emitting poison in its place.
#include <gtest/gtest.h>

#include "compiler/codegen/llvm_codegen.h"
#include "compiler/ir/op.h"
#include "compiler/te/tensor.h"

namespace tessera {
namespace {

Target x86() {
  return Target::parse("llvm -mtriple=x86_64-linux-gnu").value();
}

// out[i] = value for i in [0, 4), with out a float32[4] parameter.
PrimFunc store_loop(const Buffer& out, const Var& i, const Expr& value) {
  return PrimFunc{"kernel", {out}, make_for(i, 0, 4, LoopKind::kSerial, make_store(out, value, i))};
}

TEST(LlvmCodegen, LeftoverTensorReadIsACodegenErrorNamingIt) {
  Buffer out = make_buffer("out", DType::f32(), {4});
  Tensor a = placeholder({4}, DType::f32(), "A");
  Var i("i");
  auto ir = emit_llvm_ir({store_loop(out, i, read(a, {i}))}, x86());
  ASSERT_FALSE(ir.is_ok());
  EXPECT_EQ(ir.status().code(), ErrorCode::kCodegenError);
  EXPECT_NE(ir.status().message().find("TensorRead of A"), std::string::npos) << ir.status().message();
  EXPECT_NE(ir.status().message().find("kernel"), std::string::npos) << ir.status().message();
}

TEST(LlvmCodegen, LeftoverReduceIsACodegenErrorNamingIt) {
  Buffer out = make_buffer("out", DType::f32(), {4});
  Tensor a = placeholder({4, 8}, DType::f32(), "A");
  IterVar k = reduce_axis(8, "k");
  Var i("i");
  auto obj = emit_object({store_loop(out, i, sum(read(a, {i, k->var}), {k}))}, x86());
  ASSERT_FALSE(obj.is_ok());
  EXPECT_EQ(obj.status().code(), ErrorCode::kCodegenError);
  EXPECT_NE(obj.status().message().find("Reduce (sum)"), std::string::npos) << obj.status().message();
}

TEST(LlvmCodegen, UnboundVariableIsACodegenError) {
  Buffer out = make_buffer("out", DType::f32(), {4});
  Var i("i"), stray("stray");
  auto ir = emit_llvm_ir({store_loop(out, i, cast(DType::f32(), stray))}, x86());
  ASSERT_FALSE(ir.is_ok());
  EXPECT_EQ(ir.status().code(), ErrorCode::kCodegenError);
  EXPECT_NE(ir.status().message().find("variable stray"), std::string::npos) << ir.status().message();
}

TEST(LlvmCodegen, UnknownBufferIsACodegenError) {
  Buffer out = make_buffer("out", DType::f32(), {4});
  Buffer elsewhere = make_buffer("elsewhere", DType::f32(), {4});
  Var i("i");
  auto ir = emit_llvm_ir({store_loop(out, i, make_load(elsewhere, i))}, x86());
  ASSERT_FALSE(ir.is_ok());
  EXPECT_EQ(ir.status().code(), ErrorCode::kCodegenError);
  EXPECT_NE(ir.status().message().find("buffer elsewhere"), std::string::npos) << ir.status().message();
}

TEST(LlvmCodegen, LoweredLoopStillEmits) {
  Buffer out = make_buffer("out", DType::f32(), {4});
  Buffer in = make_buffer("in", DType::f32(), {4});
  Var i("i");
  PrimFunc f = store_loop(out, i, make_load(in, i) * 2.0f);
  f.params.push_back(in);
  auto ir = emit_llvm_ir({f}, x86());
  ASSERT_TRUE(ir.is_ok()) << ir.status().to_string();
  EXPECT_NE(ir->find("define"), std::string::npos);
}

}  // namespace
}  // namespace tessera
