// Control flow the importer resolves at compile time: an If whose condition
// is known once constants are folded and input shapes bound (a shape check,
// a sample rate bound with --input-value) becomes the nodes of the branch it
// takes, nested Ifs included; a Loop whose trip count and conditions are so
// known is unrolled (a scripted for-loop over a static length). The rest
// runs on the device (onnx_control_bodies.cc): an If on data, a Loop whose
// trip count or condition comes from the data or that is too long to unroll.
#include <algorithm>

#include "compiler/frontend/onnx_context.h"
#include "compiler/frontend/onnx_emitter.h"

namespace tessera::frontend::detail {

namespace {

using Node = onnx::NodeProto;

Status convert_if(ImportContext& ctx, const Node& node) {
  const graph::Constant* cond = ctx.constant_input(node, 0);
  if (!cond) {
    TESSERA_ASSIGN_OR_RETURN(graph::ValueId c, ctx.input(node, 0));
    return convert_if_at_run_time(ctx, node, c);
  }
  if (cond->num_elements() != 1)
    return invalid("the condition has " + std::to_string(cond->num_elements()) + " elements, not one");
  const bool taken = cond->at(0) != 0;
  const char* which = taken ? "then_branch" : "else_branch";
  const onnx::AttributeProto* attr = find_attr(node, which);
  if (!attr || attr->type() != onnx::AttributeProto::GRAPH)
    return invalid(std::string("it has no ") + which + " graph");
  const onnx::GraphProto& branch = attr->g();
  if (branch.output_size() != node.output_size())
    return invalid(std::string(which) + " has " + std::to_string(branch.output_size()) + " outputs, the If " +
                   std::to_string(node.output_size()));
  TESSERA_RETURN_IF_ERROR(convert_subgraph(ctx, branch, which));
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i).empty()) continue;
    auto it = ctx.values.find(branch.output(i).name());
    if (it == ctx.values.end())
      return invalid(std::string(which) + " output '" + branch.output(i).name() + "' is never computed");
    ctx.values[node.output(i)] = it->second;
  }
  return Status::ok();
}

// Limits of unrolling: iterations, and nodes converted in all.
constexpr int64_t kMaxUnrolledIterations = 4096;
constexpr int64_t kMaxUnrolledNodes = 200000;

// `g` with every name in `names` renamed by `rename` (inputs and outputs of
// its nodes, its outputs, and reads of them inside nested subgraphs), and
// its nodes' names suffixed by `suffix`.
void rename_graph(onnx::GraphProto* g, const std::map<std::string, std::string>& names, const std::string& suffix) {
  auto renamed = [&](std::string* name) {
    if (auto it = names.find(*name); it != names.end()) *name = it->second;
  };
  for (auto& n : *g->mutable_node()) {
    for (auto& in : *n.mutable_input()) renamed(&in);
    for (auto& out : *n.mutable_output()) renamed(&out);
    if (!n.name().empty()) n.set_name(n.name() + suffix);
    for (auto& a : *n.mutable_attribute()) {
      if (a.type() == onnx::AttributeProto::GRAPH) rename_graph(a.mutable_g(), names, suffix);
      for (auto& sub : *a.mutable_graphs()) rename_graph(&sub, names, suffix);
    }
  }
  for (auto& o : *g->mutable_output()) renamed(o.mutable_name());
  for (auto& init : *g->mutable_initializer()) renamed(init.mutable_name());
}

// A scalar's value when it is a constant (a trip count, a condition).
std::optional<double> constant_scalar(const ImportContext& ctx, graph::ValueId v) {
  if (ImportContext::is_composite(v) || !ctx.g.is_constant(v) || graph::shape_size(ctx.value(v).shape) != 1)
    return std::nullopt;
  return ctx.g.constant(v).at(0);
}

}  // namespace

Result<std::vector<graph::ValueId>> unroll_body(ImportContext& ctx, const onnx::GraphProto& body,
                                                const std::vector<graph::ValueId>& inputs, const std::string& base,
                                                int64_t k) {
  const std::string suffix = "@" + base + "." + std::to_string(k);
  std::map<std::string, std::string> names;
  for (const auto& in : body.input()) names[in.name()] = in.name() + suffix;
  for (const auto& init : body.initializer()) names[init.name()] = init.name() + suffix;
  for (const auto& n : body.node())
    for (const std::string& o : n.output())
      if (!o.empty()) names[o] = o + suffix;
  onnx::GraphProto step = body;
  rename_graph(&step, names, suffix);
  step.clear_input();
  for (int i = 0; i < body.input_size(); ++i)
    ctx.values[names.at(body.input(i).name())] = inputs[static_cast<size_t>(i)];
  TESSERA_RETURN_IF_ERROR(convert_subgraph(ctx, step, "body (iteration " + std::to_string(k) + ")"));
  std::vector<graph::ValueId> out;
  for (int i = 0; i < step.output_size(); ++i) {
    auto it = ctx.values.find(step.output(i).name());
    if (it == ctx.values.end()) return invalid("body output '" + body.output(i).name() + "' is never computed");
    out.push_back(it->second);
  }
  return out;
}

namespace {

// `parts` stacked along a new axis `axis`: one Unsqueeze each, one Concat.
Result<graph::ValueId> stack(Emitter& e, const std::vector<graph::ValueId>& parts, int64_t axis) {
  std::vector<graph::ValueId> expanded;
  for (graph::ValueId v : parts) {
    TESSERA_ASSIGN_OR_RETURN(graph::ValueId u, e.op("Unsqueeze", {v, e.ints({axis})}));
    expanded.push_back(u);
  }
  return e.concat(std::move(expanded), axis);
}

// Loop(M, cond, v...) with body (i, cond, v...) -> (cond, v..., scan...):
// unrolled when the trip count and every condition are known at import.
Status convert_loop(ImportContext& ctx, const Node& node) {
  const onnx::AttributeProto* attr = find_attr(node, "body");
  if (!attr || attr->type() != onnx::AttributeProto::GRAPH) return invalid("it has no body graph");
  const onnx::GraphProto& body = attr->g();
  const int carried = node.input_size() - 2;
  if (carried < 0) return invalid("a Loop takes a trip count and a condition (either may be empty)");
  if (body.input_size() != carried + 2 || body.output_size() < carried + 1)
    return invalid("the body takes " + std::to_string(body.input_size()) + " inputs and gives " +
                   std::to_string(body.output_size()) + " outputs; " + std::to_string(carried) +
                   " carried values need " + std::to_string(carried + 2) + " and at least " +
                   std::to_string(carried + 1));
  const int scans = body.output_size() - carried - 1;
  std::optional<double> trips, cond = 1.0;
  if (ImportContext::has_input(node, 0)) {
    TESSERA_ASSIGN_OR_RETURN(graph::ValueId m, ctx.input(node, 0));
    trips = constant_scalar(ctx, m);
  }
  if (ImportContext::has_input(node, 1)) {
    TESSERA_ASSIGN_OR_RETURN(graph::ValueId c, ctx.input(node, 1));
    cond = constant_scalar(ctx, c);
  }
  if (!ImportContext::has_input(node, 0) && !ImportContext::has_input(node, 1))
    return invalid("it has neither a trip count nor a condition: it would never stop");
  // Known only from the data, or too long to unroll: the device runs it.
  const bool unrollable =
      (trips || !ImportContext::has_input(node, 0)) && cond &&
      (!trips || (*trips <= kMaxUnrolledIterations && *trips * body.node_size() <= kMaxUnrolledNodes));
  if (!unrollable) return convert_loop_at_run_time(ctx, node, trips);
  std::vector<graph::ValueId> values;  // tensors, or sequences and optionals
  for (int i = 0; i < carried; ++i) {
    TESSERA_ASSIGN_OR_RETURN(graph::ValueId v, ctx.any_input(node, i + 2));
    values.push_back(v);
  }
  std::vector<std::vector<graph::ValueId>> scanned(static_cast<size_t>(scans));
  const std::string base = base_name(node);
  for (int64_t k = 0; (!trips || k < static_cast<int64_t>(*trips)) && *cond != 0; ++k) {
    // A condition that has not turned false yet: the device runs the loop
    // (the iterations unrolled so far are left unread, and removed).
    if (k >= kMaxUnrolledIterations || (k + 1) * body.node_size() > kMaxUnrolledNodes)
      return convert_loop_at_run_time(ctx, node, trips);
    std::vector<graph::ValueId> inputs = {
        ctx.g.add_constant(base + ".iteration" + std::to_string(k), graph::Constant::from_int64s({}, {k})),
        ctx.g.add_constant(base + ".condition" + std::to_string(k),
                           graph::Constant::from_doubles(DType::boolean(), {}, {*cond}))};
    inputs.insert(inputs.end(), values.begin(), values.end());
    TESSERA_ASSIGN_OR_RETURN(std::vector<graph::ValueId> out, unroll_body(ctx, body, inputs, base, k));
    cond = constant_scalar(ctx, out[0]);
    if (!cond) return convert_loop_at_run_time(ctx, node, trips);
    for (int i = 0; i < carried; ++i) values[static_cast<size_t>(i)] = out[static_cast<size_t>(i + 1)];
    for (int j = 0; j < scans; ++j)
      scanned[static_cast<size_t>(j)].push_back(out[static_cast<size_t>(carried + 1 + j)]);
  }
  for (int i = 0; i < carried && i < node.output_size(); ++i)
    if (!node.output(i).empty()) ctx.values[node.output(i)] = values[static_cast<size_t>(i)];
  // Each scan output: the iterations' values stacked on a new first axis.
  Emitter e(ctx, base);
  for (int j = 0; j < scans && carried + j < node.output_size(); ++j) {
    if (node.output(carried + j).empty()) continue;
    const auto& per_iteration = scanned[static_cast<size_t>(j)];
    if (per_iteration.empty())
      return invalid("it runs no iteration, so its scan output '" + node.output(carried + j) + "' has no shape");
    TESSERA_ASSIGN_OR_RETURN(ctx.values[node.output(carried + j)], stack(e, per_iteration, 0));
  }
  return Status::ok();
}

// A Scan's m scan inputs, n states (after `skip` leading inputs: opset 8's
// sequence_lens) and k scan outputs, checked against its body's signature.
struct ScanCounts {
  int m = 0, n = 0, k = 0;
};

Result<ScanCounts> scan_counts(const Node& node, const onnx::GraphProto& body, int skip) {
  ScanCounts c;
  c.m = static_cast<int>(attr_int(node, "num_scan_inputs", -1));
  c.n = node.input_size() - skip - c.m;
  if (c.m <= 0 || c.n < 0)
    return invalid("num_scan_inputs " + std::to_string(c.m) + " does not fit its " + std::to_string(node.input_size()) +
                   " inputs" + (skip ? " (sequence_lens first)" : ""));
  c.k = body.output_size() - c.n;
  if (body.input_size() != c.n + c.m || c.k < 0)
    return invalid("the body takes " + std::to_string(body.input_size()) + " inputs and gives " +
                   std::to_string(body.output_size()) + "; " + std::to_string(c.n) + " states and " +
                   std::to_string(c.m) + " scan inputs need " + std::to_string(c.n + c.m) + " and at least " +
                   std::to_string(c.n));
  return c;
}

// Scan of opset 8: Scan(sequence_lens, state..., scan inputs...), every
// tensor with a batch axis first and the scan inputs' sequence axis second
// (directions per scan input); each batch element is scanned on its own,
// unrolled, and the results stacked back along the batch axis.
// sequence_lens must be absent, or a constant as long as every sequence.
Status convert_scan_8(ImportContext& ctx, const Node& node, const onnx::GraphProto& body) {
  TESSERA_ASSIGN_OR_RETURN(const ScanCounts counts, scan_counts(node, body, 1));
  const int m = counts.m, n = counts.n, k_outputs = counts.k;
  std::vector<int64_t> directions = attr_ints(node, "directions", std::vector<int64_t>(static_cast<size_t>(m), 0));
  if (static_cast<int>(directions.size()) != m)
    return invalid("directions has " + std::to_string(directions.size()) + " values, not " + std::to_string(m));
  std::vector<graph::ValueId> states, inputs;
  for (int i = 1; i < node.input_size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(graph::ValueId v, ctx.input(node, i));
    if (ctx.value(v).shape.size() < (i <= n ? 1u : 2u))
      return invalid("input " + std::to_string(i) + " has no batch" + (i <= n ? "" : " and sequence") + " axis");
    (i <= n ? states : inputs).push_back(v);
  }
  const int64_t batch = ctx.value(inputs[0]).shape[0], length = ctx.value(inputs[0]).shape[1];
  for (graph::ValueId v : inputs)
    if (ctx.value(v).shape[0] != batch || ctx.value(v).shape[1] != length)
      return invalid("its scan inputs differ in batch or sequence length");
  for (graph::ValueId v : states)
    if (ctx.value(v).shape[0] != batch) return invalid("a state's batch differs from the scan inputs'");
  if (ImportContext::has_input(node, 0)) {
    const graph::Constant* lens = ctx.constant_input(node, 0);
    if (!lens)
      return invalid("its sequence_lens are known only at run time: every sequence must have the same, static, length");
    for (int64_t b = 0; b < lens->num_elements(); ++b)
      if (lens->at(b) != static_cast<double>(length))
        return invalid("its sequence_lens give a length other than the inputs' " + std::to_string(length) +
                       ": sequences of several lengths are not supported");
  }
  if (length <= 0 || batch <= 0) return invalid("its scan inputs are empty");
  if (batch * length > kMaxUnrolledIterations || batch * length * body.node_size() > kMaxUnrolledNodes)
    return invalid("a Scan over " + std::to_string(batch) + " x " + std::to_string(length) +
                   " steps is more than is unrolled");
  const std::string base = base_name(node);
  Emitter e(ctx, base);
  auto at = [&](graph::ValueId v, int64_t index) {
    return e.op("Gather",
                {v, ctx.g.add_constant(base + ".at" + std::to_string(index) + "." + std::to_string(v),
                                       graph::Constant::from_int64s({}, {index}))},
                {int_attr("axis", 0)});
  };
  std::vector<std::vector<graph::ValueId>> final_states(static_cast<size_t>(n)),
      scanned(static_cast<size_t>(k_outputs));
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<graph::ValueId> state, sequence;
    for (graph::ValueId v : states) {
      TESSERA_ASSIGN_OR_RETURN(graph::ValueId s, at(v, b));
      state.push_back(s);
    }
    for (graph::ValueId v : inputs) {
      TESSERA_ASSIGN_OR_RETURN(graph::ValueId s, at(v, b));
      sequence.push_back(s);
    }
    std::vector<std::vector<graph::ValueId>> steps(static_cast<size_t>(k_outputs));
    for (int64_t t = 0; t < length; ++t) {
      std::vector<graph::ValueId> bound = state;
      for (int j = 0; j < m; ++j) {
        TESSERA_ASSIGN_OR_RETURN(graph::ValueId element, at(sequence[static_cast<size_t>(j)],
                                                            directions[static_cast<size_t>(j)] ? length - 1 - t : t));
        bound.push_back(element);
      }
      TESSERA_ASSIGN_OR_RETURN(std::vector<graph::ValueId> out, unroll_body(ctx, body, bound, base, b * length + t));
      for (int i = 0; i < n; ++i) state[static_cast<size_t>(i)] = out[static_cast<size_t>(i)];
      for (int k = 0; k < k_outputs; ++k) steps[static_cast<size_t>(k)].push_back(out[static_cast<size_t>(n + k)]);
    }
    for (int i = 0; i < n; ++i) final_states[static_cast<size_t>(i)].push_back(state[static_cast<size_t>(i)]);
    for (int k = 0; k < k_outputs; ++k) {
      TESSERA_ASSIGN_OR_RETURN(graph::ValueId stacked, stack(e, steps[static_cast<size_t>(k)], 0));
      scanned[static_cast<size_t>(k)].push_back(stacked);
    }
  }
  for (int i = 0; i < n && i < node.output_size(); ++i)
    if (!node.output(i).empty()) {
      TESSERA_ASSIGN_OR_RETURN(ctx.values[node.output(i)], stack(e, final_states[static_cast<size_t>(i)], 0));
    }
  for (int k = 0; k < k_outputs && n + k < node.output_size(); ++k)
    if (!node.output(n + k).empty()) {
      TESSERA_ASSIGN_OR_RETURN(ctx.values[node.output(n + k)], stack(e, scanned[static_cast<size_t>(k)], 0));
    }
  return Status::ok();
}

// Scan(state..., scan inputs...) with body (state..., element...) ->
// (state..., scan output element...): unrolled over the scan inputs' length
// (static), each in its direction along its axis.
Status convert_scan(ImportContext& ctx, const Node& node) {
  const onnx::AttributeProto* attr = find_attr(node, "body");
  if (!attr || attr->type() != onnx::AttributeProto::GRAPH) return invalid("it has no body graph");
  const onnx::GraphProto& body = attr->g();
  if (ctx.opset < 9) return convert_scan_8(ctx, node, body);
  TESSERA_ASSIGN_OR_RETURN(const ScanCounts counts, scan_counts(node, body, 0));
  const int m = counts.m, n = counts.n, k_outputs = counts.k;
  auto per = [&](const char* name, int count) -> Result<std::vector<int64_t>> {
    std::vector<int64_t> v = attr_ints(node, name, std::vector<int64_t>(static_cast<size_t>(count), 0));
    if (static_cast<int>(v.size()) != count)
      return invalid(std::string(name) + " has " + std::to_string(v.size()) + " values, not " + std::to_string(count));
    return v;
  };
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> in_axes, per("scan_input_axes", m));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> in_dirs, per("scan_input_directions", m));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> out_axes, per("scan_output_axes", k_outputs));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> out_dirs, per("scan_output_directions", k_outputs));
  std::vector<graph::ValueId> states, inputs;
  for (int i = 0; i < node.input_size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(graph::ValueId v, ctx.input(node, i));
    (i < n ? states : inputs).push_back(v);
  }
  int64_t length = -1;
  for (int j = 0; j < m; ++j) {
    const auto shape = ctx.value(inputs[static_cast<size_t>(j)]).shape;
    TESSERA_ASSIGN_OR_RETURN(in_axes[static_cast<size_t>(j)],
                             norm_axis(in_axes[static_cast<size_t>(j)], shape.size(), "scan_input_axes"));
    const int64_t l = shape[static_cast<size_t>(in_axes[static_cast<size_t>(j)])];
    if (length >= 0 && l != length)
      return invalid("its scan inputs have lengths " + std::to_string(length) + " and " + std::to_string(l));
    length = l;
  }
  if (length <= 0) return invalid("its scan inputs are empty: its scan outputs would have no shape");
  if (length > kMaxUnrolledIterations || length * body.node_size() > kMaxUnrolledNodes)
    return invalid("a Scan over " + std::to_string(length) + " steps is more than is unrolled");
  const std::string base = base_name(node);
  Emitter e(ctx, base);
  std::vector<std::vector<graph::ValueId>> scanned(static_cast<size_t>(k_outputs));
  for (int64_t t = 0; t < length; ++t) {
    std::vector<graph::ValueId> bound = states;
    for (int j = 0; j < m; ++j) {
      const int64_t at = in_dirs[static_cast<size_t>(j)] ? length - 1 - t : t;
      const graph::ValueId index = ctx.g.add_constant(base + ".step" + std::to_string(t) + "." + std::to_string(j),
                                                      graph::Constant::from_int64s({}, {at}));
      TESSERA_ASSIGN_OR_RETURN(graph::ValueId element, e.op("Gather", {inputs[static_cast<size_t>(j)], index},
                                                            {int_attr("axis", in_axes[static_cast<size_t>(j)])}));
      bound.push_back(element);
    }
    TESSERA_ASSIGN_OR_RETURN(std::vector<graph::ValueId> out, unroll_body(ctx, body, bound, base, t));
    for (int i = 0; i < n; ++i) states[static_cast<size_t>(i)] = out[static_cast<size_t>(i)];
    for (int k = 0; k < k_outputs; ++k) scanned[static_cast<size_t>(k)].push_back(out[static_cast<size_t>(n + k)]);
  }
  for (int i = 0; i < n && i < node.output_size(); ++i)
    if (!node.output(i).empty()) ctx.values[node.output(i)] = states[static_cast<size_t>(i)];
  for (int k = 0; k < k_outputs && n + k < node.output_size(); ++k) {
    if (node.output(n + k).empty()) continue;
    std::vector<graph::ValueId> parts = scanned[static_cast<size_t>(k)];
    if (out_dirs[static_cast<size_t>(k)]) std::reverse(parts.begin(), parts.end());
    const size_t rank = ctx.value(parts[0]).shape.size() + 1;
    TESSERA_ASSIGN_OR_RETURN(int64_t axis, norm_axis(out_axes[static_cast<size_t>(k)], rank, "scan_output_axes"));
    TESSERA_ASSIGN_OR_RETURN(ctx.values[node.output(n + k)], stack(e, parts, axis));
  }
  return Status::ok();
}

}  // namespace

Status convert_subgraph(ImportContext& ctx, const onnx::GraphProto& graph, const std::string& where) {
  if (graph.input_size() != 0)
    return invalid(where + " takes inputs (" + std::to_string(graph.input_size()) + "): not an If branch");
  return convert_body_nodes(ctx, graph, where);
}

Status convert_body_nodes(ImportContext& ctx, const onnx::GraphProto& graph, const std::string& where) {
  for (const auto& init : graph.initializer()) {
    auto c = constant_of_tensor(init);
    if (!c.is_ok()) return invalid(where + " initializer '" + init.name() + "': " + c.status().message());
    ctx.values[init.name()] = ctx.g.add_constant(init.name(), std::move(c).value());
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<int> order, topological_order(graph));
  for (int i : order) {
    const Node& n = graph.node(i);
    Status st = convert_node(ctx, n);
    if (!st.is_ok()) return invalid(where + " > " + node_label(n, i) + ": " + st.message());
  }
  return Status::ok();
}

void add_control_flow_converters(std::map<std::string, Converter>& table) {
  table["If"] = convert_if;
  table["Loop"] = convert_loop;
  table["Scan"] = convert_scan;
}

}  // namespace tessera::frontend::detail
