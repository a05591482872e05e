// Text form of the IR: reads like the loop nest, is what tests compare, and
// parses back (compiler/ir/parser.h) into a structurally equal tree.
//
//   alloc C.local: float32[4, 16] local
//   parallel i.0 in [0, 16) {
//     for k in [0, 64) {
//       C.local[ramp((i.1*16), 1, 16)] = (C.local[ramp((i.1*16), 1, 16)] + x16(A[((i.0*64) + k)]))
//     }
//   }
//
// Binary operators print fully parenthesized; constants other than int64,
// float32 and bool carry their type (int32(5), 1.5float64); float32 constants
// end in f. An Allocate or Attr covers the statements after it up to the end
// of the enclosing block, and is printed with braces when it does not.
//
// Names: without `canonical`, every variable, buffer and tensor prints as its
// own name made unambiguous: characters other than letters, digits, '_' and
// '.' become '_', keywords get a trailing '_', and a second node with a name
// already in use gets a suffix (i_1). Loop variables and allocated buffers are
// named per scope, so two sibling loops over distinct `i` both print `i`.
// With `canonical`, names are v0, v1, t0, b0 ... in order of first appearance
// and expressions print exactly as the workload keys of compiler/te hash them.
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "compiler/ir/stmt.h"

namespace tessera {

/// Prints expressions and statements; one printer keeps the names it gave.
class IRPrinter {
 public:
  explicit IRPrinter(bool canonical = false) : canonical_(canonical) {}
  std::string print(const Expr& e);
  std::string print(const Stmt& s);
  /// The name a var/tensor/buffer prints as outside any loop or Allocate.
  std::string name_of(const VarNode* v);
  std::string name_of(const TensorNode* t);
  std::string name_of(const BufferNode* b);

  /// What was named outside any binder, with the printed names, in order of
  /// first appearance: what a parser must be told to read the text back.
  struct FreeNames {
    std::vector<std::pair<std::string, Var>> vars;
    std::vector<std::pair<std::string, Buffer>> buffers;
    std::vector<std::pair<std::string, Tensor>> tensors;
  };
  const FreeNames& free_names() const { return free_; }

 private:
  void expr(const Expr& e, std::string& out);
  void binary(const Expr& e, std::string& out);
  void memory(const Expr& e, std::string& out);
  /// " if P" after a predicated access's index; nothing without one.
  void predicate(const Expr& p, std::string& out);
  void stmt(const Stmt& s, int indent, std::string& out, bool braced_scope);
  void name_free_objects(const Stmt& s);
  std::string global_name(const void* node, const std::string& name, char prefix, int& counter);
  std::string fresh(const std::string& name) const;
  std::string lookup(const void* node, const std::string& name, char prefix, int& counter);
  void bind(const void* node, const std::string& name);
  void unbind(const void* node);

  bool canonical_;
  std::unordered_map<const void*, std::string> names_;               // free objects
  std::unordered_map<const void*, std::vector<std::string>> bound_;  // loop vars, allocated buffers
  std::unordered_set<std::string> taken_;                            // names of free objects
  std::unordered_map<std::string, int> in_scope_;                    // names of enclosing binders
  FreeNames free_;
  int next_var_ = 0, next_tensor_ = 0, next_buffer_ = 0;
};

std::string to_string(const Expr& e);
std::string to_string(const Stmt& s);
/// "func name(A: float32[1024, 1024], ...) {\n  body\n}\n".
std::string to_string(const PrimFunc& f);

/// "float32[4, 16]": a buffer's element type and shape.
std::string buffer_type_string(const BufferNode* b);

}  // namespace tessera
