// Helpers shared by the operator builders (not part of the public API).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/ops/window.h"
#include "compiler/te/tensor.h"

namespace tessera::ops::detail {

/// "[2, 3, 4]".
std::string shape_str(const std::vector<int64_t>& shape);

/// kInvalidArgument "<op>: <what>".
Status invalid(const std::string& op, const std::string& what);

/// Checks that `t` is defined and has `rank` dimensions, each positive.
Status check_rank(const std::string& op, const char* role, const Tensor& t, int rank);

/// Checks that `t` has a float element type.
Status check_float(const std::string& op, const char* role, const Tensor& t);

/// An axis in [-rank, rank) as a position in [0, rank).
Result<int> normalize_axis(const std::string& op, int axis, int rank);

/// Output size of a sliding window over an h x w input.
struct Window {
  int64_t out_h = 0, out_w = 0;
};
/// Validates stride, padding and dilation of an r x s window over h x w and
/// gives the output size (floor mode).
Result<Window> window_geometry(const std::string& op, int64_t h, int64_t w, int64_t r, int64_t s, Size2 stride,
                               const Padding2& padding, Size2 dilation);

/// The constant `v` of scalar type `t`.
Expr constant(DType t, double v);

/// The indices of `vars` (an output's axes) as Exprs.
std::vector<Expr> as_exprs(const Vars& vars);

/// Word `q` of the last axis of uint8 `bytes` at `prefix` (its other axes):
/// the int32 whose bytes, lowest first, are bytes[prefix..., 4q .. 4q + 3]
/// (the highest wraps into the sign, as the bits of a word are). What
/// CallOp::kDotU8S8 takes as its unsigned operand.
Expr byte_word(const Tensor& bytes, std::vector<Expr> prefix, const Expr& q);

/// The indices of `t`, NumPy-broadcast into an output of rank `i.size()`, at
/// output point `i`.
std::vector<Expr> broadcast_indices(const Tensor& t, const Vars& i);

/// Whether a product of float32 activations `x` may read weights `w` of
/// their own type or float16 (--precision fp16: half the bytes stored and
/// streamed, widened to float32 as read).
bool takes_weights(const Tensor& x, const Tensor& w);

/// Weight `w` at `idx`, in the type of the activations `x` it multiplies.
Expr read_weight(const Tensor& x, const Tensor& w, const std::vector<Expr>& idx);

}  // namespace tessera::ops::detail
