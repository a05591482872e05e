// Builds a schedule with LLVM and runs it natively, for tests that compare
// compiled kernels with the reference interpreter.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "compiler/codegen/build.h"
#include "compiler/codegen/llvm_target.h"
#include "runtime/module.h"
#include "runtime/thread_pool.h"
#include "tests/compiler/ops/op_test_util.h"

namespace tessera::test {

/// Runs `state`'s kernel on `inputs` (the placeholder args in order, in
/// their logical layout: packed here where the schedule packs them) on
/// `pool`; the output starts as NaN so an element never written shows up.
inline Result<std::vector<float>> run_native(const State& state, const std::vector<std::vector<float>>& inputs,
                                             runtime::ThreadPool& pool) {
  TESSERA_ASSIGN_OR_RETURN(BuiltLibrary lib, build(state, host_target(), "kernel"));
  TESSERA_ASSIGN_OR_RETURN(runtime::Module mod, runtime::Module::load_from_bytes(lib.bytes, "/tmp"));
  TESSERA_ASSIGN_OR_RETURN(TesseraKernelFn fn, mod.get_kernel("kernel"));
  std::vector<std::vector<float>> buffers;
  std::vector<void*> args;
  size_t next = 0, output = 0;
  buffers.reserve(state.dag().args().size());
  for (const Tensor& t : state.dag().args()) {
    if (is_placeholder(t)) {
      if (next >= inputs.size()) return Status(ErrorCode::kInvalidArgument, "too few inputs");
      buffers.push_back(stored_input(state, t, inputs[next++]));
    } else {
      output = buffers.size();
      buffers.emplace_back(num_elements(t->shape), std::numeric_limits<float>::quiet_NaN());
    }
    args.push_back(buffers.back().data());
  }
  runtime::ParallelScope scope(&pool);
  int32_t status = fn(args.data());
  if (status != 0) return Status(ErrorCode::kRuntimeError, "kernel returned " + std::to_string(status));
  return buffers[output];
}

}  // namespace tessera::test
