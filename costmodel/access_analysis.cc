#include "costmodel/access_analysis.h"

#include <algorithm>
#include <cmath>

#include "compiler/arith/linear.h"
#include "costmodel/features.h"

namespace tessera::costmodel {
namespace {

// Accumulates scale * d(index)/d(var) into coefs. Loop nests are shallow
// (rarely more than a dozen loops), so a linear search of the variables beats
// a hash map here.
class IndexRates {
 public:
  IndexRates(const std::vector<const VarNode*>& vars, int lane_slot, std::vector<double>* coefs)
      : vars_(vars), lane_slot_(lane_slot), coefs_(*coefs) {}

  bool exact() const { return exact_; }

  // The affine skeleton (+, -, * by a constant) is arith's; the atoms it
  // leaves are approximated here.
  void add(const Expr& e, double scale) {
    arith::visit_affine(e, scale, [this](const Expr& atom, double s) { add_atom(atom, s); });
  }

 private:
  void add_atom(const Expr& e, double scale) {
    switch (e.kind()) {
      case ExprKind::kFloatImm: return;
      case ExprKind::kVar: {
        const auto* v = e.as<VarNode>();
        for (size_t i = vars_.size(); i-- > 0;) {
          if (vars_[i] == v) {
            coefs_[i] += scale;
            return;
          }
        }
        return;  // a variable bound outside the nest is a constant here
      }
      case ExprKind::kMul: {
        // A product of two variables: approximated by their sum.
        const auto* b = static_cast<const BinaryNode*>(e.get());
        exact_ = false;
        add(b->a, scale);
        add(b->b, scale);
        return;
      }
      case ExprKind::kDiv:
      case ExprKind::kMod: {
        // Fused loops index as f / n and f % n: the quotient moves 1/n per
        // step, the remainder moves like f (until it wraps).
        const auto* b = static_cast<const BinaryNode*>(e.get());
        int64_t c = 0;
        exact_ = false;
        if (e.kind() == ExprKind::kDiv && is_const_int(b->b, &c) && c != 0) {
          return add(b->a, scale / static_cast<double>(c));
        }
        return add(b->a, scale);
      }
      case ExprKind::kMin:
      case ExprKind::kMax: {
        exact_ = false;
        return add(static_cast<const BinaryNode*>(e.get())->a, scale);
      }
      case ExprKind::kSelect: exact_ = false; return add(e.as<SelectNode>()->true_value, scale);
      case ExprKind::kCast: return add(e.as<CastNode>()->value, scale);
      case ExprKind::kRamp: {
        const auto* r = e.as<RampNode>();
        add(r->base, scale);
        int64_t stride = 0;
        if (lane_slot_ >= 0 && is_const_int(r->stride, &stride)) {
          coefs_[lane_slot_] += scale * static_cast<double>(stride);
        } else {
          exact_ = false;
        }
        return;
      }
      case ExprKind::kBroadcast: return add(e.as<BroadcastNode>()->value, scale);
      default:
        // Loads (indirect indices), calls, logic: not an affine index.
        exact_ = false;
        return;
    }
  }

  const std::vector<const VarNode*>& vars_;
  int lane_slot_;
  std::vector<double>& coefs_;
  bool exact_ = true;
};

}  // namespace

bool linear_coefficients(const Expr& index, const std::vector<const VarNode*>& vars, int lane_slot,
                         std::vector<double>* coefs) {
  coefs->assign(vars.size() + (lane_slot >= 0 ? 1 : 0), 0.0);
  IndexRates form(vars, lane_slot, coefs);
  form.add(index, 1.0);
  return form.exact();
}

Footprint footprint(const std::vector<double>& coefs, const std::vector<int64_t>& extents,
                    const std::vector<int>& loops, int elem_bytes, double cap_elements) {
  // At most a couple of dozen loops: an insertion sort on a small array.
  int order[64];
  int n = 0;
  for (int i : loops) {
    if (extents[i] <= 1 || coefs[i] == 0.0 || n == 64) continue;
    int j = n++;
    const double a = std::fabs(coefs[i]);
    while (j > 0 && std::fabs(coefs[order[j - 1]]) > a) {
      order[j] = order[j - 1];
      --j;
    }
    order[j] = i;
  }
  const double line = static_cast<double>(kCacheLineBytes);
  const double eb = static_cast<double>(elem_bytes);
  Footprint f;
  double span = 1;  // elements between the lowest and highest touched, inclusive
  double span_bytes = eb;
  for (int k = 0; k < n; ++k) {
    const double a = std::fabs(coefs[order[k]]);
    const double e = static_cast<double>(extents[order[k]]);
    span += a * (e - 1);
    span_bytes += a * eb * (e - 1);
    // Disjoint copies multiply the count; overlapping ones cannot exceed the span.
    f.elements = std::min(f.elements * e, std::floor(span));
    f.lines = std::min(f.lines * e, std::ceil(span_bytes / line));
  }
  f.elements = std::max(1.0, std::min(f.elements, cap_elements));
  f.lines = std::max(1.0, std::min(f.lines, std::ceil(cap_elements * eb / line)));
  return f;
}

}  // namespace tessera::costmodel
