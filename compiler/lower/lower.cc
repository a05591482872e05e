#include "compiler/lower/lower.h"

#include "compiler/lower/schedule_ops.h"
#include "compiler/lower/simplify.h"
#include "compiler/lower/unroll_loops.h"
#include "compiler/lower/vectorize_loops.h"

namespace tessera {

Result<PrimFunc> lower(const State& state, const std::string& name) {
  TESSERA_ASSIGN_OR_RETURN(PrimFunc func, schedule_to_loops(state, name));
  Stmt body = simplify(func.body);
  body = vectorize_loops(body);
  // Unrolling comes last, without a simplify after it: the copies' constant
  // arithmetic is folded as they are made, LLVM folds the rest, and
  // simplifying hundreds of unrolled statements cost three quarters of the
  // lowering time with no change to the generated code.
  func.body = unroll_loops(body);
  return func;
}

}  // namespace tessera
