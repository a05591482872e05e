#include "compiler/graph/passes.h"

#include <gtest/gtest.h>

#include <tuple>

#include "tests/compiler/graph/graph_test_util.h"

namespace tessera::graph {
namespace {

using test::Bytes;

TEST(FoldConstants, ShapeGatherReshapeChainBecomesAPlainReshape) {
  // y = reshape(x, concat(gather(shape(x), 0), [-1]))   (PyTorch's flatten)
  Graph g;
  ValueId x = g.add_input("x", {2, 3, 4}, DType::f32());
  ValueId shape = g.add_op("shape", OpKind::kShape, NoAttrs{}, {x}, {3}, DType::i64());
  ValueId zero = g.add_constant("zero", Constant::from_int64s({1}, {0}));
  ValueId n = g.add_op("gather", OpKind::kGather, AxisAttrs{0}, {shape, zero}, {1}, DType::i64());
  ValueId minus1 = g.add_constant("minus1", Constant::from_int64s({1}, {-1}));
  ValueId target = g.add_op("concat", OpKind::kConcat, AxisAttrs{0}, {n, minus1}, {2}, DType::i64());
  ValueId y = g.add_op("reshape", OpKind::kReshape, NoAttrs{}, {x, target}, {2, 12}, DType::f32());
  g.set_outputs({y});
  auto folded = fold_constants(g);
  ASSERT_TRUE(folded.is_ok()) << folded.status().to_string();
  ASSERT_EQ(folded->nodes().size(), 1u);
  EXPECT_EQ(folded->nodes()[0].kind, OpKind::kReshape);
  ASSERT_TRUE(folded->is_constant(target));
  EXPECT_EQ(folded->constant(target).to_doubles(), (std::vector<double>{2, -1}));
  // The intermediate shape constants are dead and gone.
  EXPECT_FALSE(folded->is_constant(shape));
  EXPECT_FALSE(folded->is_constant(zero));
}

TEST(FoldConstants, ArithmeticOnConstantsIsEvaluatedAndConvStays) {
  Graph g;
  ValueId x = g.add_input("x", {1, 1, 3, 3}, DType::f32());
  ValueId w = g.add_constant("w", Constant::from_floats({1, 1, 1, 1}, {2.0f}));
  ValueId two = g.add_constant("two", Constant::from_floats({}, {2.0f}));
  ValueId w2 = g.add_op("scale", OpKind::kMul, NoAttrs{}, {w, two}, {1, 1, 1, 1}, DType::f32());
  ValueId y = g.add_op("conv", OpKind::kConv, ConvAttrs{}, {x, w2}, {1, 1, 3, 3}, DType::f32());
  g.set_outputs({y});
  auto folded = fold_constants(g);
  ASSERT_TRUE(folded.is_ok());
  ASSERT_EQ(folded->nodes().size(), 1u);
  EXPECT_EQ(folded->nodes()[0].kind, OpKind::kConv);
  EXPECT_EQ(folded->constant(w2).to_doubles(), (std::vector<double>{4.0}));
}

// ONNX's integer Div truncates toward zero (C's division, as ONNX Runtime
// computes it): folded and in a kernel alike, whatever the signs.
TEST(FoldConstants, IntegerDivTruncatesTowardZeroFoldedAndInAKernel) {
  const std::vector<int64_t> a = {-7, 7, -7, 7, -6, 0, 5, -1}, b = {2, -2, -2, 2, 3, 5, 7, 3};
  const std::vector<double> want = {-3, -3, 3, 3, -2, 0, 0, 0};
  for (DType t : {DType::i32(), DType::i64()}) {
    Graph g;
    ValueId x = g.add_input("x", {8}, t);
    ValueId ca = g.add_constant("a", Constant::from_doubles(t, {8}, std::vector<double>(a.begin(), a.end())));
    ValueId cb = g.add_constant("b", Constant::from_doubles(t, {8}, std::vector<double>(b.begin(), b.end())));
    ValueId folded_q = g.add_op("folded", OpKind::kDiv, NoAttrs{}, {ca, cb}, {8}, t);
    ValueId kernel_q = g.add_op("kernel", OpKind::kDiv, NoAttrs{}, {x, cb}, {8}, t);
    g.set_outputs({folded_q, kernel_q});
    auto folded = fold_constants(g);
    ASSERT_TRUE(folded.is_ok()) << folded.status().to_string();
    EXPECT_EQ(folded->constant(folded_q).to_doubles(), want) << t.to_string();
    Graph kernel_only;
    ValueId kx = kernel_only.add_input("x", {8}, t);
    ValueId kb = kernel_only.add_constant("b", Constant::from_doubles(t, {8}, std::vector<double>(b.begin(), b.end())));
    kernel_only.set_outputs({kernel_only.add_op("kernel", OpKind::kDiv, NoAttrs{}, {kx, kb}, {8}, t)});
    auto out = test::run_graph(kernel_only, {{kx, g.constant(ca).bytes}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    Constant got = Constant::from_doubles(t, {8}, std::vector<double>(8, 0.0));
    got.bytes = out->at(0);
    EXPECT_EQ(got.to_doubles(), want) << t.to_string();
  }
}

TEST(FoldConstants, SlicePadAndCastOfConstantsAreEvaluated) {
  Graph g;
  ValueId c = g.add_constant("c", Constant::from_floats({2, 3}, {1, 2, 3, 4, 5, 6}));
  ValueId s = g.add_op("slice", OpKind::kSlice, SliceAttrs{{0, 2}, {1, -1}}, {c}, {2, 2}, DType::f32());
  ValueId p = g.add_op("pad", OpKind::kPad, PadAttrs{{1, 0}, {0, 1}, 9.0}, {s}, {3, 3}, DType::f32());
  ValueId i = g.add_op("cast", OpKind::kCast, CastAttrs{DType::i64()}, {p}, {3, 3}, DType::i64());
  g.set_outputs({i});
  auto folded = fold_constants(g);
  ASSERT_TRUE(folded.is_ok()) << folded.status().to_string();
  EXPECT_TRUE(folded->nodes().empty());
  EXPECT_EQ(folded->constant(i).to_doubles(), (std::vector<double>{9, 9, 9, 3, 2, 9, 6, 5, 9}));
}

TEST(FoldConstants, EdgeAndReflectPadsOfConstantsAgreeWithTheKernel) {
  // x = [1 2 3]; edge pad 2|1 -> 1 1 1 2 3 3; reflect pad 2|1 -> 3 2 1 2 3 2.
  for (PadAttrs::Mode mode : {PadAttrs::Mode::kEdge, PadAttrs::Mode::kReflect}) {
    PadAttrs a{{0, 2}, {0, 1}, 0.0, mode};
    const std::vector<double> want =
        mode == PadAttrs::Mode::kEdge ? std::vector<double>{1, 1, 1, 2, 3, 3} : std::vector<double>{3, 2, 1, 2, 3, 2};
    Graph folded_graph;
    ValueId c = folded_graph.add_constant("c", Constant::from_floats({1, 3}, {1, 2, 3}));
    ValueId p = folded_graph.add_op("pad", OpKind::kPad, a, {c}, {1, 6}, DType::f32());
    folded_graph.set_outputs({p});
    auto folded = fold_constants(folded_graph);
    ASSERT_TRUE(folded.is_ok()) << folded.status().to_string();
    EXPECT_EQ(folded->constant(p).to_doubles(), want);

    Graph g;
    ValueId x = g.add_input("x", {1, 3}, DType::f32());
    ValueId y = g.add_op("pad", OpKind::kPad, a, {x}, {1, 6}, DType::f32());
    g.set_outputs({y});
    auto out = test::run_graph(g, {{x, test::to_bytes({1, 2, 3})}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    EXPECT_EQ(test::to_floats(out->at(0)), std::vector<float>(want.begin(), want.end()));
  }
}

TEST(EliminateDeadNodes, DropsUnreadNodesAndConstants) {
  Graph g;
  ValueId x = g.add_input("x", {4}, DType::f32());
  ValueId c = g.add_constant("unused", Constant::from_floats({4}, {1, 2, 3, 4}));
  ValueId dead = g.add_op("dead", OpKind::kAdd, NoAttrs{}, {x, c}, {4}, DType::f32());
  g.add_op("dead2", OpKind::kRelu, NoAttrs{}, {dead}, {4}, DType::f32());
  ValueId y = g.add_op("live", OpKind::kSigmoid, NoAttrs{}, {x}, {4}, DType::f32());
  g.set_outputs({y});
  Graph out = eliminate_dead_nodes(g);
  ASSERT_EQ(out.nodes().size(), 1u);
  EXPECT_EQ(out.nodes()[0].name, "live");
  EXPECT_TRUE(out.constants().empty());
}

// conv (with bias) -> batch_norm, the BN's output read by relu.
Graph conv_bn_graph(bool with_bias) {
  Graph g;
  ValueId x = g.add_input("x", {1, 3, 6, 6}, DType::f32());
  ValueId w = g.add_constant("w", Constant::from_floats({4, 3, 3, 3}, test::random_floats(108, 1)));
  std::vector<ValueId> conv_in{x, w};
  if (with_bias) conv_in.push_back(g.add_constant("b", Constant::from_floats({4}, {0.1f, -0.2f, 0.3f, 0.0f})));
  ConvAttrs a;
  a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = 1;
  ValueId y = g.add_op("conv", OpKind::kConv, a, conv_in, {1, 4, 6, 6}, DType::f32());
  ValueId gamma = g.add_constant("gamma", Constant::from_floats({4}, {1.5f, 0.5f, -1.0f, 2.0f}));
  ValueId beta = g.add_constant("beta", Constant::from_floats({4}, {0.0f, 1.0f, -0.5f, 0.25f}));
  ValueId mean = g.add_constant("mean", Constant::from_floats({4}, {0.1f, 0.2f, -0.3f, 0.4f}));
  ValueId var = g.add_constant("var", Constant::from_floats({4}, {1.0f, 0.5f, 2.0f, 0.1f}));
  ValueId z =
      g.add_op("bn", OpKind::kBatchNorm, ScalarAttrs{1e-5}, {y, gamma, beta, mean, var}, {1, 4, 6, 6}, DType::f32());
  ValueId r = g.add_op("relu", OpKind::kRelu, NoAttrs{}, {z}, {1, 4, 6, 6}, DType::f32());
  g.set_outputs({r});
  return g;
}

class FoldBatchNormCases : public ::testing::TestWithParam<bool> {};

TEST_P(FoldBatchNormCases, FoldedConvComputesTheSameAsConvThenBatchNorm) {
  const Graph g = conv_bn_graph(GetParam());
  auto folded = fold_batch_norm(g);
  ASSERT_TRUE(folded.is_ok()) << folded.status().to_string();
  ASSERT_EQ(folded->nodes().size(), 2u);
  EXPECT_EQ(folded->nodes()[0].kind, OpKind::kConv);
  EXPECT_EQ(folded->nodes()[0].inputs.size(), 3u);  // a bias appears
  EXPECT_EQ(folded->nodes()[1].kind, OpKind::kRelu);
  EXPECT_TRUE(test::same_outputs(g, *folded, test::random_floats(108, 2)));
}

INSTANTIATE_TEST_SUITE_P(WithAndWithoutBias, FoldBatchNormCases, ::testing::Bool());

TEST(FoldBatchNorm, ConvWhoseOutputHasAnotherReaderIsLeftAlone) {
  Graph g = conv_bn_graph(true);
  // A second reader of the conv output: folding would change what it sees.
  const ValueId conv_out = g.nodes()[0].outputs[0];
  ValueId extra = g.add_op("extra", OpKind::kSigmoid, NoAttrs{}, {conv_out}, {1, 4, 6, 6}, DType::f32());
  g.set_outputs({g.outputs()[0], extra});
  auto folded = fold_batch_norm(g);
  ASSERT_TRUE(folded.is_ok());
  EXPECT_EQ(folded->nodes().size(), 4u);
}

TEST(OptimizeGraph, RunsThePassesInOrder) {
  auto out = optimize_graph(conv_bn_graph(false));
  ASSERT_TRUE(out.is_ok());
  EXPECT_EQ(out->nodes().size(), 2u);
  EXPECT_EQ(out->constants().size(), 2u);  // folded weight and bias only
}

// An NHWC conv of `window` x `window` with `stride`, on an h x h input
// padded by 1, as convert_layout_nhwc leaves it.
Graph nhwc_conv(int64_t window, int64_t stride, int64_t h) {
  Graph g;
  ValueId x = g.add_input("x", {1, h, h, 4}, DType::f32());
  ValueId w =
      g.add_constant("w", Constant::from_floats({window, window, 4, 6}, test::random_floats(window * window * 24, 1)));
  ConvAttrs a;
  a.nhwc = true;
  a.stride_h = a.stride_w = stride;
  a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = 1;
  const int64_t out = (h + 2 - window) / stride + 1;
  ValueId y = g.add_op("conv", OpKind::kConv, a, {x, w}, {1, out, out, 6}, DType::f32());
  g.set_outputs({y});
  return g;
}

TEST(ConvertWinograd, OnlyStrideOne3x3ConvsWithWholeTilesAreEligible) {
  EXPECT_TRUE(winograd_eligible(nhwc_conv(3, 1, 8), nhwc_conv(3, 1, 8).nodes()[0]));
  for (const Graph& g : {nhwc_conv(3, 2, 8), nhwc_conv(1, 1, 8), nhwc_conv(3, 1, 7)})
    EXPECT_FALSE(winograd_eligible(g, g.nodes()[0])) << graph_to_string(g);
}

TEST(ConvertWinograd, TransformsTheWeightAndKeepsTheResult) {
  const Graph g = nhwc_conv(3, 1, 8);
  auto none = convert_winograd(g, [](const Node&) { return false; });
  ASSERT_TRUE(none.is_ok());
  EXPECT_FALSE(std::get<ConvAttrs>(none->nodes()[0].attrs).winograd);
  auto all = convert_winograd(g, [](const Node&) { return true; });
  ASSERT_TRUE(all.is_ok()) << all.status().to_string();
  const Node& conv = all->nodes()[0];
  EXPECT_TRUE(std::get<ConvAttrs>(conv.attrs).winograd);
  ASSERT_TRUE(all->is_constant(conv.inputs[1]));
  EXPECT_EQ(all->value(conv.inputs[1]).shape, (std::vector<int64_t>{4, 4, 4, 6}));
  EXPECT_EQ(all->constants().size(), 1u);  // the HWIO weight is gone
  const auto x = test::random_floats(256, 2);
  auto want = test::run_graph(g, {{g.inputs()[0], test::to_bytes(x)}});
  auto got = test::run_graph(*all, {{all->inputs()[0], test::to_bytes(x)}});
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_TRUE(test::close(test::to_floats((*got)[0]), test::to_floats((*want)[0]), 1e-4, 1e-5));
}

// A long 1-D conv of one input channel (NHWC) becomes a MatMul reading its
// windows in place and an Add of its bias, with the conv's numbers; a short
// one, or one `use` declines, stays a conv.
TEST(ConvertWindowProducts, LongOneChannelConvsBecomeProductsOfTheirWindows) {
  for (const auto& [taps, used] : std::vector<std::pair<int64_t, bool>>{{96, true}, {10, true}, {96, false}}) {
    const int64_t width = 400, stride = 7, k = 5, m = (width - taps) / stride + 1;
    Graph g;
    const ValueId x = g.add_input("x", {1, 1, width, 1}, DType::f32());
    const ValueId w = g.add_constant("w", Constant::from_floats({1, taps, 1, k}, test::random_floats(taps * k, 5)));
    const ValueId b = g.add_constant("b", Constant::from_floats({k}, test::random_floats(k, 6)));
    ConvAttrs attrs;
    attrs.nhwc = true;
    attrs.stride_w = stride;
    g.set_outputs({g.add_op("stft", OpKind::kConv, attrs, {x, w, b}, {1, 1, m, k}, DType::f32())});
    auto converted = convert_window_products(g, [&](const Node&) { return used; });
    ASSERT_TRUE(converted.is_ok()) << converted.status().to_string();
    const bool product = taps >= 64 && used;
    int matmuls = 0, convs = 0;
    for (const Node& n : converted->nodes()) matmuls += n.kind == OpKind::kMatMul, convs += n.kind == OpKind::kConv;
    EXPECT_EQ(matmuls, product ? 1 : 0) << taps << " " << used;
    EXPECT_EQ(convs, product ? 0 : 1) << taps << " " << used;
    const std::vector<float> xs = test::random_floats(width, 7);
    auto want = test::run_graph(g, {{x, test::to_bytes(xs)}});
    auto got = test::run_graph(*converted, {{x, test::to_bytes(xs)}});
    ASSERT_TRUE(want.is_ok() && got.is_ok()) << (want.is_ok() ? got.status() : want.status()).to_string();
    EXPECT_TRUE(test::close(test::to_floats(got->at(0)), test::to_floats(want->at(0))));
  }
}

// An STFT's real and imaginary convs read one signal by the same windows:
// one product by their weights side by side ([96, 5 + 3]) and a slice of
// its columns for each (with its bias), the same results.
TEST(ConvertWindowProducts, SiblingConvsOfOneSignalShareOneProduct) {
  const int64_t width = 400, stride = 7, taps = 96, m = (width - taps) / stride + 1;
  Graph g;
  const ValueId x = g.add_input("x", {1, 1, width, 1}, DType::f32());
  ConvAttrs attrs;
  attrs.nhwc = true;
  attrs.stride_w = stride;
  std::vector<ValueId> outs;
  for (const auto& [name, k, bias] :
       std::vector<std::tuple<std::string, int64_t, bool>>{{"real", 5, false}, {"imag", 3, true}}) {
    std::vector<ValueId> in = {
        x, g.add_constant(name + ".w", Constant::from_floats({1, taps, 1, k}, test::random_floats(taps * k, k)))};
    if (bias) in.push_back(g.add_constant(name + ".b", Constant::from_floats({k}, test::random_floats(k, 9))));
    outs.push_back(g.add_op(name, OpKind::kConv, attrs, in, {1, 1, m, k}, DType::f32()));
  }
  g.set_outputs(outs);
  auto converted = convert_window_products(g, [](const Node&) { return true; });
  ASSERT_TRUE(converted.is_ok()) << converted.status().to_string();
  int matmuls = 0, slices = 0;
  for (const Node& n : converted->nodes()) {
    matmuls += n.kind == OpKind::kMatMul, slices += n.kind == OpKind::kSlice;
    if (n.kind == OpKind::kMatMul) EXPECT_EQ(converted->value(n.outputs[0]).shape, (std::vector<int64_t>{1, 1, m, 8}));
  }
  EXPECT_EQ(matmuls, 1);
  EXPECT_EQ(slices, 2);
  EXPECT_TRUE(test::same_outputs(g, *converted, test::random_floats(width, 7)));
}

// A reshape, transpose or slice that repeats an earlier one is dropped and
// its readers read the first; one that differs in its shape, its
// permutation or its input stays.
TEST(MergeDuplicateViews, RepeatsOfAViewAreReadFromTheFirst) {
  Graph g;
  const ValueId x = g.add_input("x", {2, 3, 4}, DType::f32());
  const ValueId y = g.add_input("y", {2, 3, 4}, DType::f32());
  const ValueId r1 = g.add_op("r1", OpKind::kReshape, NoAttrs{}, {x}, {6, 4}, DType::f32());
  const ValueId r2 = g.add_op("r2", OpKind::kReshape, NoAttrs{}, {x}, {6, 4}, DType::f32());
  const ValueId r3 = g.add_op("r3", OpKind::kReshape, NoAttrs{}, {x}, {2, 12}, DType::f32());
  const ValueId r4 = g.add_op("r4", OpKind::kReshape, NoAttrs{}, {y}, {6, 4}, DType::f32());
  const ValueId t1 = g.add_op("t1", OpKind::kTranspose, PermAttrs{{2, 0, 1}}, {x}, {4, 2, 3}, DType::f32());
  const ValueId t2 = g.add_op("t2", OpKind::kTranspose, PermAttrs{{2, 0, 1}}, {x}, {4, 2, 3}, DType::f32());
  const ValueId t3 = g.add_op("t3", OpKind::kTranspose, PermAttrs{{1, 0, 2}}, {x}, {3, 2, 4}, DType::f32());
  const ValueId sum = g.add_op("sum", OpKind::kAdd, NoAttrs{}, {r1, r2}, {6, 4}, DType::f32());
  const ValueId tsum = g.add_op("tsum", OpKind::kAdd, NoAttrs{}, {t1, t2}, {4, 2, 3}, DType::f32());
  g.set_outputs({sum, r3, r4, tsum, t3, r2});
  auto merged = merge_duplicate_views(g);
  ASSERT_TRUE(merged.is_ok()) << merged.status().to_string();
  EXPECT_EQ(merged->nodes().size(), g.nodes().size() - 2);
  for (const Node& n : merged->nodes()) {
    EXPECT_NE(n.name, "r2");
    EXPECT_NE(n.name, "t2");
    if (n.name == "sum") EXPECT_EQ(n.inputs, (std::vector<ValueId>{r1, r1}));
    if (n.name == "tsum") EXPECT_EQ(n.inputs, (std::vector<ValueId>{t1, t1}));
  }
  EXPECT_EQ(merged->outputs().back(), r1);  // the graph output r2, read from r1
  EXPECT_EQ(merged->output_name(5), g.output_name(5));
}

// An int8 product of an even M and N and K a multiple of 8 becomes its 2 x 2
// tiles (MatMulAttrs::pairs), with the same integers; other shapes stay.
TEST(PairInt8Products, EvenProductsBecomeTilesWithTheSameSums) {
  for (const auto& [m, k, n, paired] : std::vector<std::tuple<int64_t, int64_t, int64_t, bool>>{
           {4, 16, 6, true}, {3, 16, 6, false}, {4, 12, 6, false}, {4, 16, 5, false}}) {
    Graph g;
    const ValueId a = g.add_input("a", {m, k}, DType::u8());
    std::vector<double> words;
    for (int64_t i = 0; i < k / 4 * n; ++i) words.push_back(static_cast<double>((i * 2654435761u) % 65536) - 32768.0);
    const ValueId b = g.add_constant("b", Constant::from_doubles(DType::i32(), {k / 4, n}, words));
    g.set_outputs({g.add_op("product", OpKind::kMatMulU8S8, NoAttrs{}, {a, b}, {m, n}, DType::i32())});
    auto paired_graph = pair_int8_products(g);
    ASSERT_TRUE(paired_graph.is_ok()) << paired_graph.status().to_string();
    const Node& product = paired_graph->nodes().back();
    const auto* attrs = std::get_if<MatMulAttrs>(&product.attrs);
    EXPECT_EQ(attrs && attrs->pairs, paired) << m << "x" << k << "x" << n;
    Bytes bytes(static_cast<size_t>(m * k));
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 37 + 11);
    auto want = test::run_graph(g, {{a, bytes}});
    auto got = test::run_graph(*paired_graph, {{a, bytes}});
    ASSERT_TRUE(want.is_ok() && got.is_ok());
    EXPECT_EQ(got->at(0), want->at(0));
  }
}

// An NHWC int8 conv of one group with C a multiple of 8 and K even becomes
// its 2 x 2 tiles (ConvAttrs::pairs), with the same integers, over an odd
// output width and a padding that reads the pad value; other shapes stay.
TEST(PairInt8Products, ConvsOfEightChannelsBecomeTilesWithTheSameSums) {
  for (const auto& [c, k, groups, paired] : std::vector<std::tuple<int64_t, int64_t, int64_t, bool>>{
           {16, 6, 1, true}, {12, 6, 1, false}, {16, 5, 1, false}, {16, 6, 2, false}}) {
    Graph g;
    const ValueId x = g.add_input("x", {1, 5, 7, c}, DType::u8());
    std::vector<double> words;
    const int64_t cg = c / groups;
    for (int64_t i = 0; i < 9 * cg / 4 * k; ++i)
      words.push_back(static_cast<double>((i * 2654435761u) % 65536) - 32768.0);
    const ValueId w = g.add_constant("w", Constant::from_doubles(DType::i32(), {3, 3, cg / 4, k}, words));
    ConvAttrs attrs;
    attrs.pad_top = attrs.pad_left = attrs.pad_bottom = attrs.pad_right = 1;
    attrs.groups = groups;
    attrs.nhwc = true;
    attrs.pad_value = 7;
    g.set_outputs({g.add_op("conv", OpKind::kConvU8S8, attrs, {x, w}, {1, 5, 7, k}, DType::i32())});
    auto paired_graph = pair_int8_products(g);
    ASSERT_TRUE(paired_graph.is_ok()) << paired_graph.status().to_string();
    EXPECT_EQ(std::get<ConvAttrs>(paired_graph->nodes().back().attrs).pairs, paired) << c << " " << k << " " << groups;
    Bytes bytes(static_cast<size_t>(35 * c));
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 37 + 11);
    auto want = test::run_graph(g, {{x, bytes}});
    auto got = test::run_graph(*paired_graph, {{x, bytes}});
    ASSERT_TRUE(want.is_ok() && got.is_ok());
    EXPECT_EQ(got->at(0), want->at(0));
  }
}

}  // namespace
}  // namespace tessera::graph

namespace tessera::graph {
namespace {

// Pow by a constant 2 or 3 becomes multiplies (the results: x * x and
// x * x * x, what ONNX Runtime computes); another exponent stays a pow.
TEST(ReducePowers, SquaresAndCubesBecomeMultiplies) {
  for (const double e : {2.0, 3.0, 2.5}) {
    Graph g;
    const ValueId x = g.add_input("x", {4, 5}, DType::f32());
    const ValueId p = g.add_constant("p", Constant::from_floats({}, {static_cast<float>(e)}));
    g.set_outputs({g.add_op("pow", OpKind::kPow, NoAttrs{}, {x, p}, {4, 5}, DType::f32())});
    auto reduced = reduce_powers(g);
    ASSERT_TRUE(reduced.is_ok()) << reduced.status().to_string();
    int pows = 0, muls = 0;
    for (const Node& n : reduced->nodes()) {
      pows += n.kind == OpKind::kPow;
      muls += n.kind == OpKind::kMul;
    }
    EXPECT_EQ(pows, e == 2.5 ? 1 : 0) << e;
    EXPECT_EQ(muls, e == 2.0 ? 1 : e == 3.0 ? 2 : 0) << e;
    const std::vector<float> xs = test::random_floats(20, 3);
    auto y = test::run_graph(*reduced, {{x, test::to_bytes(xs)}});
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    const std::vector<float> got = test::to_floats(y->at(0));
    for (size_t i = 0; i < xs.size(); ++i) {
      const float want = e == 2.0 ? xs[i] * xs[i] : e == 3.0 ? xs[i] * xs[i] * xs[i] : std::pow(xs[i], 2.5f);
      if (e == 2.5 && !(xs[i] >= 0)) continue;  // pow of a negative base by 2.5 is NaN
      EXPECT_FLOAT_EQ(got[i], want) << e << " " << i;
    }
  }
}

}  // namespace
}  // namespace tessera::graph
