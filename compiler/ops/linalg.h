// Matrix products: matmul, dense (fully connected) and batch_matmul.
//
// Each returns its output tensor (OpPattern::kComplex: a reduction with data
// reuse); epilogues (bias, ReLU) are separate elementwise/broadcast stages so
// that schedules can inline them or compute the product at them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/te/tensor.h"

namespace tessera::ops {

/// C[i, j] = sum_k A[i, k] * B[k, j] for A: M x K and B: K x N. The
/// products here (matmul, matmul_views, dense) take float32 activations with
/// float16 weights too (--precision fp16), widened to float32 as read.
Result<Tensor> matmul(const Tensor& a, const Tensor& b, const std::string& name = "matmul");

/// How a product reads an operand in place: as `shape`, element idx of the
/// view being element map * idx of the tensor (one row of `map` per tensor
/// dimension, one column per view dimension). An empty map: the tensor as
/// it is.
struct OperandView {
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> map;
};

/// C = A B with NumPy broadcasting of the leading (batch) dimensions, each
/// operand read through its view: C[..., i, j] = sum_k A[..., i, k] B[...,
/// k, j] of the views, C of shape `out_shape`. A transposed or axis-split
/// operand (attention's K^T) and the windows of a 1-D conv (row m starting
/// at sample m * stride) are such views.
Result<Tensor> matmul_views(const Tensor& a, const OperandView& va, const Tensor& b, const OperandView& vb,
                            const std::vector<int64_t>& out_shape, const std::string& name = "matmul");

/// A 1-D convolution of one input channel as the product of its windows:
/// X: N x 1 x W x 1 (NHWC), weights S x K, C[n, 0, m, k] = sum_s X[n, 0, m *
/// stride + s, 0] W[s, k]: matmul_views with X read as [N, 1, M, S]. The
/// kernel a model's long one-channel conv compiles to (an STFT).
Result<Tensor> conv1d_windows(const Tensor& x, const Tensor& w, int64_t stride, const std::string& name = "conv1d");

/// The u8 x s8 -> int32 product of an M x K matrix of uint8 and a K x N
/// matrix of int8, with K's bytes packed four to an int32 word: A is M x K/4
/// (A[i, q] holds a[i, 4q .. 4q+3], lowest byte first) and B is K/4 x N
/// (B[q, j] holds b[4q .. 4q+3, j]). C[i, j] = sum_q dot_u8s8(A[i, q], B[q, j]):
/// one dot-product instruction per vector of j where the target has one
/// (VNNI). Exact while no sum passes int32 (K < 65,793).
/// A may also be the bytes themselves: uint8 [..., M, K] (leading batch
/// axes kept in C), each word assembled from four of them as it is read (a
/// model's activations, which arrive as bytes).
Result<Tensor> matmul_u8s8(const Tensor& a, const Tensor& b, const std::string& name = "matmul_u8s8");

/// matmul_u8s8 of uint8 bytes A [..., M, K] (M even, K a multiple of 8) and
/// B: K/4 x N words (N even), computed as 2 x 2 tiles of C over eight bytes
/// of K at a time: T[..., m2, n2, r, c] = sum_p dot_u8s8(A[2 m2 + r, 2p],
/// B[2p, 2 n2 + c]) + dot_u8s8(A[2 m2 + r, 2p + 1], B[2p + 1, 2 n2 + c]),
/// then C[..., i, j] = T[..., i / 2, j / 2, i % 2, j % 2]. A vector of such
/// tiles is what a 2 x 8 by 8 x 2 matrix-multiply instruction (AArch64's
/// USMMLA, +i8mm) computes, one tile a register (the gemm_pairs template);
/// elsewhere the two words are two dot products. Same sums as matmul_u8s8.
Result<Tensor> matmul_u8s8_pairs(const Tensor& a, const Tensor& b, const std::string& name = "matmul_u8s8_pairs");

/// The bfloat16 product of A: M x K and B: K x N accumulated in float32, K
/// even (A may have leading batch axes, [..., M, K], kept in C). A is
/// bfloat16, or float32 rounded to bfloat16 as it is read; B is
/// bfloat16 packed in pairs along K: K/2 x N x 2 (B[q, j, r] = b[2q + r, j]).
/// C[i, j] = sum_q dot_bf16(pack_bf16(A[i, 2q], A[i, 2q + 1]),
/// pack_bf16(B[q, j, 0], B[q, j, 1])): the pairs are words, and the product
/// one dot-product instruction per vector of j where the target has one
/// (AVX512-BF16's vdpbf16ps, AArch64's BFDOT).
Result<Tensor> matmul_bf16(const Tensor& a, const Tensor& b, const std::string& name = "matmul_bf16");

/// Y[i, j] = act(sum_k X[i, k] * W[j, k] + bias[j]) for X: M x K, W: N x K
/// (TVM's layout) and an optional bias of N; act is ReLU when `relu`. With a
/// bias or ReLU the product is the stage `name`.matmul and the output `name`
/// is a broadcast/elementwise epilogue stage.
Result<Tensor> dense(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias = std::nullopt,
                     bool relu = false, const std::string& name = "dense");

/// C[b, i, j] = sum_k A[b, i, k] * B[b, k, j] for A: Bt x M x K, B: Bt x K x N.
Result<Tensor> batch_matmul(const Tensor& a, const Tensor& b, const std::string& name = "batch_matmul");

}  // namespace tessera::ops
