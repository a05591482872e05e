// Structural equality and hashing of IR trees.
//
// Two trees are equal when they have the same kinds, types, constants and
// shape, and the same variables and buffers: a free variable or a parameter
// buffer is itself (pointer identity), while a variable bound by a loop and a
// buffer bound by an Allocate are matched by position, so that two loops
// `for i ...` and `for j ...` with equal bodies (up to i/j) are equal. Float
// constants are compared at their own precision (two float32 constants are
// equal when they round to the same float). Names never matter.
//
// structural_hash is consistent with structural_equal: equal trees hash alike.
#pragma once

#include <cstddef>

#include "compiler/ir/stmt.h"

namespace tessera {

/// Structural equality of expressions (variables by identity).
bool structural_equal(const Expr& a, const Expr& b);
/// Structural equality of statements (bound variables and buffers by position).
bool structural_equal(const Stmt& a, const Stmt& b);
/// Equal parameter lists (dtype, shape, scope, by position) and equal bodies with
/// the parameters matched by position. Function and parameter names are ignored.
bool structural_equal(const PrimFunc& a, const PrimFunc& b);

/// Hash consistent with structural_equal.
size_t structural_hash(const Expr& e);
size_t structural_hash(const Stmt& s);

}  // namespace tessera
