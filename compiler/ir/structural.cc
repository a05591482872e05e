#include "compiler/ir/structural.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <unordered_map>

namespace tessera {
namespace {

// A float constant at the precision of its type: float64 keeps its double,
// narrower types compare as the float they round to (the interpreter and the
// code generator round them that way before use).
double at_precision(const FloatImmNode* n) {
  return n->dtype.bits == 64 ? n->value : static_cast<double>(static_cast<float>(n->value));
}

bool same_float(const FloatImmNode* x, const FloatImmNode* y) {
  double a = at_precision(x), b = at_precision(y);
  return a == b || (std::isnan(a) && std::isnan(b));
}

bool same_buffer_type(const BufferNode* a, const BufferNode* b) {
  return a->dtype == b->dtype && a->shape == b->shape && a->scope == b->scope;
}

class Equal {
 public:
  bool expr(const Expr& a, const Expr& b);
  bool stmt(const Stmt& a, const Stmt& b);
  /// Matches `b` to `a` until the returned scope ends.
  void bind(const Object* a, const Object* b) { bound_[a] = b; }

 private:
  bool same_object(const Object* a, const Object* b) const {
    auto it = bound_.find(a);
    return it != bound_.end() ? it->second == b : a == b;
  }
  bool exprs(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!expr(a[i], b[i])) return false;
    return true;
  }
  bool leaf_or_memory(const Expr& a, const Expr& b);
  bool bound_stmt(const Object* a, const Object* b, const Stmt& body_a, const Stmt& body_b) {
    auto it = bound_.find(a);
    const Object* saved = it == bound_.end() ? nullptr : it->second;
    bound_[a] = b;
    bool same = stmt(body_a, body_b);
    if (saved)
      bound_[a] = saved;
    else
      bound_.erase(a);
    return same;
  }

  std::unordered_map<const Object*, const Object*> bound_;
};

bool Equal::leaf_or_memory(const Expr& a, const Expr& b) {
  switch (a.kind()) {
    case ExprKind::kIntImm: return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value;
    case ExprKind::kFloatImm: return same_float(a.as<FloatImmNode>(), b.as<FloatImmNode>());
    case ExprKind::kVar: return same_object(a.get(), b.get());
    case ExprKind::kLoad: {
      const auto *x = a.as<LoadNode>(), *y = b.as<LoadNode>();
      return same_object(x->buffer.get(), y->buffer.get()) && expr(x->index, y->index) &&
             expr(x->predicate, y->predicate);
    }
    case ExprKind::kTensorRead: {
      const auto *x = a.as<TensorReadNode>(), *y = b.as<TensorReadNode>();
      return x->tensor == y->tensor && exprs(x->indices, y->indices);
    }
    case ExprKind::kReduce: {
      const auto *x = a.as<ReduceNode>(), *y = b.as<ReduceNode>();
      return x->op == y->op && x->axes == y->axes && expr(x->source, y->source);
    }
    default: return false;
  }
}

bool Equal::expr(const Expr& a, const Expr& b) {
  if (a.same_as(b) && bound_.empty()) return true;
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
  switch (a.kind()) {
    case ExprKind::kAdd:
    case ExprKind::kSub:
    case ExprKind::kMul:
    case ExprKind::kDiv:
    case ExprKind::kMod:
    case ExprKind::kMin:
    case ExprKind::kMax:
    case ExprKind::kEQ:
    case ExprKind::kNE:
    case ExprKind::kLT:
    case ExprKind::kLE:
    case ExprKind::kGT:
    case ExprKind::kGE:
    case ExprKind::kAnd:
    case ExprKind::kOr: {
      const auto* x = static_cast<const BinaryNode*>(a.get());
      const auto* y = static_cast<const BinaryNode*>(b.get());
      return expr(x->a, y->a) && expr(x->b, y->b);
    }
    case ExprKind::kNot: return expr(a.as<NotNode>()->a, b.as<NotNode>()->a);
    case ExprKind::kSelect: {
      const auto *x = a.as<SelectNode>(), *y = b.as<SelectNode>();
      return expr(x->cond, y->cond) && expr(x->true_value, y->true_value) && expr(x->false_value, y->false_value);
    }
    case ExprKind::kCast: return expr(a.as<CastNode>()->value, b.as<CastNode>()->value);
    case ExprKind::kCall: {
      const auto *x = a.as<CallNode>(), *y = b.as<CallNode>();
      return x->op == y->op && exprs(x->args, y->args);
    }
    case ExprKind::kRamp: {
      const auto *x = a.as<RampNode>(), *y = b.as<RampNode>();
      return x->lanes == y->lanes && expr(x->base, y->base) && expr(x->stride, y->stride);
    }
    case ExprKind::kBroadcast: return expr(a.as<BroadcastNode>()->value, b.as<BroadcastNode>()->value);
    case ExprKind::kIntImm:
    case ExprKind::kFloatImm:
    case ExprKind::kVar:
    case ExprKind::kLoad:
    case ExprKind::kTensorRead:
    case ExprKind::kReduce: return leaf_or_memory(a, b);
  }
  return false;
}

bool Equal::stmt(const Stmt& a, const Stmt& b) {
  if (a.same_as(b) && bound_.empty()) return true;
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case StmtKind::kStore: {
      const auto *x = a.as<StoreNode>(), *y = b.as<StoreNode>();
      return same_object(x->buffer.get(), y->buffer.get()) && expr(x->index, y->index) && expr(x->value, y->value) &&
             expr(x->predicate, y->predicate);
    }
    case StmtKind::kFor: {
      const auto *x = a.as<ForNode>(), *y = b.as<ForNode>();
      return x->loop_kind == y->loop_kind && x->var.dtype() == y->var.dtype() && expr(x->min, y->min) &&
             expr(x->extent, y->extent) && bound_stmt(x->var.get(), y->var.get(), x->body, y->body);
    }
    case StmtKind::kSeq: {
      const auto *x = a.as<SeqNode>(), *y = b.as<SeqNode>();
      if (x->stmts.size() != y->stmts.size()) return false;
      for (size_t i = 0; i < x->stmts.size(); ++i)
        if (!stmt(x->stmts[i], y->stmts[i])) return false;
      return true;
    }
    case StmtKind::kIfThenElse: {
      const auto *x = a.as<IfThenElseNode>(), *y = b.as<IfThenElseNode>();
      return expr(x->cond, y->cond) && stmt(x->then_case, y->then_case) && stmt(x->else_case, y->else_case);
    }
    case StmtKind::kAllocate: {
      const auto *x = a.as<AllocateNode>(), *y = b.as<AllocateNode>();
      return same_buffer_type(x->buffer.get(), y->buffer.get()) &&
             bound_stmt(x->buffer.get(), y->buffer.get(), x->body, y->body);
    }
    case StmtKind::kAttr: {
      const auto *x = a.as<AttrNode>(), *y = b.as<AttrNode>();
      return x->attr == y->attr && x->value == y->value && stmt(x->body, y->body);
    }
  }
  return false;
}

// ---------------------------------------------------------------------------

size_t combine(size_t seed, size_t v) {
  return seed ^ (v + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2));
}

size_t hash_dtype(DType t) {
  return (static_cast<size_t>(t.code) << 24) ^ (static_cast<size_t>(t.bits) << 16) ^ t.lanes;
}

size_t hash_float(const FloatImmNode* n) {
  double v = at_precision(n);
  if (std::isnan(v)) return 0x7ff8;
  if (v == 0) v = 0;  // -0.0 equals 0.0
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return std::hash<uint64_t>()(bits);
}

class Hash {
 public:
  size_t expr(const Expr& e);
  size_t stmt(const Stmt& s);

 private:
  // A bound object hashes as its binding's position; a free one as itself.
  size_t object(const Object* o) const {
    auto it = bound_.find(o);
    return it != bound_.end() ? combine(0xb0, it->second) : std::hash<const void*>()(o);
  }
  size_t bound_body(const Object* o, const Stmt& body) {
    auto it = bound_.find(o);
    const bool shadows = it != bound_.end();
    const size_t saved = shadows ? it->second : 0;
    bound_[o] = next_binding_++;
    size_t h = stmt(body);
    if (shadows)
      bound_[o] = saved;
    else
      bound_.erase(o);
    return h;
  }
  size_t exprs(size_t h, const std::vector<Expr>& list) {
    for (const Expr& e : list) h = combine(h, expr(e));
    return h;
  }

  std::unordered_map<const Object*, size_t> bound_;
  size_t next_binding_ = 0;
};

size_t Hash::expr(const Expr& e) {
  if (!e.defined()) return 0x5eed;
  size_t h = combine(static_cast<size_t>(e.kind()) + 1, hash_dtype(e.dtype()));
  switch (e.kind()) {
    case ExprKind::kIntImm: return combine(h, std::hash<int64_t>()(e.as<IntImmNode>()->value));
    case ExprKind::kFloatImm: return combine(h, hash_float(e.as<FloatImmNode>()));
    case ExprKind::kVar: return combine(h, object(e.get()));
    case ExprKind::kAdd:
    case ExprKind::kSub:
    case ExprKind::kMul:
    case ExprKind::kDiv:
    case ExprKind::kMod:
    case ExprKind::kMin:
    case ExprKind::kMax:
    case ExprKind::kEQ:
    case ExprKind::kNE:
    case ExprKind::kLT:
    case ExprKind::kLE:
    case ExprKind::kGT:
    case ExprKind::kGE:
    case ExprKind::kAnd:
    case ExprKind::kOr: {
      const auto* n = static_cast<const BinaryNode*>(e.get());
      return combine(combine(h, expr(n->a)), expr(n->b));
    }
    case ExprKind::kNot: return combine(h, expr(e.as<NotNode>()->a));
    case ExprKind::kSelect: {
      const auto* n = e.as<SelectNode>();
      return combine(combine(combine(h, expr(n->cond)), expr(n->true_value)), expr(n->false_value));
    }
    case ExprKind::kCast: return combine(h, expr(e.as<CastNode>()->value));
    case ExprKind::kCall: return exprs(combine(h, static_cast<size_t>(e.as<CallNode>()->op)), e.as<CallNode>()->args);
    case ExprKind::kLoad: {
      const auto* n = e.as<LoadNode>();
      return combine(combine(combine(h, object(n->buffer.get())), expr(n->index)), expr(n->predicate));
    }
    case ExprKind::kRamp: {
      const auto* n = e.as<RampNode>();
      return combine(combine(h, expr(n->base)), expr(n->stride));
    }
    case ExprKind::kBroadcast: return combine(h, expr(e.as<BroadcastNode>()->value));
    case ExprKind::kTensorRead: {
      const auto* n = e.as<TensorReadNode>();
      return exprs(combine(h, std::hash<const void*>()(n->tensor.get())), n->indices);
    }
    case ExprKind::kReduce: {
      const auto* n = e.as<ReduceNode>();
      h = combine(combine(h, static_cast<size_t>(n->op)), expr(n->source));
      for (const IterVar& a : n->axes) h = combine(h, std::hash<const void*>()(a.get()));
      return h;
    }
  }
  return h;
}

size_t Hash::stmt(const Stmt& s) {
  if (!s.defined()) return 0x5eed;
  size_t h = 0x1000 + static_cast<size_t>(s.kind());
  switch (s.kind()) {
    case StmtKind::kStore: {
      const auto* n = s.as<StoreNode>();
      return combine(combine(combine(combine(h, object(n->buffer.get())), expr(n->index)), expr(n->value)),
                     expr(n->predicate));
    }
    case StmtKind::kFor: {
      const auto* n = s.as<ForNode>();
      h = combine(combine(h, static_cast<size_t>(n->loop_kind)), hash_dtype(n->var.dtype()));
      h = combine(combine(h, expr(n->min)), expr(n->extent));
      return combine(h, bound_body(n->var.get(), n->body));
    }
    case StmtKind::kSeq:
      for (const Stmt& c : s.as<SeqNode>()->stmts) h = combine(h, stmt(c));
      return h;
    case StmtKind::kIfThenElse: {
      const auto* n = s.as<IfThenElseNode>();
      return combine(combine(combine(h, expr(n->cond)), stmt(n->then_case)), stmt(n->else_case));
    }
    case StmtKind::kAllocate: {
      const auto* n = s.as<AllocateNode>();
      h = combine(h, hash_dtype(n->buffer->dtype));
      for (int64_t d : n->buffer->shape) h = combine(h, std::hash<int64_t>()(d));
      h = combine(h, static_cast<size_t>(n->buffer->scope));
      return combine(h, bound_body(n->buffer.get(), n->body));
    }
    case StmtKind::kAttr: {
      const auto* n = s.as<AttrNode>();
      h = combine(combine(h, static_cast<size_t>(n->attr)), std::hash<int64_t>()(n->value));
      return combine(h, stmt(n->body));
    }
  }
  return h;
}

}  // namespace

bool structural_equal(const Expr& a, const Expr& b) {
  return Equal().expr(a, b);
}
bool structural_equal(const Stmt& a, const Stmt& b) {
  return Equal().stmt(a, b);
}

bool structural_equal(const PrimFunc& a, const PrimFunc& b) {
  if (a.params.size() != b.params.size()) return false;
  Equal eq;
  for (size_t i = 0; i < a.params.size(); ++i) {
    if (!same_buffer_type(a.params[i].get(), b.params[i].get())) return false;
    eq.bind(a.params[i].get(), b.params[i].get());
  }
  return eq.stmt(a.body, b.body);
}

size_t structural_hash(const Expr& e) {
  return Hash().expr(e);
}
size_t structural_hash(const Stmt& s) {
  return Hash().stmt(s);
}

}  // namespace tessera
