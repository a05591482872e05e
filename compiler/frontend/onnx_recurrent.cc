// LSTM, GRU and RNN, unrolled over their static sequence length: the input
// projection of the whole sequence is one matmul (X W^T + the biases, for
// every step and gate at once); each step is the recurrent matmul H R^T plus
// that step's projection, then the gates, elementwise. Forward, reverse and
// bidirectional; any of ONNX's activations (with activation_alpha/beta), clip,
// initial states, LSTM peepholes and input_forget, GRU's linear_before_reset,
// layout 1, and sequence_lens (forward: a shorter sequence keeps its state
// and writes zeros past its end).
//
// The nodes are built through the operators' own converters (MatMul, Split,
// Sigmoid, ...), so shapes and constant folding are theirs: weights given as
// initializers are sliced and transposed once, at import.
#include <cmath>

#include "compiler/frontend/onnx_context.h"
#include "compiler/frontend/onnx_emitter.h"

namespace tessera::frontend::detail {

namespace {

using graph::ValueId;
using Node = onnx::NodeProto;

// One activation of the cell (ONNX's names), with its alpha and beta.
struct Activation {
  std::string name;
  std::optional<float> alpha, beta;
};

Result<ValueId> activate(Emitter& e, const Activation& f, ValueId x) {
  const std::string& n = f.name;
  if (n == "Sigmoid" || n == "Tanh" || n == "Relu" || n == "Softsign" || n == "Softplus") return e.op(n, {x});
  if (n == "HardSigmoid")
    return e.op(n, {x}, {float_attr("alpha", f.alpha.value_or(0.2f)), float_attr("beta", f.beta.value_or(0.5f))});
  if (n == "LeakyRelu") return e.op(n, {x}, {float_attr("alpha", f.alpha.value_or(0.01f))});
  if (n == "ThresholdedRelu" || n == "Elu") return e.op(n, {x}, {float_attr("alpha", f.alpha.value_or(1.0f))});
  if (n == "Affine") {  // alpha * x + beta
    TESSERA_ASSIGN_OR_RETURN(ValueId y, e.op("Mul", {x, e.scalar(f.alpha.value_or(1.0f))}));
    return e.op("Add", {y, e.scalar(f.beta.value_or(0.0f))});
  }
  if (n == "ScaledTanh") {  // alpha * tanh(beta * x)
    TESSERA_ASSIGN_OR_RETURN(ValueId y, e.op("Mul", {x, e.scalar(f.beta.value_or(1.0f))}));
    TESSERA_ASSIGN_OR_RETURN(y, e.op("Tanh", {y}));
    return e.op("Mul", {y, e.scalar(f.alpha.value_or(1.0f))});
  }
  return invalid("activation '" + n + "' is not supported");
}

bool takes_alpha(const std::string& n) {
  return n == "HardSigmoid" || n == "LeakyRelu" || n == "ThresholdedRelu" || n == "Elu" || n == "Affine" ||
         n == "ScaledTanh";
}
bool takes_beta(const std::string& n) {
  return n == "HardSigmoid" || n == "Affine" || n == "ScaledTanh";
}

enum class Cell { kLstm, kGru, kRnn };

struct Spec {
  Cell cell = Cell::kLstm;
  int64_t t = 0, batch = 0, input = 0, hidden = 0, directions = 1, gates = 4;
  bool reverse_only = false;
  bool batch_first = false;             // layout 1: X [B, T, I], states [B, D, H]
  std::vector<Activation> activations;  // per direction: LSTM f g h, GRU f g, RNN f
  std::optional<float> clip;
  bool input_forget = false, linear_before_reset = false;
};

// The attributes, checked against W's shape.
Result<Spec> read_spec(const Node& node, Cell cell, const std::vector<int64_t>& xs, const std::vector<int64_t>& ws) {
  Spec s;
  s.cell = cell;
  s.gates = cell == Cell::kLstm ? 4 : cell == Cell::kGru ? 3 : 1;
  const int per_direction = cell == Cell::kLstm ? 3 : cell == Cell::kGru ? 2 : 1;
  const std::string direction = attr_string(node, "direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return invalid("direction '" + direction + "' is not forward, reverse or bidirectional");
  s.directions = direction == "bidirectional" ? 2 : 1;
  s.reverse_only = direction == "reverse";
  const int64_t layout = attr_int(node, "layout", 0);
  if (layout != 0 && layout != 1) return invalid("layout " + std::to_string(layout) + " is not 0 or 1");
  if (xs.size() != 3) return invalid("X must be rank 3, not " + graph::shape_string(xs));
  s.batch_first = layout == 1;
  s.t = layout == 0 ? xs[0] : xs[1];
  s.batch = layout == 0 ? xs[1] : xs[0];
  s.input = xs[2];
  if (ws.size() != 3 || ws[0] != s.directions || ws[1] % s.gates != 0 || ws[2] != s.input)
    return invalid("W " + graph::shape_string(ws) + " is not [" + std::to_string(s.directions) + ", " +
                   std::to_string(s.gates) + " * hidden_size, " + std::to_string(s.input) + "]");
  s.hidden = attr_int(node, "hidden_size", ws[1] / s.gates);
  if (s.hidden * s.gates != ws[1])
    return invalid("hidden_size " + std::to_string(s.hidden) + " does not match W " + graph::shape_string(ws));
  std::vector<std::string> names;
  if (const auto* a = find_attr(node, "activations")) names.assign(a->strings().begin(), a->strings().end());
  if (names.empty()) {
    const std::vector<std::string> defaults = cell == Cell::kLstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                              : cell == Cell::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                                   : std::vector<std::string>{"Tanh"};
    for (int64_t d = 0; d < s.directions; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  }
  if (static_cast<int64_t>(names.size()) != per_direction * s.directions)
    return invalid("activations lists " + std::to_string(names.size()) + " functions, not " +
                   std::to_string(per_direction * s.directions));
  std::vector<float> alphas, betas;
  if (const auto* a = find_attr(node, "activation_alpha")) alphas.assign(a->floats().begin(), a->floats().end());
  if (const auto* b = find_attr(node, "activation_beta")) betas.assign(b->floats().begin(), b->floats().end());
  size_t next_alpha = 0, next_beta = 0;  // taken in order by the functions that have them
  for (const std::string& n : names) {
    Activation f{n, {}, {}};
    if (takes_alpha(n) && next_alpha < alphas.size()) f.alpha = alphas[next_alpha++];
    if (takes_beta(n) && next_beta < betas.size()) f.beta = betas[next_beta++];
    s.activations.push_back(f);
  }
  if (const auto* c = find_attr(node, "clip")) {
    if (!(c->f() > 0)) return invalid("clip must be positive, not " + std::to_string(c->f()));
    s.clip = c->f();
  }
  s.input_forget = attr_int(node, "input_forget", 0) != 0;
  s.linear_before_reset = attr_int(node, "linear_before_reset", 0) != 0;
  return s;
}

// What one direction reads: its weights transposed for x * W^T, the
// summed biases, initial states, peepholes; and per-step lengths.
struct Direction {
  ValueId wt, rt;                       // [I, G*H], [H, G*H]
  std::optional<ValueId> bias;          // [G*H]: Wb + Rb (GRU lbr: Wb, plus Rb's h part kept apart)
  std::optional<ValueId> recurrent_hb;  // GRU with linear_before_reset: Rbh [H]
  std::optional<ValueId> h0, c0;        // [B, H]
  std::optional<ValueId> pi, po, pf;    // LSTM peepholes [H]
  const Activation* f = nullptr;        // the cell's functions
};

Result<ValueId> clip(Emitter& e, const Spec& s, ValueId x) {
  if (!s.clip) return x;
  return e.op("Clip", {x, e.scalar(-*s.clip), e.scalar(*s.clip)});
}

// The new (h, c) of one LSTM step from its gate pre-activations [B, 4H]
// (order i, o, f, c).
Result<std::pair<ValueId, ValueId>> lstm_step(Emitter& e, const Spec& s, const Direction& d, ValueId gates,
                                              std::optional<ValueId> c) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<ValueId> g, e.ops("Split", {gates}, 4, {int_attr("axis", 1)}));
  auto peephole = [&](ValueId x, const std::optional<ValueId>& p,
                      const std::optional<ValueId>& state) -> Result<ValueId> {
    if (!p || !state) return x;
    TESSERA_ASSIGN_OR_RETURN(ValueId pc, e.op("Mul", {*p, *state}));
    return e.op("Add", {x, pc});
  };
  TESSERA_ASSIGN_OR_RETURN(ValueId i_pre, peephole(g[0], d.pi, c));
  TESSERA_ASSIGN_OR_RETURN(i_pre, clip(e, s, i_pre));
  TESSERA_ASSIGN_OR_RETURN(ValueId i, activate(e, d.f[0], i_pre));
  ValueId f;
  if (s.input_forget) {
    TESSERA_ASSIGN_OR_RETURN(f, e.op("Sub", {e.scalar(1.0f), i}));
  } else {
    TESSERA_ASSIGN_OR_RETURN(ValueId f_pre, peephole(g[2], d.pf, c));
    TESSERA_ASSIGN_OR_RETURN(f_pre, clip(e, s, f_pre));
    TESSERA_ASSIGN_OR_RETURN(f, activate(e, d.f[0], f_pre));
  }
  TESSERA_ASSIGN_OR_RETURN(ValueId c_pre, clip(e, s, g[3]));
  TESSERA_ASSIGN_OR_RETURN(ValueId candidate, activate(e, d.f[1], c_pre));
  TESSERA_ASSIGN_OR_RETURN(ValueId c_new, e.op("Mul", {i, candidate}));
  if (c) {
    TESSERA_ASSIGN_OR_RETURN(ValueId kept, e.op("Mul", {f, *c}));
    TESSERA_ASSIGN_OR_RETURN(c_new, e.op("Add", {kept, c_new}));
  }
  TESSERA_ASSIGN_OR_RETURN(ValueId o_pre, peephole(g[1], d.po, c_new));
  TESSERA_ASSIGN_OR_RETURN(o_pre, clip(e, s, o_pre));
  TESSERA_ASSIGN_OR_RETURN(ValueId o, activate(e, d.f[0], o_pre));
  TESSERA_ASSIGN_OR_RETURN(ValueId squashed, activate(e, d.f[2], c_new));
  TESSERA_ASSIGN_OR_RETURN(ValueId h_new, e.op("Mul", {o, squashed}));
  return std::make_pair(h_new, c_new);
}

// h_prev R^T, or nothing for a state known to be zero (no initial_h, first
// step).
Result<std::optional<ValueId>> recurrent(Emitter& e, ValueId rt, const std::optional<ValueId>& h) {
  if (!h) return std::optional<ValueId>();
  TESSERA_ASSIGN_OR_RETURN(ValueId y, e.op("MatMul", {*h, rt}));
  return std::optional<ValueId>(y);
}

Result<ValueId> add_optional(Emitter& e, ValueId x, const std::optional<ValueId>& y) {
  if (!y) return x;
  return e.op("Add", {x, *y});
}

// The new h of one GRU step (gates z, r, h): `xt` the step's projection
// [B, 3H] with Wb, `h` the state.
Result<ValueId> gru_step(Emitter& e, const Spec& s, const Direction& d, ValueId xt, std::optional<ValueId> h,
                         ValueId rzr_t, ValueId rh_t) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<ValueId> x, e.ops("Split", {xt}, 3, {int_attr("axis", 1)}));
  TESSERA_ASSIGN_OR_RETURN(ValueId xzr, e.op("Concat", {x[0], x[1]}, {int_attr("axis", 1)}));
  TESSERA_ASSIGN_OR_RETURN(std::optional<ValueId> hzr, recurrent(e, rzr_t, h));
  TESSERA_ASSIGN_OR_RETURN(ValueId zr_pre, add_optional(e, xzr, hzr));
  TESSERA_ASSIGN_OR_RETURN(zr_pre, clip(e, s, zr_pre));
  TESSERA_ASSIGN_OR_RETURN(ValueId zr, activate(e, d.f[0], zr_pre));
  TESSERA_ASSIGN_OR_RETURN(std::vector<ValueId> zr_split, e.ops("Split", {zr}, 2, {int_attr("axis", 1)}));
  const ValueId z = zr_split[0], r = zr_split[1];
  // The candidate's recurrent part: (r * h) Rh^T + Rbh, or r * (h Rh^T + Rbh).
  std::optional<ValueId> hh;
  if (h && s.linear_before_reset) {
    TESSERA_ASSIGN_OR_RETURN(ValueId y, e.op("MatMul", {*h, rh_t}));
    TESSERA_ASSIGN_OR_RETURN(y, add_optional(e, y, d.recurrent_hb));
    TESSERA_ASSIGN_OR_RETURN(hh, e.op("Mul", {r, y}));
  } else if (s.linear_before_reset) {
    if (d.recurrent_hb) {
      TESSERA_ASSIGN_OR_RETURN(hh, e.op("Mul", {r, *d.recurrent_hb}));
    }
  } else {
    std::optional<ValueId> y;
    if (h) {
      TESSERA_ASSIGN_OR_RETURN(ValueId rh, e.op("Mul", {r, *h}));
      TESSERA_ASSIGN_OR_RETURN(y, e.op("MatMul", {rh, rh_t}));
    }
    if (d.recurrent_hb) {
      if (y) {
        TESSERA_ASSIGN_OR_RETURN(y, e.op("Add", {*y, *d.recurrent_hb}));
      } else {
        y = *d.recurrent_hb;
      }
    }
    hh = y;
  }
  TESSERA_ASSIGN_OR_RETURN(ValueId h_pre, add_optional(e, x[2], hh));
  TESSERA_ASSIGN_OR_RETURN(h_pre, clip(e, s, h_pre));
  TESSERA_ASSIGN_OR_RETURN(ValueId candidate, activate(e, d.f[1], h_pre));
  // (1 - z) * candidate + z * h = candidate + z * (h - candidate)
  if (!h) {
    TESSERA_ASSIGN_OR_RETURN(ValueId keep, e.op("Sub", {e.scalar(1.0f), z}));
    return e.op("Mul", {keep, candidate});
  }
  TESSERA_ASSIGN_OR_RETURN(ValueId diff, e.op("Sub", {*h, candidate}));
  TESSERA_ASSIGN_OR_RETURN(ValueId zd, e.op("Mul", {z, diff}));
  return e.op("Add", {candidate, zd});
}

// The inputs a direction reads, sliced from the node's [D, ...] tensors.
Result<Direction> read_direction(Emitter& e, const Node& node, const Spec& s, int64_t d) {
  ImportContext& ctx = e.ctx();
  Direction out;
  const int per_direction = s.cell == Cell::kLstm ? 3 : s.cell == Cell::kGru ? 2 : 1;
  out.f = &s.activations[static_cast<size_t>(d * per_direction)];
  const int64_t gh = s.gates * s.hidden;
  TESSERA_ASSIGN_OR_RETURN(ValueId w, ctx.input(node, 1));
  TESSERA_ASSIGN_OR_RETURN(ValueId r, ctx.input(node, 2));
  if (ctx.value(r).shape != std::vector<int64_t>{s.directions, gh, s.hidden})
    return invalid("R " + graph::shape_string(ctx.value(r).shape) + " is not [" + std::to_string(s.directions) + ", " +
                   std::to_string(gh) + ", " + std::to_string(s.hidden) + "]");
  TESSERA_ASSIGN_OR_RETURN(ValueId wd, e.at(w, d));
  TESSERA_ASSIGN_OR_RETURN(out.wt, e.op("Transpose", {wd}, {ints_attr("perm", {1, 0})}));
  TESSERA_ASSIGN_OR_RETURN(ValueId rd, e.at(r, d));
  TESSERA_ASSIGN_OR_RETURN(out.rt, e.op("Transpose", {rd}, {ints_attr("perm", {1, 0})}));
  if (ImportContext::has_input(node, 3)) {
    TESSERA_ASSIGN_OR_RETURN(ValueId b, ctx.input(node, 3));
    if (ctx.value(b).shape != std::vector<int64_t>{s.directions, 2 * gh})
      return invalid("B " + graph::shape_string(ctx.value(b).shape) + " is not [" + std::to_string(s.directions) +
                     ", " + std::to_string(2 * gh) + "]");
    TESSERA_ASSIGN_OR_RETURN(ValueId bd, e.at(b, d));
    TESSERA_ASSIGN_OR_RETURN(std::vector<ValueId> wr, e.ops("Split", {bd}, 2, {int_attr("axis", 0)}));
    if (s.cell == Cell::kGru && s.linear_before_reset) {
      // Rbh stays inside the reset: r * (h Rh^T + Rbh).
      TESSERA_ASSIGN_OR_RETURN(std::vector<ValueId> rb, e.ops("Split", {wr[1]}, 3, {int_attr("axis", 0)}));
      TESSERA_ASSIGN_OR_RETURN(ValueId zero, e.op("Mul", {rb[2], e.scalar(0.0f)}));
      TESSERA_ASSIGN_OR_RETURN(ValueId rb_zr, e.op("Concat", {rb[0], rb[1], zero}, {int_attr("axis", 0)}));
      TESSERA_ASSIGN_OR_RETURN(out.bias, e.op("Add", {wr[0], rb_zr}));
      out.recurrent_hb = rb[2];
    } else {
      TESSERA_ASSIGN_OR_RETURN(out.bias, e.op("Add", {wr[0], wr[1]}));
    }
  }
  auto state = [&](int index, const char* what) -> Result<std::optional<ValueId>> {
    if (!ImportContext::has_input(node, index)) return std::optional<ValueId>();
    TESSERA_ASSIGN_OR_RETURN(ValueId v, ctx.input(node, index));
    const std::vector<int64_t> want = s.batch_first ? std::vector<int64_t>{s.batch, s.directions, s.hidden}
                                                    : std::vector<int64_t>{s.directions, s.batch, s.hidden};
    if (ctx.value(v).shape != want)
      return invalid(std::string(what) + " " + graph::shape_string(ctx.value(v).shape) + " is not " +
                     graph::shape_string(want) + (s.batch_first ? " (layout 1)" : ""));
    if (s.batch_first) {
      TESSERA_ASSIGN_OR_RETURN(v, e.op("Transpose", {v}, {ints_attr("perm", {1, 0, 2})}));
    }
    TESSERA_ASSIGN_OR_RETURN(ValueId vd, e.at(v, d));
    return std::optional<ValueId>(vd);
  };
  TESSERA_ASSIGN_OR_RETURN(out.h0, state(5, "initial_h"));
  if (s.cell == Cell::kLstm) {
    TESSERA_ASSIGN_OR_RETURN(out.c0, state(6, "initial_c"));
    if (ImportContext::has_input(node, 7)) {
      TESSERA_ASSIGN_OR_RETURN(ValueId p, ctx.input(node, 7));
      if (ctx.value(p).shape != std::vector<int64_t>{s.directions, 3 * s.hidden})
        return invalid("P " + graph::shape_string(ctx.value(p).shape) + " is not [" + std::to_string(s.directions) +
                       ", " + std::to_string(3 * s.hidden) + "]");
      TESSERA_ASSIGN_OR_RETURN(ValueId pd, e.at(p, d));
      TESSERA_ASSIGN_OR_RETURN(std::vector<ValueId> ps, e.ops("Split", {pd}, 3, {int_attr("axis", 0)}));
      out.pi = ps[0], out.po = ps[1], out.pf = ps[2];
    }
  }
  return out;
}

// The step mask of a shorter sequence: where t < sequence_lens[b], [B, 1].
Result<ValueId> step_mask(Emitter& e, ValueId lens, int64_t t) {
  const ValueId step = e.ctx().g.add_constant(
      "step" + std::to_string(t), graph::Constant::from_doubles(e.ctx().value(lens).dtype, {}, {double(t)}));
  TESSERA_ASSIGN_OR_RETURN(ValueId inside, e.op("Less", {step, lens}));
  return e.op("Unsqueeze", {inside, e.ints({1})});
}

struct DirectionOutputs {
  ValueId y;       // [T, 1, B, H]
  ValueId last_h;  // [1, B, H]
  std::optional<ValueId> last_c;
};

// One direction over the whole sequence `x` [T, B, I].
Result<DirectionOutputs> run_direction(Emitter& e, const Spec& s, const Direction& d, ValueId x, bool reverse,
                                       std::optional<ValueId> lens) {
  TESSERA_ASSIGN_OR_RETURN(ValueId projected, e.op("MatMul", {x, d.wt}));
  TESSERA_ASSIGN_OR_RETURN(projected, add_optional(e, projected, d.bias));
  std::optional<ValueId> rzr_t, rh_t;
  if (s.cell == Cell::kGru) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<ValueId> rs,
                             e.ops("Split", {d.rt, e.ints({2 * s.hidden, s.hidden})}, 2, {int_attr("axis", 1)}));
    rzr_t = rs[0], rh_t = rs[1];
  }
  std::optional<ValueId> h = d.h0, c = d.c0;
  std::vector<ValueId> ys(static_cast<size_t>(s.t));
  for (int64_t k = 0; k < s.t; ++k) {
    const int64_t t = reverse ? s.t - 1 - k : k;
    TESSERA_ASSIGN_OR_RETURN(ValueId xt, e.at(projected, t));
    ValueId h_new;
    std::optional<ValueId> c_new;
    if (s.cell == Cell::kLstm) {
      TESSERA_ASSIGN_OR_RETURN(std::optional<ValueId> hr, recurrent(e, d.rt, h));
      TESSERA_ASSIGN_OR_RETURN(ValueId gates, add_optional(e, xt, hr));
      TESSERA_ASSIGN_OR_RETURN(auto hc, lstm_step(e, s, d, gates, c));
      h_new = hc.first;
      c_new = hc.second;
    } else if (s.cell == Cell::kGru) {
      TESSERA_ASSIGN_OR_RETURN(h_new, gru_step(e, s, d, xt, h, *rzr_t, *rh_t));
    } else {
      TESSERA_ASSIGN_OR_RETURN(std::optional<ValueId> hr, recurrent(e, d.rt, h));
      TESSERA_ASSIGN_OR_RETURN(ValueId pre, add_optional(e, xt, hr));
      TESSERA_ASSIGN_OR_RETURN(pre, clip(e, s, pre));
      TESSERA_ASSIGN_OR_RETURN(h_new, activate(e, d.f[0], pre));
    }
    ValueId y = h_new;
    if (lens) {
      // Past its length a sequence keeps its state and writes zeros.
      TESSERA_ASSIGN_OR_RETURN(ValueId mask, step_mask(e, *lens, t));
      TESSERA_ASSIGN_OR_RETURN(ValueId zero, e.op("Mul", {h_new, e.scalar(0.0f)}));
      TESSERA_ASSIGN_OR_RETURN(y, e.op("Where", {mask, h_new, zero}));
      TESSERA_ASSIGN_OR_RETURN(h_new, e.op("Where", {mask, h_new, h ? *h : zero}));
      if (c_new) {
        TESSERA_ASSIGN_OR_RETURN(ValueId c_zero, e.op("Mul", {*c_new, e.scalar(0.0f)}));
        TESSERA_ASSIGN_OR_RETURN(c_new, e.op("Where", {mask, *c_new, c ? *c : c_zero}));
      }
    }
    ys[static_cast<size_t>(t)] = y;
    h = h_new;
    c = c_new;
  }
  // The steps' outputs [B, H] joined once, [T * B, H], then seen as
  // [T, 1, B, H] (no copy per step).
  DirectionOutputs out;
  TESSERA_ASSIGN_OR_RETURN(ValueId joined, e.concat(ys, 0));
  TESSERA_ASSIGN_OR_RETURN(out.y, e.op("Reshape", {joined, e.ints({s.t, 1, s.batch, s.hidden})}));
  TESSERA_ASSIGN_OR_RETURN(out.last_h, e.op("Unsqueeze", {*h, e.ints({0})}));
  if (c) {
    TESSERA_ASSIGN_OR_RETURN(out.last_c, e.op("Unsqueeze", {*c, e.ints({0})}));
  }
  return out;
}

// sequence_lens where it matters: nullopt when absent or every length is the
// whole sequence; a forward pass takes any other.
Result<std::optional<ValueId>> sequence_lengths(ImportContext& ctx, const Node& node, const Spec& s) {
  if (!ImportContext::has_input(node, 4)) return std::optional<ValueId>();
  TESSERA_ASSIGN_OR_RETURN(ValueId lens, ctx.input(node, 4));
  if (ctx.value(lens).shape != std::vector<int64_t>{s.batch} || !ctx.value(lens).dtype.is_int())
    return invalid("sequence_lens " + graph::shape_string(ctx.value(lens).shape) + " is not int32 [" +
                   std::to_string(s.batch) + "]");
  if (const graph::Constant* c = ctx.constant_input(node, 4)) {
    bool whole = true;
    for (double v : c->to_doubles()) {
      if (v < 1 || v > static_cast<double>(s.t))
        return invalid("sequence_lens holds " + std::to_string(static_cast<int64_t>(v)) + ", outside [1, " +
                       std::to_string(s.t) + "]");
      whole = whole && v == static_cast<double>(s.t);
    }
    if (whole) return std::optional<ValueId>();
  }
  if (s.directions != 1 || s.reverse_only)
    return invalid("sequence_lens shorter than the sequence are supported for the forward direction only");
  return std::optional<ValueId>(lens);
}

Status convert_recurrent(ImportContext& ctx, const Node& node, Cell cell) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  TESSERA_ASSIGN_OR_RETURN(ValueId w, ctx.input(node, 1));
  if (ctx.value(x).dtype != DType::f32()) return invalid("X is " + ctx.value(x).dtype.to_string() + ", not float32");
  TESSERA_ASSIGN_OR_RETURN(Spec s, read_spec(node, cell, ctx.value(x).shape, ctx.value(w).shape));
  TESSERA_ASSIGN_OR_RETURN(std::optional<ValueId> lens, sequence_lengths(ctx, node, s));
  const bool batch_first = s.batch_first;
  Emitter e(ctx, base_name(node));
  if (batch_first) {
    TESSERA_ASSIGN_OR_RETURN(x, e.op("Transpose", {x}, {ints_attr("perm", {1, 0, 2})}));
  }
  std::vector<ValueId> ys, hs, cs;
  for (int64_t d = 0; d < s.directions; ++d) {
    TESSERA_ASSIGN_OR_RETURN(Direction dir, read_direction(e, node, s, d));
    const bool reverse = s.reverse_only || d == 1;
    TESSERA_ASSIGN_OR_RETURN(DirectionOutputs out, run_direction(e, s, dir, x, reverse, lens));
    ys.push_back(out.y);
    hs.push_back(out.last_h);
    if (out.last_c) cs.push_back(*out.last_c);
  }
  auto joined = [&](const std::vector<ValueId>& parts, int64_t axis) -> Result<ValueId> {
    if (parts.size() == 1) return parts[0];
    return e.op("Concat", parts, {int_attr("axis", axis)});
  };
  TESSERA_ASSIGN_OR_RETURN(ValueId y, joined(ys, 1));    // [T, D, B, H]
  TESSERA_ASSIGN_OR_RETURN(ValueId y_h, joined(hs, 0));  // [D, B, H]
  std::optional<ValueId> y_c;
  if (!cs.empty()) {
    TESSERA_ASSIGN_OR_RETURN(y_c, joined(cs, 0));
  }
  if (batch_first) {
    TESSERA_ASSIGN_OR_RETURN(y, e.op("Transpose", {y}, {ints_attr("perm", {2, 0, 1, 3})}));
    TESSERA_ASSIGN_OR_RETURN(y_h, e.op("Transpose", {y_h}, {ints_attr("perm", {1, 0, 2})}));
    if (y_c) {
      TESSERA_ASSIGN_OR_RETURN(y_c, e.op("Transpose", {*y_c}, {ints_attr("perm", {1, 0, 2})}));
    }
  }
  const std::vector<std::optional<ValueId>> outputs = {y, y_h, y_c};
  for (int i = 0; i < node.output_size() && i < 3; ++i)
    if (!node.output(i).empty() && outputs[static_cast<size_t>(i)])
      ctx.values[node.output(i)] = *outputs[static_cast<size_t>(i)];
  return Status::ok();
}

Status convert_lstm(ImportContext& ctx, const Node& node) {
  return convert_recurrent(ctx, node, Cell::kLstm);
}
Status convert_gru(ImportContext& ctx, const Node& node) {
  return convert_recurrent(ctx, node, Cell::kGru);
}
Status convert_rnn(ImportContext& ctx, const Node& node) {
  return convert_recurrent(ctx, node, Cell::kRnn);
}

}  // namespace

void add_recurrent_converters(std::map<std::string, Converter>& table) {
  table["LSTM"] = convert_lstm;
  table["GRU"] = convert_gru;
  table["RNN"] = convert_rnn;
}

}  // namespace tessera::frontend::detail
