// Reads the text form of the loop IR (compiler/ir/printer.h) back into IR.
//
//   ParseContext ctx;
//   ctx.add(A);  ctx.add(B);                       // buffers the text uses
//   Result<Stmt> s = parse_stmt("for i in [0, 4) { B[i] = (A[i] + 1.0f) }", ctx);
//
// print → parse gives a structurally equal tree. Variables have pointer
// identity, so what the text uses but does not bind (free variables,
// parameter buffers, tensors) is looked up by name in the context; loops and
// allocs bind new variables and buffers for their scope. Besides the printed
// form, hand-written text may leave out parentheses (C precedence), write
// float32 constants without the f, and separate statements with ';'.
//
// Types are checked as the IR builders check them, but as errors: any text
// that does not parse or does not type-check is a kParseError whose message
// starts with "line:column:".
#pragma once

#include <string>
#include <unordered_map>

#include "base/status.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/stmt.h"

namespace tessera {

/// The names a text may use without binding them.
struct ParseContext {
  std::unordered_map<std::string, Var> vars;
  std::unordered_map<std::string, Buffer> buffers;
  std::unordered_map<std::string, Tensor> tensors;

  /// Adds under the node's own name.
  void add(const Var& v) { vars[v.name()] = v; }
  void add(const Buffer& b) { buffers[b->name] = b; }
  void add(const Tensor& t) { tensors[t->name] = t; }
  /// Adds everything `printer` named outside a loop or Allocate, under the
  /// names it printed them with.
  void add_free_names(const IRPrinter& printer);

  /// The free variables, buffers and tensors of `s` (or `e`) under the names
  /// IRPrinter prints them with: the context to read `to_string(s)` back.
  static ParseContext of(const Stmt& s);
  static ParseContext of(const Expr& e);
  /// The parameters of `f` under their printed names.
  static ParseContext of(const PrimFunc& f);
};

/// Parses one expression (the whole text).
Result<Expr> parse_expr(const std::string& text, const ParseContext& context = {});
/// Parses a sequence of statements (the whole text); one statement is
/// returned as itself, several as a Seq.
Result<Stmt> parse_stmt(const std::string& text, const ParseContext& context = {});
/// Parses "func name(A: float32[16], ...) { body }"; the parameters are new
/// global buffers, also visible to the body by name besides `context`.
Result<PrimFunc> parse_func(const std::string& text, const ParseContext& context = {});

}  // namespace tessera
