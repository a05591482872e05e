// Small queries and rewrites over the IR used by many passes.
#pragma once

#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "compiler/ir/stmt.h"
#include "compiler/ir/structural.h"  // structural_equal, which used to live here

namespace tessera {

/// Maps variables (by identity) to replacement expressions.
using VarMap = std::unordered_map<const VarNode*, Expr>;

/// e with every variable in `vmap` replaced.
Expr substitute(const Expr& e, const VarMap& vmap);
Stmt substitute(const Stmt& s, const VarMap& vmap);
Expr substitute(const Expr& e, const Var& var, const Expr& value);
Stmt substitute(const Stmt& s, const Var& var, const Expr& value);

/// True when `var` occurs in the tree.
bool uses_var(const Expr& e, const VarNode* var);
bool uses_var(const Stmt& s, const VarNode* var);
/// True when any var for which `pred` holds occurs in e.
bool uses_any_var(const Expr& e, const std::function<bool(const VarNode*)>& pred);

/// Variables read in the tree and not bound by a loop inside it, in order of
/// first appearance.
std::vector<Var> free_vars(const Stmt& s);
/// Buffers loaded or stored in the tree, in order of first appearance.
std::vector<Buffer> buffers_used(const Stmt& s);
/// The index lists of every read of `tensor` in `e`, in visiting order.
std::vector<std::vector<Expr>> reads_of(const Expr& e, const TensorNode* tensor);

}  // namespace tessera
