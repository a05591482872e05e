// Tensor expressions of the indexing and contraction kinds: GatherND,
// ScatterElements, ScatterND (scatters written as gathers: each output
// element searches the updates that land on it) and Einsum (one compute,
// a sum over the letters the output lacks).
#include <algorithm>
#include <functional>

#include "compiler/graph/build_node.h"
#include "compiler/ir/op.h"

namespace tessera::graph {

namespace {

Expr cst(DType t, double v) {
  return make_const(t, v);
}

std::vector<Expr> exprs(const Vars& vars) {
  std::vector<Expr> out;
  for (const Var& v : vars) out.push_back(static_cast<const Expr&>(v));
  return out;
}

// An index read from an integer tensor, negative values counted from `len`.
Expr wrapped_index(const Tensor& indices, const std::vector<Expr>& at, int64_t len) {
  const Expr j = cast(kIndexType, read(indices, at));
  return if_then_else(j < make_int(0), j + make_int(len), j);
}

// out = indices.shape[:-1] + data.shape[b + k:]; the first b dims are batch.
Tensor build_gather_nd(const Graph& g, const Node& n, const Tensor& data, const Tensor& indices) {
  const auto b = static_cast<size_t>(std::get<ScatterAttrs>(n.attrs).axis);
  const size_t q = indices->shape.size();
  const auto k = static_cast<size_t>(indices->shape.back());
  return compute(
      g.value(n.outputs[0]).shape,
      [&](const Vars& i) {
        const std::vector<Expr> all = exprs(i);
        const std::vector<Expr> lead(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(q - 1));
        std::vector<Expr> at(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(b));
        for (size_t d = 0; d < k; ++d) {
          std::vector<Expr> idx = lead;
          idx.push_back(make_int(static_cast<int64_t>(d)));
          at.push_back(wrapped_index(indices, idx, data->shape[b + d]));
        }
        for (size_t d = q - 1; d < i.size(); ++d) at.push_back(i[d]);
        return read(data, at);
      },
      n.name, OpPattern::kInjective);
}

// Combines the data value with what the search over the updates found:
// for kNone `found` is 1 + the position of the last update that lands here
// (0: none) and `take(pos)` reads that update; otherwise it is their sum or
// product.
Expr combine(ScatterAttrs::Reduction r, const Expr& value, const Expr& found, const std::function<Expr(Expr)>& take) {
  switch (r) {
    case ScatterAttrs::Reduction::kNone: return if_then_else(found > make_int(0), take(found - make_int(1)), value);
    case ScatterAttrs::Reduction::kAdd: return value + found;
    case ScatterAttrs::Reduction::kMul: return value * found;
  }
  return value;
}

// The reduction that searches the updates: position + 1 of the last hit, or
// the sum / product of the updates that hit.
Expr search(ScatterAttrs::Reduction r, const Expr& hit, const Expr& position, const Expr& update,
            std::vector<IterVar> axes) {
  const DType t = update.dtype();
  switch (r) {
    case ScatterAttrs::Reduction::kNone:
      return max_reduce(if_then_else(hit, position + make_int(1), make_int(0)), std::move(axes));
    case ScatterAttrs::Reduction::kAdd: return sum(if_then_else(hit, update, cst(t, 0.0)), std::move(axes));
    case ScatterAttrs::Reduction::kMul:
      return make_reduce(ReduceOp::kProd, if_then_else(hit, update, cst(t, 1.0)), std::move(axes));
  }
  return update;
}

Tensor build_scatter_elements(const Node& n, const Tensor& data, const Tensor& indices, const Tensor& updates) {
  const auto& a = std::get<ScatterAttrs>(n.attrs);
  const auto axis = static_cast<size_t>(a.axis);
  const auto& us = updates->shape;
  IterVar k = reduce_axis(us[axis], "k");
  // The update coordinates of output point p with the axis set to `j`
  // (other coordinates clamped into the updates; `inside` says whether p
  // has a row of updates at all).
  auto at = [&](const Vars& p, const Expr& j) {
    std::vector<Expr> idx;
    for (size_t d = 0; d < us.size(); ++d)
      idx.push_back(d == axis ? j : min(static_cast<const Expr&>(p[d]), make_int(us[d] - 1)));
    return idx;
  };
  auto inside = [&](const Vars& p) {
    Expr in = make_bool(true);
    for (size_t d = 0; d < us.size(); ++d)
      if (d != axis && us[d] < data->shape[d]) in = in && static_cast<const Expr&>(p[d]) < make_int(us[d]);
    return in;
  };
  const Tensor found = compute(
      data->shape,
      [&](const Vars& p) {
        const auto idx = at(p, k->var);
        const Expr hit =
            inside(p) && wrapped_index(indices, idx, data->shape[axis]) == static_cast<const Expr&>(p[axis]);
        return search(a.reduction, hit, k->var, read(updates, idx), {k});
      },
      n.name + ".search", OpPattern::kReduction);
  return compute(
      data->shape,
      [&](const Vars& p) {
        return combine(a.reduction, read(data, exprs(p)), read(found, exprs(p)),
                       [&](Expr pos) { return read(updates, at(p, pos)); });
      },
      n.name, OpPattern::kBroadcast);
}

Tensor build_scatter_nd(const Node& n, const Tensor& data, const Tensor& indices, const Tensor& updates) {
  const auto& a = std::get<ScatterAttrs>(n.attrs);
  const size_t m = indices->shape.size() - 1;
  const auto k = static_cast<size_t>(indices->shape.back());
  std::vector<IterVar> axes;
  for (size_t d = 0; d < m; ++d) axes.push_back(reduce_axis(indices->shape[d], "m" + std::to_string(d)));
  auto update_at = [&](const Vars& p, const std::vector<Expr>& lead) {
    std::vector<Expr> idx = lead;
    for (size_t d = k; d < p.size(); ++d) idx.push_back(p[d]);
    return idx;
  };
  const Tensor found = compute(
      data->shape,
      [&](const Vars& p) {
        std::vector<Expr> lead;
        Expr position = make_int(0);
        for (size_t d = 0; d < m; ++d) {
          lead.push_back(axes[d]->var);
          position = position * make_int(indices->shape[d]) + axes[d]->var;
        }
        Expr hit = make_bool(true);
        for (size_t d = 0; d < k; ++d) {
          std::vector<Expr> idx = lead;
          idx.push_back(make_int(static_cast<int64_t>(d)));
          hit = hit && wrapped_index(indices, idx, data->shape[d]) == static_cast<const Expr&>(p[d]);
        }
        return search(a.reduction, hit, position, read(updates, update_at(p, lead)), axes);
      },
      n.name + ".search", OpPattern::kReduction);
  return compute(
      data->shape,
      [&](const Vars& p) {
        return combine(a.reduction, read(data, exprs(p)), read(found, exprs(p)), [&](Expr pos) {
          std::vector<Expr> lead(m);
          for (size_t d = m; d-- > 0;) {
            lead[d] = pos % make_int(indices->shape[d]);
            pos = pos / make_int(indices->shape[d]);
          }
          return read(updates, update_at(p, lead));
        });
      },
      n.name, OpPattern::kBroadcast);
}

Tensor build_einsum(const Graph& g, const Node& n, const std::vector<Tensor>& in) {
  const auto& a = std::get<EinsumAttrs>(n.attrs);
  std::vector<IterVar> summed;
  std::vector<int> summed_letters;
  for (size_t l = 0; l < a.extents.size(); ++l) {
    if (a.extents[l] == 0 || std::find(a.output.begin(), a.output.end(), static_cast<int>(l)) != a.output.end())
      continue;
    summed.push_back(reduce_axis(a.extents[l], std::string(1, static_cast<char>(l < 26 ? 'a' + l : 'A' + l - 26))));
    summed_letters.push_back(static_cast<int>(l));
  }
  return compute(
      g.value(n.outputs[0]).shape,
      [&](const Vars& i) {
        std::vector<Expr> letter(a.extents.size());
        for (size_t d = 0; d < a.output.size(); ++d) letter[a.output[d]] = i[d];
        for (size_t s = 0; s < summed.size(); ++s) letter[summed_letters[s]] = summed[s]->var;
        Expr product;
        for (size_t t = 0; t < in.size(); ++t) {
          std::vector<Expr> idx;
          for (int l : a.inputs[t]) idx.push_back(letter[l]);
          const Expr v = read(in[t], idx);
          product = product.defined() ? product * v : v;
        }
        return summed.empty() ? product : sum(product, summed);
      },
      n.name, node_pattern(g, n));
}

// Weights of the 4 cubic taps at floor(c) - 1 .. floor(c) + 2 for t = c -
// floor(c): Keys' kernel with coefficient `a` (as Resize's cubic mode).
std::vector<Expr> cubic_weights(double a, const Expr& t) {
  const DType f = t.dtype();
  auto far = [&](const Expr& s) { return ((cst(f, a) * s - cst(f, 5 * a)) * s + cst(f, 8 * a)) * s - cst(f, 4 * a); };
  auto near = [&](const Expr& s) { return ((cst(f, a + 2) * s - cst(f, a + 3)) * s) * s + cst(f, 1.0); };
  const Expr u = cst(f, 1.0) - t;
  return {far(t + cst(f, 1.0)), near(t), near(u), far(u + cst(f, 1.0))};
}

// PyTorch's reflect_coordinates: x mirrored into [twice_low / 2, twice_high / 2].
Expr reflect(const Expr& x, double twice_low, double twice_high) {
  const DType f = x.dtype();
  if (twice_low == twice_high) return cst(f, 0.0);
  const double low = twice_low / 2, span = (twice_high - twice_low) / 2;
  const Expr in = abs(x - cst(f, low));
  const Expr flips = floor(in / cst(f, span));
  const Expr extra = in - flips * cst(f, span);
  const Expr even = flips - floor(flips / cst(f, 2.0)) * cst(f, 2.0) == cst(f, 0.0);
  return if_then_else(even, extra + cst(f, low), cst(f, span) - extra + cst(f, low));
}

// A coordinate after the padding mode (border: clamped; reflection:
// mirrored, then clamped), along a dimension of `size`.
Expr pad_coordinate(const GridSampleAttrs& a, Expr x, int64_t size) {
  const DType f = x.dtype();
  if (a.padding == GridSampleAttrs::Padding::kZeros) return x;
  if (a.padding == GridSampleAttrs::Padding::kReflection)
    x = a.align_corners ? reflect(x, 0.0, 2.0 * static_cast<double>(size - 1))
                        : reflect(x, -1.0, 2.0 * static_cast<double>(size) - 1);
  return min(max(x, cst(f, 0.0)), cst(f, static_cast<double>(size - 1)));
}

Tensor build_grid_sample(const Graph& g, const Node& n, const Tensor& x, const Tensor& grid) {
  const auto& a = std::get<GridSampleAttrs>(n.attrs);
  const int64_t height = x->shape[2], width = x->shape[3];
  const DType f = x->dtype;
  return compute(
      g.value(n.outputs[0]).shape,
      [&](const Vars& i) {
        auto source = [&](int c, int64_t size) {  // grid coordinate c in input pixels
          const Expr v = read(grid, {i[0], i[2], i[3], make_int(c)});
          const double s = static_cast<double>(size);
          return a.align_corners ? (v + cst(f, 1.0)) / cst(f, 2.0) * cst(f, s - 1)
                                 : ((v + cst(f, 1.0)) * cst(f, s) - cst(f, 1.0)) / cst(f, 2.0);
        };
        // The pixel at integer coordinates (xi, yi), 0 outside the input.
        auto pixel = [&](const Expr& xi, const Expr& yi) {
          const Expr inside = xi >= make_int(0) && xi < make_int(width) && yi >= make_int(0) && yi < make_int(height);
          const Expr cx = min(max(xi, make_int(0)), make_int(width - 1));
          const Expr cy = min(max(yi, make_int(0)), make_int(height - 1));
          return if_then_else(inside, read(x, {i[0], i[1], cy, cx}), cst(f, 0.0));
        };
        const Expr sx = source(0, width), sy = source(1, height);
        if (a.mode == GridSampleAttrs::Mode::kBicubic) {
          // Taps at floor - 1 .. floor + 2, each tap coordinate padded.
          const Expr fx = floor(sx), fy = floor(sy);
          const std::vector<Expr> wx = cubic_weights(-0.75, sx - fx), wy = cubic_weights(-0.75, sy - fy);
          Expr total;
          for (int r = 0; r < 4; ++r)
            for (int c = 0; c < 4; ++c) {
              const Expr tx = cast(kIndexType, pad_coordinate(a, fx + cst(f, c - 1.0), width));
              const Expr ty = cast(kIndexType, pad_coordinate(a, fy + cst(f, r - 1.0), height));
              const Expr term = pixel(tx, ty) * wx[c] * wy[r];
              total = total.defined() ? total + term : term;
            }
          return total;
        }
        const Expr px = pad_coordinate(a, sx, width), py = pad_coordinate(a, sy, height);
        if (a.mode == GridSampleAttrs::Mode::kNearest)
          return pixel(cast(kIndexType, round(px)), cast(kIndexType, round(py)));
        const Expr fx = floor(px), fy = floor(py);
        const Expr tx = px - fx, ty = py - fy, x0 = cast(kIndexType, fx), y0 = cast(kIndexType, fy);
        const Expr one = cst(f, 1.0), x1 = x0 + make_int(1), y1 = y0 + make_int(1);
        return pixel(x0, y0) * (one - tx) * (one - ty) + pixel(x1, y0) * tx * (one - ty) +
               pixel(x0, y1) * (one - tx) * ty + pixel(x1, y1) * tx * ty;
      },
      n.name, OpPattern::kInjective);
}

}  // namespace

Result<Tensor> build_index_node(const Graph& g, const Node& n, const std::vector<Tensor>& in) {
  switch (n.kind) {
    case OpKind::kGatherND: return build_gather_nd(g, n, in[0], in[1]);
    case OpKind::kScatterElements: return build_scatter_elements(n, in[0], in[1], in[2]);
    case OpKind::kScatterND: return build_scatter_nd(n, in[0], in[1], in[2]);
    case OpKind::kEinsum: return build_einsum(g, n, in);
    case OpKind::kGridSample: return build_grid_sample(g, n, in[0], in[1]);
    default:
      return Status(ErrorCode::kInvalidArgument,
                    std::string("node ") + n.name + " (" + op_kind_name(n.kind) + "): not an indexing kind");
  }
}

}  // namespace tessera::graph
