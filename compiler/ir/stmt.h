// Statements of the loop IR, and the PrimFunc that a kernel is built from.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/expr.h"

namespace tessera {

#define TESSERA_STMT_KINDS(X) \
  X(Store)                    \
  X(For)                      \
  X(Seq)                      \
  X(IfThenElse)               \
  X(Allocate)                 \
  X(Attr)

enum class StmtKind : uint8_t {
#define TESSERA_X(name) k##name,
  TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
};

struct StmtNode : Object {
  explicit StmtNode(StmtKind k) : kind(k) {}
  const StmtKind kind;
};

class Stmt : public Ref<const StmtNode> {
 public:
  Stmt() = default;
  explicit Stmt(Ref<const StmtNode> r) : Ref<const StmtNode>(std::move(r)) {}
  StmtKind kind() const { return get()->kind; }
  template <typename T>
  const T* as() const {
    return (get() && get()->kind == T::kKind) ? static_cast<const T*>(get()) : nullptr;
  }
};

/// buffer[index] = value; a vector store when index is a vector.
/// buffer[index] = value, or, with a predicate (bool, as many lanes as the
/// index), only the lanes where it holds.
struct StoreNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kStore;
  StoreNode(Buffer b, Expr v, Expr i, Expr p = Expr())
      : StmtNode(kKind), buffer(std::move(b)), value(std::move(v)), index(std::move(i)), predicate(std::move(p)) {}
  const Buffer buffer;
  const Expr value, index;
  const Expr predicate;  ///< undefined: every lane
};
Stmt make_store(Buffer buffer, Expr value, Expr index, Expr predicate = Expr());

/// How a loop runs. A kParallel loop's iterations must be independent; a
/// kVectorized or kUnrolled loop must have a constant extent. A kTensorized
/// loop heads a nest of three loops (any order: rows, columns and the
/// reduction over words, constant extents) around one store `C[c] = C[c] +
/// dot(A[a], B[b])` of an int8 or bfloat16 product: the code generator runs
/// it as tile products on the target's matrix unit (x86 AMX) and refuses it on
/// a target without one. Its meaning is the serial nest's, which is how the
/// interpreter runs it; the lowering leaves the loops inside as they are.
enum class LoopKind : uint8_t { kSerial, kParallel, kVectorized, kUnrolled, kTensorized };
const char* loop_kind_name(LoopKind kind);

/// for (var = min; var < min + extent; ++var) body.
struct ForNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kFor;
  ForNode(Var v, Expr m, Expr e, LoopKind k, Stmt b)
      : StmtNode(kKind), var(std::move(v)), min(std::move(m)), extent(std::move(e)), loop_kind(k), body(std::move(b)) {}
  const Var var;
  const Expr min, extent;
  const LoopKind loop_kind;
  const Stmt body;
};
Stmt make_for(Var var, Expr min, Expr extent, LoopKind kind, Stmt body);

/// Statements in order.
struct SeqNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kSeq;
  explicit SeqNode(std::vector<Stmt> s) : StmtNode(kKind), stmts(std::move(s)) {}
  const std::vector<Stmt> stmts;
};
/// A sequence, flattened; a single statement is returned as is.
Stmt make_seq(std::vector<Stmt> stmts);

struct IfThenElseNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kIfThenElse;
  IfThenElseNode(Expr c, Stmt t, Stmt e)
      : StmtNode(kKind), cond(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
  const Expr cond;
  const Stmt then_case, else_case;  // else_case may be undefined
};
Stmt make_if(Expr cond, Stmt then_case, Stmt else_case = Stmt());

/// Storage for `buffer` (local or workspace scope) live during body.
struct AllocateNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kAllocate;
  AllocateNode(Buffer b, Stmt s) : StmtNode(kKind), buffer(std::move(b)), body(std::move(s)) {}
  const Buffer buffer;
  const Stmt body;
};
Stmt make_allocate(Buffer buffer, Stmt body);

/// Hints attached to a statement.
enum class AttrKind : uint8_t {
  kAutoUnrollMaxStep,  ///< unroll inner constant loops whose total steps <= value
};
const char* attr_kind_name(AttrKind kind);

struct AttrNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kAttr;
  AttrNode(AttrKind k, int64_t v, Stmt b) : StmtNode(kKind), attr(k), value(v), body(std::move(b)) {}
  const AttrKind attr;
  const int64_t value;
  const Stmt body;
};
Stmt make_attr(AttrKind kind, int64_t value, Stmt body);

/// A kernel: a name, its buffer parameters in ABI order, and a body.
struct PrimFunc {
  std::string name;
  std::vector<Buffer> params;
  Stmt body;
};

}  // namespace tessera
