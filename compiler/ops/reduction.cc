#include "compiler/ops/reduction.h"

#include <algorithm>
#include <set>

#include "compiler/ir/op.h"
#include "compiler/ops/op_util.h"

namespace tessera::ops {

using detail::check_float;
using detail::check_rank;
using detail::constant;
using detail::invalid;
using detail::shape_str;

namespace {

// Which axes a reduction covers, and the shape it produces.
struct ReducePlan {
  std::vector<bool> reduced;  // per input axis
  std::vector<IterVar> axes;  // the reduce axes, in input order
  std::vector<int64_t> out_shape;
  int64_t count = 1;  // elements reduced into each output
};

Result<ReducePlan> plan_reduce(const std::string& op, const Tensor& x, const std::vector<int>& axes, bool keepdims) {
  TESSERA_RETURN_IF_ERROR(check_rank(op, "X", x, x.defined() ? x->ndim() : 0));
  const int rank = x->ndim();
  ReducePlan plan;
  plan.reduced.assign(rank, axes.empty());
  std::set<int> seen;
  for (int a : axes) {
    TESSERA_ASSIGN_OR_RETURN(int d, detail::normalize_axis(op, a, rank));
    if (!seen.insert(d).second) return invalid(op, "axis " + std::to_string(a) + " is listed twice");
    plan.reduced[d] = true;
  }
  static const char* kNames[] = {"r0", "r1", "r2", "r3", "r4", "r5"};
  for (int d = 0; d < rank; ++d) {
    if (plan.reduced[d]) {
      plan.axes.push_back(reduce_axis(x->shape[d], d < 6 ? kNames[d] : "r" + std::to_string(d)));
      plan.count *= x->shape[d];
      if (keepdims) plan.out_shape.push_back(1);
    } else {
      plan.out_shape.push_back(x->shape[d]);
    }
  }
  return plan;
}

// x's indices at an output point of the plan: kept axes from the output
// vars, reduced ones from the reduce axes.
std::vector<Expr> input_indices(const ReducePlan& plan, bool keepdims, const Vars& out) {
  std::vector<Expr> idx;
  size_t next_out = 0, next_reduce = 0;
  for (bool r : plan.reduced) {
    if (r) {
      idx.push_back(plan.axes[next_reduce++]->var);
      if (keepdims) ++next_out;
    } else {
      idx.push_back(out[next_out++]);
    }
  }
  return idx;
}

Result<Tensor> reduce_with(const std::string& op, const Tensor& x, const std::vector<int>& axes, bool keepdims,
                           Expr (*combiner)(Expr, std::vector<IterVar>), const std::string& name) {
  TESSERA_ASSIGN_OR_RETURN(ReducePlan plan, plan_reduce(op, x, axes, keepdims));
  return compute(
      plan.out_shape, [&](const Vars& i) { return combiner(read(x, input_indices(plan, keepdims, i)), plan.axes); },
      name, OpPattern::kReduction);
}

}  // namespace

Result<Tensor> reduce_sum(const Tensor& x, const std::vector<int>& axes, bool keepdims, const std::string& name) {
  return reduce_with("reduce_sum", x, axes, keepdims, &tessera::sum, name);
}

Result<Tensor> reduce_max(const Tensor& x, const std::vector<int>& axes, bool keepdims, const std::string& name) {
  return reduce_with("reduce_max", x, axes, keepdims, &tessera::max_reduce, name);
}

Result<Tensor> reduce_min(const Tensor& x, const std::vector<int>& axes, bool keepdims, const std::string& name) {
  if (!x.defined() || x->dtype != DType::i64())
    return reduce_with("reduce_min", x, axes, keepdims, &tessera::min_reduce, name);
  // The int64 identity of a min reduction is 2^63 converted from double,
  // which wraps to INT64_MIN; min(x) = ~max(~x) (~x = -1 - x, exact for
  // every int64) avoids it.
  const Tensor flipped = compute(
      x->shape, [&](const Vars& i) { return make_int(-1) - read(x, detail::as_exprs(i)); }, name + ".not",
      OpPattern::kElementwise);
  TESSERA_ASSIGN_OR_RETURN(Tensor m,
                           reduce_with("reduce_min", flipped, axes, keepdims, &tessera::max_reduce, name + ".max"));
  return compute(
      m->shape, [&](const Vars& i) { return make_int(-1) - read(m, detail::as_exprs(i)); }, name,
      OpPattern::kElementwise);
}

Result<Tensor> reduce_bounds(const Tensor& x, const std::string& name) {
  const std::string op = "reduce_bounds";
  TESSERA_RETURN_IF_ERROR(check_rank(op, "X", x, x.defined() ? x->ndim() : 0));
  TESSERA_RETURN_IF_ERROR(check_float(op, "X", x));
  const bool empty = std::any_of(x->shape.begin(), x->shape.end(), [](int64_t e) { return e == 0; });
  if (x->ndim() == 0 || empty) return invalid(op, "X " + shape_str(x->shape) + " has no elements to bound");
  // Bound j of a value v: -v for j = 0, v for j = 1.
  const DType t = x->dtype;
  auto signed_value = [t](const Expr& j, const Expr& v) { return select(j == make_int(0), make_float(0.0, t) - v, v); };
  // The last axis as [outer, lanes], `lanes` a vector's worth that divides
  // it: a row's bounds are `lanes` running bounds each, so the reduction
  // runs down contiguous vectors, the row read once per bound from L1.
  const int rank = x->ndim();
  const int64_t last = x->shape[rank - 1];
  int64_t lanes = 64;
  while (last % lanes != 0) lanes /= 2;
  IterVar outer = reduce_axis(last / lanes, "d");
  std::vector<int64_t> rows_shape(x->shape.begin(), x->shape.end() - 1);
  rows_shape.insert(rows_shape.end(), {2, lanes});
  Tensor rows = compute(
      rows_shape,
      [&](const Vars& i) {
        std::vector<Expr> at;
        for (int a = 0; a + 1 < rank; ++a) at.push_back(i[static_cast<size_t>(a)]);
        at.push_back(outer->var * make_int(lanes) + i.back());
        return max_reduce(signed_value(i[static_cast<size_t>(rank - 1)], read(x, at)), {outer});
      },
      name + ".rows", OpPattern::kReduction);
  // The rows' bounds down to [2, lanes], still vectors, then across the lanes.
  Tensor columns = rows;
  if (rank > 1) {
    std::vector<IterVar> over;
    for (int a = 0; a + 1 < rank; ++a) over.push_back(reduce_axis(x->shape[a], "r" + std::to_string(a)));
    columns = compute(
        {2, lanes},
        [&](const Vars& i) {
          std::vector<Expr> at;
          for (const IterVar& r : over) at.push_back(r->var);
          at.insert(at.end(), {i[0], i[1]});
          return max_reduce(read(rows, at), over);
        },
        name + ".columns", OpPattern::kReduction);
  }
  IterVar lane = reduce_axis(lanes, "lane");
  return compute(
      {2},
      [&](const Vars& i) {
        return max_reduce(read(columns, {i[0], lane->var}), {lane});
      },
      name, OpPattern::kReduction);
}

Result<Tensor> reduce_prod(const Tensor& x, const std::vector<int>& axes, bool keepdims, const std::string& name) {
  return reduce_with(
      "reduce_prod", x, axes, keepdims,
      [](Expr source, std::vector<IterVar> r) { return make_reduce(ReduceOp::kProd, std::move(source), std::move(r)); },
      name);
}

Result<Tensor> arg_reduce(const Tensor& x, int axis, bool keepdims, bool is_max, bool select_last,
                          const std::string& name) {
  const std::string op = is_max ? "argmax" : "argmin";
  TESSERA_RETURN_IF_ERROR(check_rank(op, "X", x, x.defined() ? x->ndim() : 0));
  TESSERA_ASSIGN_OR_RETURN(const int a, detail::normalize_axis(op, axis, x->ndim()));
  TESSERA_ASSIGN_OR_RETURN(Tensor extreme, (is_max ? reduce_max : reduce_min)(x, {a}, true, name + ".extreme"));
  const int64_t n = x->shape[a];
  // The first position p scores n - p, the last p + 1: the maximum score
  // over the positions holding the extreme names the wanted one (indices
  // stay positive, so the int64 max identity never shows).
  TESSERA_ASSIGN_OR_RETURN(ReducePlan plan, plan_reduce(op, x, {a}, true));
  const Tensor pos = compute(
      plan.out_shape,
      [&](const Vars& i) {
        std::vector<Expr> at = input_indices(plan, true, i);
        const Expr k = plan.axes[0]->var;
        const Expr score = select_last ? k + make_int(1) : make_int(n) - k;
        return max_reduce(select(read(x, at) == read(extreme, detail::as_exprs(i)), score, make_int(0)), plan.axes);
      },
      name + ".pos", OpPattern::kReduction);
  std::vector<int64_t> out_shape = plan.out_shape;
  if (!keepdims) out_shape.erase(out_shape.begin() + a);
  return compute(
      out_shape,
      [&](const Vars& i) {
        std::vector<Expr> at = detail::as_exprs(i);
        if (!keepdims) at.insert(at.begin() + a, make_int(0));
        const Expr v = read(pos, at);
        return select_last ? v - make_int(1) : make_int(n) - v;
      },
      name, OpPattern::kElementwise);
}

Result<Tensor> cumsum(const Tensor& x, int axis, bool exclusive, bool reverse, const std::string& name) {
  TESSERA_RETURN_IF_ERROR(check_rank("cumsum", "X", x, x.defined() ? x->ndim() : 0));
  TESSERA_ASSIGN_OR_RETURN(const int a, detail::normalize_axis("cumsum", axis, x->ndim()));
  IterVar k = reduce_axis(x->shape[a], "k");
  return compute(
      x->shape,
      [&](const Vars& i) {
        std::vector<Expr> at = detail::as_exprs(i);
        const Expr here = at[a];
        at[a] = k->var;
        const Expr take =
            reverse ? (exclusive ? k->var > here : k->var >= here) : (exclusive ? k->var < here : k->var <= here);
        return sum(select(take, read(x, at), constant(x->dtype, 0.0)), {k});
      },
      name, OpPattern::kReduction);
}

Result<Tensor> reduce_mean(const Tensor& x, const std::vector<int>& axes, bool keepdims, const std::string& name) {
  TESSERA_RETURN_IF_ERROR(check_float("reduce_mean", "X", x));
  TESSERA_ASSIGN_OR_RETURN(ReducePlan plan, plan_reduce("reduce_mean", x, axes, keepdims));
  TESSERA_ASSIGN_OR_RETURN(Tensor total, reduce_with("reduce_mean", x, axes, keepdims, &tessera::sum, name + ".sum"));
  const double count = static_cast<double>(plan.count);
  return compute(
      plan.out_shape, [&](const Vars& i) { return read(total, detail::as_exprs(i)) / constant(x->dtype, count); }, name,
      OpPattern::kElementwise);
}

Result<Tensor> softmax(const Tensor& x, int axis, const std::string& name) {
  const std::string op = "softmax";
  TESSERA_RETURN_IF_ERROR(check_float(op, "X", x));
  TESSERA_RETURN_IF_ERROR(check_rank(op, "X", x, x->ndim()));
  TESSERA_ASSIGN_OR_RETURN(int d, detail::normalize_axis(op, axis, x->ndim()));
  TESSERA_ASSIGN_OR_RETURN(Tensor row_max, reduce_with(op, x, {d}, true, &tessera::max_reduce, name + ".max"));
  // Reading a keepdims reduction at point i: index 0 on the reduced axis.
  auto reduced_at = [d](const Vars& i) {
    std::vector<Expr> idx = detail::as_exprs(i);
    idx[d] = make_int(0);
    return idx;
  };
  IterVar k = reduce_axis(x->shape[d], "k");
  Tensor expsum = compute(
      row_max->shape,
      [&](const Vars& i) {
        std::vector<Expr> xi = detail::as_exprs(i);
        xi[d] = k->var;
        return sum(tessera::exp(read(x, xi) - read(row_max, detail::as_exprs(i))), {k});
      },
      name + ".expsum", OpPattern::kReduction);
  return compute(
      x->shape,
      [&](const Vars& i) {
        return tessera::exp(read(x, detail::as_exprs(i)) - read(row_max, reduced_at(i))) / read(expsum, reduced_at(i));
      },
      name, OpPattern::kBroadcast);
}

Result<Tensor> layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, int axis, double eps,
                          const std::string& name, int count) {
  const std::string op = "layer_norm";
  TESSERA_RETURN_IF_ERROR(check_float(op, "X", x));
  TESSERA_RETURN_IF_ERROR(check_rank(op, "X", x, x->ndim()));
  const int rank = x->ndim();
  TESSERA_ASSIGN_OR_RETURN(int first, detail::normalize_axis(op, axis, rank));
  if (count < 0 || first + count > rank)
    return invalid(op, std::to_string(count) + " axes from axis " + std::to_string(first) + " exceed X's rank " +
                           std::to_string(rank));
  const int end = count > 0 ? first + count : rank;
  const std::vector<int64_t> norm_shape(x->shape.begin() + first, x->shape.begin() + end);
  for (const auto& [role, t] : {std::pair<const char*, const Tensor&>{"gamma", gamma}, {"beta", beta}}) {
    if (!t.defined() || t->shape != norm_shape)
      return invalid(op, std::string(role) + " must have shape " + shape_str(norm_shape) + " (X's axes " +
                             std::to_string(first) + " to " + std::to_string(end - 1) + ")");
    if (t->dtype != x->dtype) return invalid(op, std::string(role) + " must have X's type");
  }
  if (!(eps >= 0)) return invalid(op, "eps must not be negative");
  std::vector<int> axes;
  for (int d = first; d < end; ++d) axes.push_back(d);
  TESSERA_ASSIGN_OR_RETURN(ReducePlan plan, plan_reduce(op, x, axes, true));
  const DType t = x->dtype;
  const Expr count_c = constant(t, static_cast<double>(plan.count));
  auto stats_at = [first, end](const Vars& i) {
    std::vector<Expr> idx = detail::as_exprs(i);
    for (int d = first; d < end; ++d) idx[d] = make_int(0);
    return idx;
  };
  TESSERA_ASSIGN_OR_RETURN(Tensor total, reduce_with(op, x, axes, true, &tessera::sum, name + ".sum"));
  Tensor sqdev = compute(
      plan.out_shape,
      [&](const Vars& i) {
        Expr dev = read(x, input_indices(plan, true, i)) - read(total, detail::as_exprs(i)) / count_c;
        return sum(dev * dev, plan.axes);
      },
      name + ".sqdev", OpPattern::kReduction);
  auto mean_at = [&](const Vars& i) { return read(total, stats_at(i)) / count_c; };
  auto inv_std_at = [&](const Vars& i) {
    return constant(t, 1.0) / tessera::sqrt(read(sqdev, stats_at(i)) / count_c + constant(t, eps));
  };
  // Normalized over inner axes, the statistics vary along the innermost one
  // (the channels), so an output vector would take a division and a square
  // root of its own: the mean and the inverse deviation are stages of the
  // statistics' shape instead, computed once each (generic_schedule keeps
  // such a stage; the rows template's rows hoist them anyway).
  Tensor mean_stage, inv_std_stage;
  if (end != rank) {
    mean_stage = compute(
        plan.out_shape, [&](const Vars& i) { return mean_at(i); }, name + ".mean", OpPattern::kBroadcast);
    inv_std_stage = compute(
        plan.out_shape, [&](const Vars& i) { return inv_std_at(i); }, name + ".inv_std", OpPattern::kBroadcast);
  }
  return compute(
      x->shape,
      [&](const Vars& i) {
        std::vector<Expr> normed;
        for (int d = first; d < end; ++d) normed.push_back(i[d]);
        const Expr mean = mean_stage.defined() ? read(mean_stage, stats_at(i)) : mean_at(i);
        const Expr inv_std = inv_std_stage.defined() ? read(inv_std_stage, stats_at(i)) : inv_std_at(i);
        return (read(x, detail::as_exprs(i)) - mean) * inv_std * read(gamma, normed) + read(beta, normed);
      },
      name, OpPattern::kBroadcast);
}

}  // namespace tessera::ops
