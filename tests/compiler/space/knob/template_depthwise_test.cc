// Depthwise and grouped convolutions as models fuse them: every layout,
// stride and epilogue fits its knob template, whose fallback and random
// configurations compute what the reference interpreter computes.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>

#include "compiler/ir/op.h"
#include "compiler/space/knob/templates.h"
#include "tests/compiler/space/knob/template_check.h"

namespace tessera {
namespace {

// The convolution a model holds: the library's depthwise (NCHW, multiplier
// 1), a grouped conv2d with one input channel per group (a depthwise of
// multiplier 2), or groups of several channels; NCHW or NHWC.
enum class ConvKind { kDepthwise, kDepthwiseMultiplier2, kGrouped };

struct Case {
  ConvKind kind;
  bool nhwc;
  int64_t stride;
  std::string epilogue;  // none, bias, relu, relu6, hardsigmoid_x, hardswish, residual, squeeze_excite
};

std::string describe(const Case& c) {
  const char* kinds[] = {"depthwise", "depthwise x2", "grouped"};
  return std::string(kinds[static_cast<int>(c.kind)]) + (c.nhwc ? " nhwc" : " nchw") + " stride " +
         std::to_string(c.stride) + " + " + c.epilogue;
}

// The template a model's compile picks for `c` (compile_model.cc, template_op_for).
const char* template_op(const Case& c) {
  if (c.kind == ConvKind::kGrouped) return c.nhwc ? "conv2d_nhwc" : "conv2d";
  return c.nhwc ? "depthwise_conv2d_nhwc" : "depthwise_conv2d";
}

// Builds the conv of `c` over 12 channels of 11 x 13 (pad 1, 3x3 window) and
// its epilogue, as build_node.cc and the ops library build them. A
// squeeze-excite conv runs on a 1 x 1 map, as in a model.
ops::OpInstance make_case(const Case& c) {
  const bool se = c.epilogue == "squeeze_excite";
  const int64_t C = 12, H = se ? 1 : 11, W = se ? 1 : 13;
  const int64_t groups = c.kind == ConvKind::kGrouped ? 3 : C;
  const int64_t K = c.kind == ConvKind::kDepthwiseMultiplier2 ? 2 * C : C;
  const DType f = DType::f32();
  Tensor x = c.nhwc ? placeholder({1, H, W, C}, f, "X") : placeholder({1, C, H, W}, f, "X");
  Tensor w = c.nhwc ? placeholder({3, 3, C / groups, K}, f, "W") : placeholder({K, C / groups, 3, 3}, f, "W");
  std::vector<Tensor> args = {x, w};
  Tensor y;
  if (c.nhwc && c.kind != ConvKind::kGrouped) {
    y = ops::depthwise_conv2d_nhwc(x, w, c.stride, 1).value();
  } else if (c.nhwc) {
    y = ops::conv2d_nhwc(x, w, c.stride, 1, 1, groups).value();
  } else if (c.kind == ConvKind::kDepthwise) {
    y = ops::depthwise_conv2d_nchw(x, w, c.stride, 1).value();
  } else {
    y = ops::conv2d_nchw(x, w, c.stride, 1, 1, groups).value();
  }
  const std::vector<int64_t> out = y->shape;
  std::vector<int64_t> per_channel(4, 1);
  per_channel[c.nhwc ? 3 : 1] = K;
  auto input = [&](std::vector<int64_t> shape, const char* name) {
    args.push_back(placeholder(std::move(shape), f, name));
    return args.back();
  };
  if (c.epilogue != "none") y = ops::add(y, input(per_channel, "bias"), "add_bias").value();
  if (c.epilogue == "relu") y = ops::relu(y).value();
  if (c.epilogue == "relu6") y = ops::clip(y, 0.0, 6.0).value();
  if (c.epilogue == "hardswish") y = ops::hardswish(y).value();
  if (c.epilogue == "residual") y = ops::add(y, input(out, "residual"), "add_residual").value();
  if (c.epilogue == "hardsigmoid_x") {
    Tensor hs = compute(
        y->shape,
        [&](const Vars& i) -> Expr {
          std::vector<Expr> idx;
          for (const Var& v : i) idx.push_back(static_cast<const Expr&>(v));
          Expr v = read(y, idx) * make_const(f, 0.2) + make_const(f, 0.5);
          return max(make_const(f, 0.0), min(make_const(f, 1.0), v));
        },
        "hardsigmoid", OpPattern::kElementwise);
    y = ops::mul(y, hs).value();
  }
  if (c.epilogue == "squeeze_excite") {
    // x * hardsigmoid(conv(...)): the conv's 1 x 1 result scales the
    // channels of a larger feature map (5 x 7).
    std::vector<int64_t> map = out;
    map[c.nhwc ? 1 : 2] = 5, map[c.nhwc ? 2 : 3] = 7;
    Tensor hs = ops::clip(ops::add(y, input(per_channel, "three"), "add_three").value(), 0.0, 6.0).value();
    y = ops::mul(input(map, "feature_map"), hs).value();
  }
  args.push_back(y);
  ops::OpInstance inst;
  inst.op = template_op(c);
  inst.dag = std::make_shared<const ComputeDAG>(ComputeDAG::make(args).value());
  return inst;
}

// Builds the fallback and `random` configurations of `c`'s template and
// compares each with the interpreter.
void check_case(const Case& c, int random, std::mt19937_64& rng, runtime::ThreadPool* pool) {
  const ops::OpInstance inst = make_case(c);
  const KnobTemplate* tmpl = find_template(inst.op);
  ASSERT_NE(tmpl, nullptr);
  auto space = tmpl->define(*inst.dag, host_target());
  ASSERT_TRUE(space.is_ok()) << describe(c) << ": " << space.status().to_string();
  const runtime::NDArray expected = reference(inst);
  for (int i = 0; i <= random; ++i) {
    KnobConfig config = i == 0 ? tmpl->fallback(*space, *inst.dag, host_target()).value()
                               : space->config(rng() % space->size()).value();
    auto state = apply_template(*tmpl, inst.dag, config, host_target());
    ASSERT_TRUE(state.is_ok()) << describe(c) << ": " << state.status().to_string();
    expect_matches(inst, *state, expected, pool, describe(c) + " " + config.to_string());
    if (::testing::Test::HasFatalFailure()) return;
  }
}

const char* const kEpilogues[] = {"none",          "bias",      "relu",     "relu6",
                                  "hardsigmoid_x", "hardswish", "residual", "squeeze_excite"};

TEST(DepthwiseTemplates, EveryLayoutStrideAndEpilogueMatchesTheInterpreter) {
  runtime::ThreadPool pool(2);
  std::mt19937_64 rng(16);
  for (ConvKind kind : {ConvKind::kDepthwise, ConvKind::kDepthwiseMultiplier2, ConvKind::kGrouped})
    for (bool nhwc : {false, true})
      for (int64_t stride : {1, 2})
        for (const char* epilogue : kEpilogues) {
          if (kind == ConvKind::kDepthwise && nhwc) continue;  // NHWC depthwise is the grouped conv2d_nhwc
          check_case({kind, nhwc, stride, epilogue}, 2, rng, &pool);
          if (HasFatalFailure()) return;
        }
}

TEST(DepthwiseTemplates, ModelFormsFitTheDepthwiseTemplateNotTheGeneric) {
  // The multiplier-2 grouped form and a squeeze-excite tail used to be
  // refused ("not a 2-D window", "must be elementwise over its shape").
  for (const Case& c :
       {Case{ConvKind::kDepthwiseMultiplier2, false, 2, "relu6"},
        Case{ConvKind::kDepthwise, false, 1, "squeeze_excite"}, Case{ConvKind::kDepthwise, false, 2, "hardswish"}}) {
    const ops::OpInstance inst = make_case(c);
    const KnobTemplate* tmpl = find_template("depthwise_conv2d");
    auto state = apply_fallback(*tmpl, inst.dag, host_target());
    ASSERT_TRUE(state.is_ok()) << describe(c) << ": " << state.status().to_string();
    EXPECT_TRUE(lower(*state).is_ok()) << describe(c);
  }
}

TEST(DepthwiseTemplates, RandomConfigsOfEveryCaseLowerForAvx2AndNeon) {
  const Target targets[] = {Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=haswell").value(),
                            Target::parse("llvm -mtriple=aarch64-linux-gnu -mattr=+neon").value()};
  std::mt19937_64 rng(61);
  for (const Target& target : targets)
    for (ConvKind kind : {ConvKind::kDepthwise, ConvKind::kDepthwiseMultiplier2, ConvKind::kGrouped})
      for (bool nhwc : {false, true})
        for (const char* epilogue : {"relu6", "hardswish", "residual", "squeeze_excite"}) {
          if (kind == ConvKind::kDepthwise && nhwc) continue;
          const Case c{kind, nhwc, 2, epilogue};
          const ops::OpInstance inst = make_case(c);
          const KnobTemplate* tmpl = find_template(inst.op);
          auto space = tmpl->define(*inst.dag, target);
          ASSERT_TRUE(space.is_ok()) << describe(c) << ": " << space.status().to_string();
          for (int i = 0; i < 10; ++i) {
            KnobConfig config = i == 0 ? tmpl->fallback(*space, *inst.dag, target).value()
                                       : space->config(rng() % space->size()).value();
            auto state = apply_template(*tmpl, inst.dag, config, target);
            ASSERT_TRUE(state.is_ok()) << describe(c) << ": " << state.status().to_string();
            auto func = lower(*state);
            ASSERT_TRUE(func.is_ok()) << describe(c) << " " << config.to_string() << ": " << func.status().to_string();
          }
        }
}

TEST(DepthwiseTemplates, ABroadcastTailThatReadsTheConvItselfIsRefused) {
  // out = map * conv + conv: the broadcast stage reads the conv besides its
  // last elementwise stage, which the template computes only per block.
  Tensor x = placeholder({1, 4, 6, 6}, DType::f32(), "X"), w = placeholder({4, 1, 3, 3}, DType::f32(), "W");
  Tensor map = placeholder({1, 4, 6, 6}, DType::f32(), "map");
  Tensor y = ops::depthwise_conv2d_nchw(x, w, 6, 1).value();  // 1 x 4 x 1 x 1
  Tensor r = ops::relu(y).value();
  Tensor out = ops::add(ops::mul(map, r).value(), y).value();
  auto dag = std::make_shared<const ComputeDAG>(ComputeDAG::make({x, w, map, out}).value());
  auto space = find_template("depthwise_conv2d")->define(*dag, host_target());
  ASSERT_FALSE(space.is_ok());
  EXPECT_EQ(space.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(space.status().message().find("broadcast stage"), std::string::npos) << space.status().to_string();
}

}  // namespace
}  // namespace tessera
