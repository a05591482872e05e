// A reference interpreter of the loop IR: runs a lowered PrimFunc directly
// over raw buffers, so tests can check schedules and the code generator
// against it. It favours clarity over speed.
//
// Semantics it fixes (the code generator must agree):
//  - Arithmetic on a float32/float16/bfloat16 value rounds its result to that
//    type; integer arithmetic wraps to the type's width; integer Div/Mod are
//    floor division and modulo (division by zero is a runtime error).
//  - Float-to-integer casts truncate toward zero (saturating, NaN -> 0).
//  - round() rounds half to even (as ONNX Round and nearbyint); float
//    min(a, b) is a < b ? a : b and max(a, b) is a > b ? a : b.
//  - Select evaluates, lane by lane, only the branch that the condition
//    picks: a load in the untaken branch is never performed. Padding stages
//    rely on this (select(inside, X[i - pad], 0) with i - pad out of range).
//  - Loops of every kind run serially in order (see InterpretOptions); Allocate gives fresh,
//    zero-initialised storage each time it runs.
//  - A load or store outside [0, num_elements) of its buffer is a
//    kRuntimeError naming the buffer and the index, never a crash.
#pragma once

#include <vector>

#include "base/status.h"
#include "compiler/ir/stmt.h"

namespace tessera {

/// Knobs for tests.
struct InterpretOptions {
  /// Run kParallel loops from the last iteration to the first: a kernel whose
  /// parallel iterations are not independent then (usually) gives a
  /// different answer than the serial order.
  bool reverse_parallel_loops = false;
};

/// Executes `f` over `args`: args[i] is the data of f.params[i], laid out
/// row-major with elements of params[i]->dtype. Returns kInvalidArgument for a
/// wrong number of arguments or a null pointer, kRuntimeError for an
/// out-of-bounds access or an integer division by zero, and kInternal for IR
/// that is not lowered (TensorRead, Reduce, unbound variables).
Status interpret(const PrimFunc& f, const std::vector<void*>& args, const InterpretOptions& options = {});

}  // namespace tessera
