// Test helpers of the knob templates: a kernel's buffers, the reference
// interpreter's output of an unscheduled DAG, and a built schedule checked
// against it.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "compiler/codegen/build.h"
#include "compiler/codegen/interpreter.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/lower/lower.h"
#include "compiler/ops/ops.h"
#include "compiler/schedule/layout.h"
#include "runtime/module.h"
#include "runtime/ndarray.h"
#include "runtime/thread_pool.h"

namespace tessera {

// The kernel's arguments (inputs filled at random, outputs zeroed).
struct Buffers {
  std::vector<runtime::NDArray> arrays;
  std::vector<void*> pointers;

  explicit Buffers(const ComputeDAG& dag) {
    uint64_t seed = 1;
    for (const Tensor& t : dag.args()) {
      arrays.push_back(runtime::NDArray::create(t->shape, t->dtype).value());
      if (!dag.is_output(t)) arrays.back().fill_random(seed++);
    }
    for (auto& a : arrays) pointers.push_back(a.raw_data());
  }
  const runtime::NDArray& output() const { return arrays.back(); }

  // Stores the inputs `state` packs in its layouts (compiler/schedule/layout.h).
  void pack_for(const State& state) {
    for (const auto& [arg, layout] : packed_arguments(state)) {
      runtime::NDArray& a = arrays[static_cast<size_t>(arg)];
      runtime::NDArray packed = runtime::NDArray::create(packed_shape(a.shape(), layout), a.dtype()).value();
      pack_elements(a.raw_data(), packed.raw_data(), a.shape(), a.dtype().storage_bytes(), layout);
      a = std::move(packed);
      pointers[static_cast<size_t>(arg)] = a.raw_data();
    }
  }
};

// The output of the unscheduled DAG under the reference interpreter.
inline runtime::NDArray reference(const ops::OpInstance& inst) {
  Buffers b(*inst.dag);
  auto func = lower(State(inst.dag));
  EXPECT_TRUE(func.is_ok()) << func.status().to_string();
  Status st = interpret(*func, b.pointers);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return b.output().copy().value();
}

// Builds `state`, runs it on two threads and compares with `expected`.
inline void expect_matches(const ops::OpInstance& inst, const State& state, const runtime::NDArray& expected,
                           runtime::ThreadPool* pool, const std::string& what) {
  auto lib = build(state, host_target(), "k");
  ASSERT_TRUE(lib.is_ok()) << what << ": " << lib.status().to_string();
  auto mod = runtime::Module::load_from_bytes(lib->bytes, "/tmp");
  ASSERT_TRUE(mod.is_ok()) << mod.status().to_string();
  auto fn = mod->get_kernel("k");
  ASSERT_TRUE(fn.is_ok()) << fn.status().to_string();
  Buffers b(*inst.dag);
  b.pack_for(state);
  {
    runtime::ParallelScope scope(pool);
    ASSERT_EQ((*fn)(b.pointers.data()), 0) << what;
  }
  const float* got = b.output().data<float>();
  const float* want = expected.data<float>();
  for (int64_t i = 0; i < expected.numel(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << what << " at element " << i;
}

}  // namespace tessera
