// Test helpers: random inputs, running a schedule through lower + the
// reference interpreter, and comparing float vectors within a tolerance.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <vector>

#include "base/half.h"
#include "compiler/codegen/interpreter.h"
#include "compiler/lower/lower.h"
#include "compiler/schedule/state.h"
#include "compiler/te/compute_dag.h"

namespace tessera::test {

/// Uniform floats in [lo, hi) from a fixed seed.
inline std::vector<float> random_data(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

inline size_t num_elements(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

/// Random data in [lo, hi) for every placeholder argument of `dag` (seed +
/// position), one float slot an element; a bfloat16 tensor's elements are
/// those values rounded, at the start of its slots (2 bytes each).
inline std::vector<std::vector<float>> random_inputs(const ComputeDAG& dag, uint32_t seed = 7, float lo = -1.0f,
                                                     float hi = 1.0f) {
  std::vector<std::vector<float>> inputs;
  for (const Tensor& t : dag.args()) {
    if (!is_placeholder(t)) continue;
    std::vector<float> values = random_data(num_elements(t->shape), seed + inputs.size(), lo, hi);
    if (t->dtype == DType::bf16()) {
      std::vector<float> slots(values.size(), 0.0f);
      auto* halves = reinterpret_cast<uint16_t*>(slots.data());
      for (size_t i = 0; i < values.size(); ++i) halves[i] = float_to_bfloat16(values[i]);
      values = std::move(slots);
    }
    inputs.push_back(std::move(values));
  }
  return inputs;
}

/// Input `t`'s data as `state` stores it: packed where the schedule packs it
/// (compiler/schedule/layout.h), else as it is.
inline std::vector<float> stored_input(const State& state, const Tensor& t, std::vector<float> data) {
  const std::optional<PackedLayout>& layout = state.stage(state.stage_index(t)).layout;
  if (!layout) return data;
  std::vector<float> packed(num_elements(packed_shape(t->shape, *layout)));
  pack_elements(data.data(), packed.data(), t->shape, sizeof(float), *layout);
  return packed;
}

/// Lowers `state` and interprets it: `inputs` feed the placeholder args in
/// order (logical layout: packed here where the schedule packs them); returns the (single) computed arg, which starts
/// as NaN so that an element the kernel never writes shows up.
inline Result<std::vector<float>> run(const State& state, const std::vector<std::vector<float>>& inputs,
                                      const InterpretOptions& options = {}) {
  TESSERA_ASSIGN_OR_RETURN(PrimFunc f, lower(state, "kernel"));
  std::vector<std::vector<float>> buffers;
  std::vector<void*> ptrs;
  size_t next_input = 0, output = 0;
  buffers.reserve(state.dag().args().size());
  for (const Tensor& t : state.dag().args()) {
    if (is_placeholder(t)) {
      if (next_input >= inputs.size()) return Status(ErrorCode::kInvalidArgument, "too few inputs");
      buffers.push_back(inputs[next_input++]);
      if (buffers.back().size() != num_elements(t->shape))
        return Status(ErrorCode::kInvalidArgument, "input " + t->name + " has the wrong size");
      buffers.back() = stored_input(state, t, std::move(buffers.back()));
    } else {
      output = buffers.size();
      buffers.emplace_back(num_elements(t->shape), std::numeric_limits<float>::quiet_NaN());
    }
    ptrs.push_back(buffers.back().data());
  }
  TESSERA_RETURN_IF_ERROR(interpret(f, ptrs, options));
  return buffers[output];
}

/// Runs the default schedule (no steps) of the DAG of `args`.
inline Result<std::vector<float>> run_default(const std::vector<Tensor>& args,
                                              const std::vector<std::vector<float>>& inputs) {
  TESSERA_ASSIGN_OR_RETURN(ComputeDAG dag, ComputeDAG::make(args));
  return run(State(dag), inputs);
}

/// |got - want| <= atol + rtol * |want| for every element (NaN never matches).
inline ::testing::AssertionResult all_close(const std::vector<float>& got, const std::vector<double>& want, double rtol,
                                            double atol) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  int bad = 0;
  std::ostringstream msg;
  for (size_t i = 0; i < got.size(); ++i) {
    const double diff = std::fabs(static_cast<double>(got[i]) - want[i]);
    const bool ok = (std::isinf(want[i]) && got[i] == want[i]) || diff <= atol + rtol * std::fabs(want[i]);
    if (!ok && bad++ < 5) msg << " [" << i << "] got " << got[i] << " want " << want[i] << ";";
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << got.size() << " elements differ:" << msg.str();
}

inline ::testing::AssertionResult all_close(const std::vector<float>& got, const std::vector<float>& want, double rtol,
                                            double atol) {
  return all_close(got, std::vector<double>(want.begin(), want.end()), rtol, atol);
}

/// Relative tolerance for float32 sums of a few hundred terms, and the
/// absolute floor for results near zero.
inline constexpr double kSumRtol = 1e-4, kSumAtol = 1e-5;

}  // namespace tessera::test
