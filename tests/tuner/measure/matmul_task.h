// A matmul tuning task on this machine, for the measurement tests.
#pragma once

#include <memory>

#include "compiler/codegen/llvm_target.h"
#include "compiler/ir/op.h"
#include "tuner/task.h"

namespace tessera::test {

/// C[m, n] = sum_k A[m, k] B[k, n], for the host, on the "local" device key.
inline tuner::Task matmul_task(int64_t m, int64_t n, int64_t k) {
  Tensor a = placeholder({m, k}, DType::f32(), "A");
  Tensor b = placeholder({k, n}, DType::f32(), "B");
  IterVar r = reduce_axis(k, "k");
  Tensor c = compute(
      {m, n},
      [&](const Vars& i) {
        return sum(read(a, {i[0], r->var}) * read(b, {r->var, i[1]}), {r});
      },
      "C");
  tuner::Task t;
  t.name = "matmul";
  t.dag = std::make_shared<const ComputeDAG>(ComputeDAG::make({a, b, c}).value());
  t.target = host_target();
  t.device_key = "local";
  return t;
}

}  // namespace tessera::test
