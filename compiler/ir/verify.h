// The IR verifier: checks the invariants every pass of lowering must keep,
// so that a pass that breaks one is named at once rather than by a wrong
// kernel later. Lowering runs it between passes in tests (LowerOptions).
#pragma once

#include "base/status.h"
#include "compiler/ir/stmt.h"

namespace tessera {

/// How far lowering has gone, i.e. which pre-lowering nodes may remain.
enum class IrStage : uint8_t {
  kLoopNests,  ///< loop nests built: reads of tensors (TensorRead) may remain
  kFlat,       ///< storage flattened: only loads and stores of buffers
};

/// What verify() expects of the IR.
struct VerifyOptions {
  IrStage stage = IrStage::kFlat;
};

/// Checks that in `func`:
///  - loops are well formed: min and extent are scalar index expressions
///    (constants for vectorized and unrolled loops, and never negative), and
///    no loop rebinds a variable of an enclosing loop;
///  - every variable is bound by an enclosing loop;
///  - every buffer loaded or stored is a parameter or inside its Allocate, no
///    buffer is allocated twice in a nest, and parameters are never allocated;
///  - stores write values of their buffer's element type with integer indices,
///    and branch conditions are bool;
///  - no Reduce is left, and at IrStage::kFlat no TensorRead either.
/// Returns kInternal with a message naming the first violation and where it is.
Status verify(const PrimFunc& func, const VerifyOptions& options = {});

}  // namespace tessera
