// Graph passes: each is one free function from a graph to a new graph.
//
// The usual order (see optimize_graph):
//   fold_constants -> fold_batch_norm -> fold_constants -> merge_duplicate_views -> recognize_layer_norm
//   -> fold_matmul_views -> move_quantized_values -> reduce_powers -> eliminate_dead_nodes
// followed by fuse_ops (fuse_ops.h) and extract_tasks (extract_tasks.h).
// Partitioning for external backends is partition_graph.h; compiler/model
// runs it after these passes and before fusion when a backend is chosen.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "base/status.h"
#include "compiler/graph/graph.h"

namespace tessera::graph {

/// A MaxPool, Concat, Reshape, Transpose, Slice or nearest Resize whose
/// data inputs are all dequantized with the scale and zero point of the one
/// QuantizeLinear that reads it (a QDQ model's moves) runs on the integers
/// themselves and takes that QuantizeLinear's place; the result is exact.
/// The dequantizations nobody else reads go.
Result<Graph> move_quantized_values(const Graph& g);

/// Pow by one constant exponent of 2 or 3 becomes x * x or x * x * x (as
/// ONNX Runtime computes them): multiplies instead of a pow call per element.
Result<Graph> reduce_powers(const Graph& g);

/// Whether evaluate_node can compute `kind` on constant inputs (shape-like and
/// elementwise operators; never conv, gemm, matmul, pools or reductions: those
/// stay kernels with constant inputs).
bool is_foldable(OpKind kind);

/// The output of `n` computed from its constant inputs (`inputs[i]` is the
/// data of n.inputs[i]); `out` is n's output value. Shape reads only the
/// input's Value, so `inputs` may hold nullptr for it. kInvalidArgument when
/// the node cannot be evaluated.
Result<Constant> evaluate_node(const Graph& g, const Node& n, const std::vector<const Constant*>& inputs);

/// Replaces every foldable node whose inputs are all constant (and every Shape
/// node) by a constant holding its result, then drops what became dead.
Result<Graph> fold_constants(const Graph& g);

/// Folds an inference BatchNorm into the convolution that feeds it when the
/// conv's output has no other reader and the conv weight, conv bias and BN
/// parameters are constants: W'[k] = W[k] * s[k], b'[k] = (b[k] - mean[k]) *
/// s[k] + beta[k] with s = gamma / sqrt(var + eps). Other BatchNorms stay.
Result<Graph> fold_batch_norm(const Graph& g);

/// LayerNorm written out as primitive nodes becomes one kLayerNorm node (one
/// kernel: mean, variance, normalise, scale, shift):
///   d = x - ReduceMean(x); y = d / Sqrt(ReduceMean(Pow(d, 2) or d * d) + eps)
/// over the trailing axes [a, rank) with keepdims and a scalar constant eps,
/// optionally followed by * gamma and then + beta, constants with one value
/// per normalized element. Every intermediate must be read only inside the
/// pattern; anything else is left as it is.
Result<Graph> recognize_layer_norm(const Graph& g);

/// A MatMul operand produced by a chain of Transpose nodes and Reshapes that
/// only split axes (attention's heads and K^T), each read by that MatMul
/// alone, is read in place: the MatMul gets MatMulAttrs with the chain's
/// index map and reads the chain's source, and the chain's nodes (copy
/// kernels) go. Reshapes that merge axes stay (the map would need a
/// division). A MatMul of one row per batch element by a shared matrix (A
/// [..., 1, K] with one leading axis of extent P > 1, B [K, N]: an LSTM's
/// input projection over its steps) reads A as [P, K] and becomes one
/// matrix product [P, N] and a Reshape, not P products of one row.
Result<Graph> fold_matmul_views(const Graph& g);

/// Targets with an int8 matrix-multiply instruction (AArch64's USMMLA): every
/// kMatMulU8S8 of bytes with an even M and N and K a multiple of 8 becomes
/// ops::matmul_u8s8_pairs (MatMulAttrs::pairs), its product in 2 x 2 tiles;
/// every NHWC int8 conv of one group with word weights, C a multiple of 8
/// and K even, ops::conv2d_nhwc_u8s8_pairs (ConvAttrs::pairs).
Result<Graph> pair_int8_products(const Graph& g);

/// Whether convert_bf16 runs `n` on the bfloat16 dot product: a MatMul (no
/// views) or Gemm (alpha 1, no transposed A, beta 1 where C is given) of
/// float32 activations [..., K] by a constant float32 weight, K even; or an
/// NHWC Conv of one group, not by Winograd, of an even number of float32
/// input channels by constant float32 weights.
bool bf16_eligible(const Graph& g, const Node& n);

/// --precision bf16: every bf16_eligible product becomes kMatMulBf16 (its
/// weight packed [K/2, N, 2]; Gemm's C added after) and every convolution
/// kConvBf16 (its weight packed R x S x C/2 x K x 2, its bias kept), the
/// weights rounded to bfloat16 (to nearest even), the activations cast to
/// bfloat16 by a kCast node (one per value, shared by its readers; it fuses
/// into the kernel producing it). The rest of the graph stays float32.
Result<Graph> convert_bf16(const Graph& g);

/// Whether convert_fp16_weights stores `n`'s weight in float16: a MatMul or
/// Gemm (not trans_a) of a float32 activation (a constant one too: a weight
/// shared with a product that is not folded stays one float16 copy) by a
/// constant float32 2-D weight, or an NHWC convolution by constant float32
/// HWIO weights (or their Winograd transform).
bool fp16_weights_eligible(const Graph& g, const Node& n);

/// --precision fp16: the weight of every fp16_weights_eligible product
/// becomes a float16 constant (rounded to nearest even; one copy per
/// weight, shared by its products), which the product widens to float32 as
/// it reads it (ops::matmul); sums, activations and the rest of the graph
/// stay float32.
Result<Graph> convert_fp16_weights(const Graph& g);

/// A Reshape, Transpose or Slice that repeats an earlier one (the same
/// input, attributes, output shape and type) is dropped; its readers read
/// the earlier one's output (an STFT's two 1-D convs reshape one signal
/// each).
Result<Graph> merge_duplicate_views(const Graph& g);

/// Drops nodes whose outputs reach no graph output, and constants nobody reads.
Graph eliminate_dead_nodes(const Graph& g);

/// Layout transformation for conv-heavy graphs, where it pays: when every
/// convolution has a constant weight, each runs in NHWC with an HWIO weight,
/// elementwise operators (and pooling, Resize, Concat) follow their inputs
/// into NHWC, and a transpose back to NCHW is made only where another
/// operator or a graph output reads the value. A 1-D conv's [N, C, W] values
/// follow as its height-1 conv's [N, 1, W, C]: reshapes to and from that
/// conv (no nodes), elementwise operators, channel slices, an instance norm
/// over W, a transpose to [N, W, C]. Graphs
/// with a conv whose weight is not constant, or none, are returned
/// unchanged.
Result<Graph> convert_layout_nhwc(const Graph& g);
/// A 1-D convolution of one input channel (NHWC, input [N, 1, W, 1], a
/// constant float32 weight [1, S, 1, K] of 64 taps or more, no padding, no dilation, one group:
/// an audio front end's STFT) becomes a MatMul reading its windows in place
/// (a view [N, 1, M, S]: row m starts at sample m * stride) by the weight as
/// [S, K], its bias an Add: the gemm template's speed, not the conv
/// template's single broadcast input channel. Convs of one input by the
/// same windows (an STFT's real and imaginary parts) share one product by
/// their weights side by side, each a Slice of its columns. Those `use`
/// accepts; the rest stay (a conv an external backend takes).
Result<Graph> convert_window_products(const Graph& g, const std::function<bool(const Node&)>& use);

/// Whether conv `n` can run by Winograd F(2x2, 3x3): NHWC, a 3x3 window,
/// stride 1, undilated, one group, a constant float32 weight, and an even
/// output height and width (whole 2x2 tiles).
bool winograd_eligible(const Graph& g, const Node& n);

/// Runs the eligible convolutions that `use` selects by Winograd: each gets
/// ConvAttrs::winograd and, for its weight, a new constant holding U = G g G^T
/// (4 x 4 x C x K). Which ones pay is a measurement (compiler/model's
/// choose_winograd reads the records); the rest are unchanged.
Result<Graph> convert_winograd(const Graph& g, const std::function<bool(const Node&)>& use);

/// The passes above in order; the graph is validated first.
Result<Graph> optimize_graph(const Graph& g);

}  // namespace tessera::graph
