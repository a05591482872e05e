// Text form of the IR: reads like the loop nest, and is what tests compare.
#pragma once

#include <string>
#include <unordered_map>

#include "compiler/ir/stmt.h"

namespace tessera {

/// Prints expressions and statements. With `canonical`, variables, tensors
/// and buffers print as v0, v1, t0, ... in order of first appearance, so two
/// structurally equal trees print the same whatever their names.
class IRPrinter {
 public:
  explicit IRPrinter(bool canonical = false) : canonical_(canonical) {}
  std::string print(const Expr& e);
  std::string print(const Stmt& s);
  /// The name a var/tensor/buffer prints as (canonical or its own).
  std::string name_of(const VarNode* v);
  std::string name_of(const TensorNode* t);
  std::string name_of(const BufferNode* b);

 private:
  void expr(const Expr& e, std::string& out);
  void stmt(const Stmt& s, int indent, std::string& out);
  bool canonical_;
  std::unordered_map<const void*, std::string> names_;
  int next_var_ = 0, next_tensor_ = 0, next_buffer_ = 0;
};

std::string to_string(const Expr& e);
std::string to_string(const Stmt& s);
/// "func name(A: float32[1024, 1024], ...) { body }".
std::string to_string(const PrimFunc& f);

}  // namespace tessera
