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
  body = unroll_loops(body);
  func.body = simplify(body);
  return func;
}

}  // namespace tessera
