// Unrolling: kUnrolled loops become straight-line code; under an
// auto_unroll_max_step attribute, constant serial loops whose total executed
// statements stay within the limit are unrolled too.
#pragma once

#include "compiler/ir/stmt.h"

namespace tessera {

Stmt unroll_loops(const Stmt& s);

}  // namespace tessera
