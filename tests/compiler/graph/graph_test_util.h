// Test helpers: run a whole graph through fusion, task extraction, lower and
// the reference interpreter (a tiny executor), and build small graphs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <vector>

#include "compiler/codegen/interpreter.h"
#include "compiler/graph/extract_tasks.h"
#include "compiler/graph/graph.h"
#include "compiler/lower/lower.h"
#include "compiler/schedule/state.h"

namespace tessera::graph::test {

using Bytes = std::vector<uint8_t>;

inline Bytes to_bytes(const std::vector<float>& v) {
  Bytes b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

inline std::vector<float> to_floats(const Bytes& b) {
  std::vector<float> v(b.size() / sizeof(float));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(float));
  return v;
}

/// Runs every fused group of `g` with its task's default schedule; `inputs`
/// holds the raw bytes of each graph input. Returns the bytes of every graph
/// output, in order.
inline Result<std::vector<Bytes>> run_graph(const Graph& g, const std::map<ValueId, Bytes>& inputs,
                                            const FuseOptions& fusion = {}) {
  const std::vector<FusedGroup> groups = fuse_ops(g, fusion);
  TESSERA_ASSIGN_OR_RETURN(TaskExtraction tasks, extract_tasks(g, groups));
  std::map<ValueId, Bytes> env = inputs;
  for (const auto& [id, c] : g.constants()) env[id] = c->bytes;
  for (size_t i = 0; i < groups.size(); ++i) {
    const GraphTask& task = tasks.tasks[static_cast<size_t>(tasks.task_of_group[i])];
    TESSERA_ASSIGN_OR_RETURN(PrimFunc f, lower(State(task.dag), "kernel"));
    std::vector<void*> args;
    for (ValueId v : groups[i].inputs) {
      auto it = env.find(v);
      if (it == env.end()) return Status(ErrorCode::kInvalidArgument, "no data for value %" + std::to_string(v));
      args.push_back(it->second.data());
    }
    const Value& out = g.value(groups[i].output);
    Bytes& result = env[groups[i].output];
    result.assign(static_cast<size_t>(shape_size(out.shape) * out.dtype.storage_bytes()), 0xff);
    args.push_back(result.data());
    TESSERA_RETURN_IF_ERROR(interpret(f, args).with_context(groups[i].name));
  }
  std::vector<Bytes> outputs;
  for (ValueId v : g.outputs()) outputs.push_back(env.at(v));
  return outputs;
}

/// |got - want| <= atol + rtol * |want| everywhere.
inline ::testing::AssertionResult close(const std::vector<float>& got, const std::vector<float>& want,
                                        double rtol = 1e-4, double atol = 1e-5) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i])))
      return ::testing::AssertionFailure() << "[" << i << "] got " << got[i] << " want " << want[i];
  return ::testing::AssertionSuccess();
}

/// Whether `after` (a pass's result) computes what `before` computes: both
/// run on `x` as their first input, every float32 output within `close`.
inline ::testing::AssertionResult same_outputs(const Graph& before, const Graph& after, const std::vector<float>& x) {
  auto want = run_graph(before, {{before.inputs()[0], to_bytes(x)}});
  auto got = run_graph(after, {{after.inputs()[0], to_bytes(x)}});
  if (!want.is_ok()) return ::testing::AssertionFailure() << "before: " << want.status().to_string();
  if (!got.is_ok()) return ::testing::AssertionFailure() << "after: " << got.status().to_string();
  if (got->size() != want->size()) return ::testing::AssertionFailure() << "a different number of outputs";
  for (size_t i = 0; i < got->size(); ++i)
    if (auto same = close(to_floats((*got)[i]), to_floats((*want)[i])); !same) return same << " (output " << i << ")";
  return ::testing::AssertionSuccess();
}

/// Deterministic pseudo-random floats in [-1, 1).
inline std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 1;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) / static_cast<float>(1u << 23) - 1.0f;
  }
  return v;
}

/// A float32 constant of `shape` holding random_floats(seed).
inline Constant random_constant(std::vector<int64_t> shape, uint32_t seed) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return Constant::from_floats(std::move(shape), random_floats(static_cast<size_t>(n), seed));
}

/// Naive NCHW convolution (OIHW weight, optional bias of K).
inline std::vector<float> naive_conv(const std::vector<float>& x, const std::vector<int64_t>& xs,
                                     const std::vector<float>& w, const std::vector<int64_t>& ws,
                                     const std::vector<float>& bias, const ConvAttrs& a) {
  const int64_t n = xs[0], c = xs[1], h = xs[2], wd = xs[3], k = ws[0], cg = ws[1], r = ws[2], s = ws[3];
  const int64_t oh = (h + a.pad_top + a.pad_bottom - a.dilation_h * (r - 1) - 1) / a.stride_h + 1;
  const int64_t ow = (wd + a.pad_left + a.pad_right - a.dilation_w * (s - 1) - 1) / a.stride_w + 1;
  const int64_t kg = k / a.groups;
  std::vector<float> out(static_cast<size_t>(n * k * oh * ow));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < k; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xx = 0; xx < ow; ++xx) {
          double acc = bias.empty() ? 0.0 : bias[o];
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t i = 0; i < r; ++i)
              for (int64_t j = 0; j < s; ++j) {
                const int64_t iy = y * a.stride_h + i * a.dilation_h - a.pad_top;
                const int64_t ix = xx * a.stride_w + j * a.dilation_w - a.pad_left;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                const int64_t ch = (o / kg) * cg + ci;
                acc += static_cast<double>(x[((b * c + ch) * h + iy) * wd + ix]) * w[((o * cg + ci) * r + i) * s + j];
              }
          out[((b * k + o) * oh + y) * ow + xx] = static_cast<float>(acc);
        }
  return out;
}

}  // namespace tessera::graph::test
