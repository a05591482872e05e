// Reductions and normalisations: reduce_sum/mean/max, softmax, layer_norm.
//
// Reduce stages are OpPattern::kReduction; the stages that combine a reduced
// value with the input (softmax's normalize, layer_norm's output) are
// kBroadcast, and plain rescalings (mean) kElementwise.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/te/tensor.h"

namespace tessera::ops {

/// Sum of x over `axes` (negative axes count from the end; empty: all axes).
/// With keepdims the reduced axes stay with extent 1; without, they are
/// dropped (reducing every axis gives a 0-d tensor).
Result<Tensor> reduce_sum(const Tensor& x, const std::vector<int>& axes, bool keepdims = false,
                          const std::string& name = "reduce_sum");
/// Mean over `axes`: the sum is the stage `name`.sum, then a division (float).
Result<Tensor> reduce_mean(const Tensor& x, const std::vector<int>& axes, bool keepdims = false,
                           const std::string& name = "reduce_mean");
/// Maximum over `axes`.
Result<Tensor> reduce_max(const Tensor& x, const std::vector<int>& axes, bool keepdims = false,
                          const std::string& name = "reduce_max");

/// Minimum over `axes` (int64 as ~max(~x), since the int64 min identity
/// does not survive its trip through double).
Result<Tensor> reduce_min(const Tensor& x, const std::vector<int>& axes, bool keepdims = false,
                          const std::string& name = "reduce_min");
/// The bounds of a float tensor in one pass, as a dynamic quantization
/// needs them: [max(-x), max(x)] over every element (the first is minus the
/// minimum), shape [2]. Each row (the last axis) is reduced to its two
/// bounds, a vector of running bounds each, in the stage `name`.rows while
/// it is in L1; the rows' vectors to two (`name`.columns, for two or more
/// axes), then across their lanes: the tensor is read from memory once,
/// where a minimum and a maximum apart read it twice.
Result<Tensor> reduce_bounds(const Tensor& x, const std::string& name = "reduce_bounds");
/// Product over `axes`.
Result<Tensor> reduce_prod(const Tensor& x, const std::vector<int>& axes, bool keepdims = false,
                           const std::string& name = "reduce_prod");

/// The int64 index along `axis` of the maximum (or, with !is_max, the
/// minimum) of x: the first one, or the last with select_last. Stages:
/// `name`.extreme (the max or min, axis kept), `name`.pos (a reduction that
/// finds the position) and the output `name`.
Result<Tensor> arg_reduce(const Tensor& x, int axis, bool keepdims, bool is_max, bool select_last,
                          const std::string& name = "arg_reduce");

/// Running sum along `axis`: out[.., i, ..] = sum of x[.., k, ..] over
/// k <= i (k < i when exclusive; k >= i, k > i when reverse). One
/// reduction stage over the whole axis, masked.
Result<Tensor> cumsum(const Tensor& x, int axis, bool exclusive, bool reverse, const std::string& name = "cumsum");

/// exp(x - max) / sum(exp(x - max)) along `axis`, in three stages:
/// `name`.max, `name`.expsum (both keep the axis with extent 1) and the
/// normalize stage `name`. Subtracting the max keeps exp from overflowing.
Result<Tensor> softmax(const Tensor& x, int axis = -1, const std::string& name = "softmax");

/// (x - mean) / sqrt(var + eps) * gamma + beta, with mean and (biased)
/// variance over the axes [axis, rank), or over `count` axes from `axis`
/// when `count` > 0 (a channels-last instance norm: [N, W, C] over W alone);
/// gamma and beta have the shape of those axes. Stages: `name`.sum,
/// `name`.sqdev (sum of squared deviations, the two-pass form) and the
/// output `name`.
Result<Tensor> layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, int axis = -1, double eps = 1e-5,
                          const std::string& name = "layer_norm", int count = 0);

}  // namespace tessera::ops
