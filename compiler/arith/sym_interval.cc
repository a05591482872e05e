#include "compiler/arith/sym_interval.h"

#include "compiler/ir/op.h"
#include "compiler/ir/util.h"

namespace tessera::arith {
namespace {

// [x.lo * c, x.hi * c], ends swapped for a negative c.
SymInterval scaled(const SymInterval& x, int64_t c) {
  if (c >= 0) return {x.lo * c, x.hi * c};
  return {x.hi * c, x.lo * c};
}

std::optional<SymInterval> eval_binary(const BinaryNode* b, const RelaxMap& relax) {
  int64_t c;
  switch (b->kind) {
    case ExprKind::kMul:
      if (is_const_int(b->b, &c)) {
        if (auto x = eval_interval(b->a, relax)) return scaled(*x, c);
      }
      if (is_const_int(b->a, &c)) {
        if (auto x = eval_interval(b->b, relax)) return scaled(*x, c);
      }
      return std::nullopt;
    case ExprKind::kDiv:
      if (!is_const_int(b->b, &c) || c <= 0) return std::nullopt;
      if (auto x = eval_interval(b->a, relax)) return SymInterval{x->lo / c, x->hi / c};
      return std::nullopt;
    case ExprKind::kMod:
      if (!is_const_int(b->b, &c) || c <= 0) return std::nullopt;
      return SymInterval{make_int(0), make_int(c - 1)};
    case ExprKind::kAdd:
    case ExprKind::kSub:
    case ExprKind::kMin:
    case ExprKind::kMax: break;
    default: return std::nullopt;
  }
  auto x = eval_interval(b->a, relax);
  if (!x) return std::nullopt;
  auto y = eval_interval(b->b, relax);
  if (!y) return std::nullopt;
  switch (b->kind) {
    case ExprKind::kAdd: return SymInterval{x->lo + y->lo, x->hi + y->hi};
    case ExprKind::kSub: return SymInterval{x->lo - y->hi, x->hi - y->lo};
    case ExprKind::kMin: return SymInterval{tessera::min(x->lo, y->lo), tessera::min(x->hi, y->hi)};
    default: return SymInterval{tessera::max(x->lo, y->lo), tessera::max(x->hi, y->hi)};
  }
}

}  // namespace

std::optional<SymInterval> eval_interval(const Expr& e, const RelaxMap& relax) {
  if (!uses_any_var(e, [&](const VarNode* v) { return relax.count(v) > 0; })) return SymInterval{e, e};
  if (const auto* v = e.as<VarNode>()) return relax.at(v);
  if (is_binary(e.kind())) return eval_binary(static_cast<const BinaryNode*>(e.get()), relax);
  if (const auto* s = e.as<SelectNode>()) {
    auto x = eval_interval(s->true_value, relax);
    if (!x) return std::nullopt;
    auto y = eval_interval(s->false_value, relax);
    if (!y) return std::nullopt;
    return SymInterval{tessera::min(x->lo, y->lo), tessera::max(x->hi, y->hi)};
  }
  return std::nullopt;
}

}  // namespace tessera::arith
