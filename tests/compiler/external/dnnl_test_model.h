// The model the dnnl backend's tests compile: convs (plain with bias and
// relu, depthwise with clip, grouped), max and average pooling, a residual
// add, a concat, a flatten (Tessera's) and a dense layer with bias and relu
// -- every kind of op its payload carries.
#pragma once

#include <string>
#include <vector>

#include "tests/compiler/external/external_test_util.h"

namespace tessera::graph::test {

inline ValueId conv(Graph& g, const std::string& name, ValueId x, int64_t k, int64_t c_per_group, int64_t r,
                    int64_t groups, bool bias, uint32_t seed) {
  const std::vector<int64_t> in = g.value(x).shape;  // a copy: adding the weights moves the values
  ConvAttrs a;
  a.groups = groups;
  a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = r / 2;
  std::vector<ValueId> inputs = {x, weight(g, name + ".w", {k, c_per_group, r, r}, seed)};
  if (bias) inputs.push_back(weight(g, name + ".b", {k}, seed + 100));
  return g.add_op(name, OpKind::kConv, a, inputs, {in[0], k, in[2], in[3]}, DType::f32());
}

inline ValueId unary(Graph& g, const std::string& name, OpKind kind, ValueId x, Attrs attrs = NoAttrs{}) {
  return g.add_op(name, kind, std::move(attrs), {x}, g.value(x).shape, DType::f32());
}

inline PoolAttrs window(int64_t k) {
  PoolAttrs p;
  p.kernel_h = p.kernel_w = p.stride_h = p.stride_w = k;
  return p;
}

inline Graph conv_model() {
  Graph g;
  ValueId x = g.add_input("x", {1, 3, 16, 16}, DType::f32());
  ValueId h = unary(g, "relu0", OpKind::kRelu, conv(g, "conv0", x, 8, 3, 3, 1, true, 1));
  h = g.add_op("pool0", OpKind::kMaxPool, window(2), {h}, {1, 8, 8, 8}, DType::f32());
  ValueId dw = conv(g, "dw", h, 8, 1, 3, 8, true, 2);
  dw = unary(g, "clip", OpKind::kClip, dw, AffineAttrs{0.0, 0.5});
  ValueId grouped = conv(g, "grouped", dw, 16, 4, 1, 2, false, 3);
  ValueId side = conv(g, "side", h, 16, 8, 1, 1, true, 4);
  ValueId sum = g.add_op("residual", OpKind::kAdd, NoAttrs{}, {grouped, side}, {1, 16, 8, 8}, DType::f32());
  sum = unary(g, "relu1", OpKind::kRelu, sum);
  ValueId cat = g.add_op("cat", OpKind::kConcat, AxisAttrs{1}, {sum, dw}, {1, 24, 8, 8}, DType::f32());
  ValueId avg = g.add_op("pool1", OpKind::kAvgPool, window(2), {cat}, {1, 24, 4, 4}, DType::f32());
  ValueId flat = g.add_op("flatten", OpKind::kReshape, NoAttrs{}, {avg}, {1, 384}, DType::f32());
  GemmAttrs ga;
  ga.trans_b = true;
  ValueId y = g.add_op("fc", OpKind::kGemm, ga, {flat, weight(g, "fc.w", {10, 384}, 5), weight(g, "fc.b", {10}, 6)},
                       {1, 10}, DType::f32());
  y = unary(g, "relu2", OpKind::kRelu, y);
  g.set_outputs({y, cat}, {"y", "features"});
  return g;
}

}  // namespace tessera::graph::test
