// Control flow the device runs: an If whose condition, or a Loop whose trip
// count or condition, is known only from the data. Each branch or body
// becomes a graph of its own (graph::ControlAttrs), whose inputs are the
// body's own (a loop's iteration and carried values) and then the outer
// values it reads; outer constants are copied in, so that they fold there.
#include <algorithm>

#include "compiler/frontend/onnx_context.h"
#include "compiler/frontend/onnx_emitter.h"

namespace tessera::frontend::detail {

namespace {

using graph::ValueId;

// The outer values `graphs` read that are not constants, by name, in a
// fixed order: what a control node passes its bodies.
Result<std::vector<std::string>> captured_values(const ImportContext& ctx,
                                                 const std::vector<const onnx::GraphProto*>& graphs) {
  std::set<std::string> names;
  for (const onnx::GraphProto* g : graphs) {
    const std::set<std::string> free = free_names(*g);
    names.insert(free.begin(), free.end());
  }
  std::vector<std::string> captured;
  for (const std::string& name : names) {
    auto it = ctx.values.find(name);
    if (it == ctx.values.end()) return invalid("its body reads '" + name + "', which nothing defines before it");
    if (ImportContext::is_composite(it->second))
      return invalid("its body reads '" + name + "', " + ctx.describe(it->second) +
                     ": a body the device runs reads tensors only");
    if (!ctx.g.is_constant(it->second)) captured.push_back(name);
  }
  return captured;
}

// A context for a body of `outer`: its graph's inputs are `own` (the
// body's inputs, by name, with their types) and then the `captured` outer
// values; every other outer name the body reads is a constant, copied in.
ImportContext open_body(const ImportContext& outer, const onnx::GraphProto& body,
                        const std::vector<std::pair<std::string, graph::Value>>& own,
                        const std::vector<std::string>& captured) {
  ImportContext sub;
  sub.opset = outer.opset;
  for (const auto& [name, v] : own) sub.values[name] = sub.g.add_input(name, v.shape, v.dtype);
  for (const std::string& name : captured) {
    const graph::Value& v = outer.value(outer.values.at(name));
    sub.values[name] = sub.g.add_input(name, v.shape, v.dtype);
  }
  for (const std::string& name : free_names(body)) {
    if (sub.values.count(name)) continue;
    const ValueId v = outer.values.at(name);  // captured_values found it, and it is a constant
    sub.values[name] = sub.g.add_constant(name, outer.g.constant(v));
  }
  return sub;
}

// The values of `body`'s outputs in `sub`, after its nodes are converted.
Result<std::vector<ValueId>> body_outputs(ImportContext& sub, const onnx::GraphProto& body, const std::string& where) {
  TESSERA_RETURN_IF_ERROR(convert_body_nodes(sub, body, where));
  std::vector<ValueId> outs;
  for (const auto& o : body.output()) {
    auto it = sub.values.find(o.name());
    if (it == sub.values.end()) return invalid(where + " output '" + o.name() + "' is never computed");
    outs.push_back(it->second);
  }
  return outs;
}

std::shared_ptr<const graph::Graph> close_body(ImportContext& sub, std::vector<ValueId> outputs) {
  sub.g.set_outputs(std::move(outputs));
  return std::make_shared<const graph::Graph>(std::move(sub.g));
}

// Binds the outputs of a control node added to `ctx` with `values` (their
// types), named by `node`'s outputs. Where `like` (values of `like_ctx`,
// one per output of `node`) holds sequences or optionals, `values` are their
// tensors flattened (flatten_value), and each output is rebuilt from them.
Status add_control_node(ImportContext& ctx, const onnx::NodeProto& node, graph::OpKind kind, graph::ControlAttrs attrs,
                        std::vector<ValueId> inputs, const std::vector<graph::Value>& values,
                        const ImportContext* like_ctx = nullptr, const std::vector<ValueId>& like = {}) {
  graph::Node n{base_name(node), kind, std::move(attrs), std::move(inputs), {}};
  // The name of each flattened value: the output's, indexed within a composite.
  std::vector<std::string> names;
  for (int i = 0; i < node.output_size(); ++i) {
    const size_t count = like_ctx ? flatten_value(*like_ctx, like[static_cast<size_t>(i)]).size() : 1;
    const bool whole = !like_ctx || !ImportContext::is_composite(like[static_cast<size_t>(i)]);
    for (size_t k = 0; k < count; ++k)
      names.push_back(node.output(i).empty() ? ""
                      : whole                ? node.output(i)
                                             : node.output(i) + "[" + std::to_string(k) + "]");
  }
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string name = i < names.size() && !names[i].empty() ? names[i] : n.name + ".out" + std::to_string(i);
    n.outputs.push_back(ctx.g.add_value(name, values[i].shape, values[i].dtype));
  }
  size_t next = 0;
  for (int i = 0; i < node.output_size() && next < n.outputs.size(); ++i) {
    const ValueId v =
        like_ctx ? rebuild_value(ctx, *like_ctx, like[static_cast<size_t>(i)], n.outputs, &next) : n.outputs[next++];
    if (!node.output(i).empty()) ctx.values[node.output(i)] = v;
  }
  ctx.g.add_node(std::move(n));
  return Status::ok();
}

Result<std::vector<ValueId>> inputs_named(const ImportContext& ctx, const std::vector<std::string>& names) {
  std::vector<ValueId> ids;
  for (const std::string& name : names) ids.push_back(ctx.values.at(name));
  return ids;
}

// A Loop's carried values (its inputs 2...), tensors only, into `initial`,
// and the body's inputs that receive them into `own`.
Status carried_values(const ImportContext& ctx, const onnx::NodeProto& node, const onnx::GraphProto& body,
                      std::vector<ValueId>* initial, std::vector<std::pair<std::string, graph::Value>>* own) {
  for (int k = 2; k < node.input_size(); ++k) {
    TESSERA_ASSIGN_OR_RETURN(ValueId v, ctx.any_input(node, k));
    if (ImportContext::is_composite(v))
      return invalid("it carries '" + node.input(k) + "', " + ctx.describe(v) +
                     ", and its trip count or condition is known only at run time: a Loop the device runs carries "
                     "tensors only (bind what the trip count depends on with --input-value or --input-shape, and the "
                     "loop is unrolled)");
    initial->push_back(v);
    own->emplace_back(body.input(k).name(), ctx.value(v));
  }
  return Status::ok();
}

}  // namespace

Status convert_if_at_run_time(ImportContext& ctx, const onnx::NodeProto& node, ValueId cond) {
  if (graph::shape_size(ctx.value(cond).shape) != 1 || ctx.value(cond).dtype != DType::boolean())
    return invalid("its condition is " + ctx.value(cond).dtype.to_string() + " " +
                   graph::shape_string(ctx.value(cond).shape) + ", not one bool");
  const char* names[2] = {"then_branch", "else_branch"};
  const onnx::GraphProto* branches[2];
  for (int b = 0; b < 2; ++b) {
    const onnx::AttributeProto* attr = find_attr(node, names[b]);
    if (!attr || attr->type() != onnx::AttributeProto::GRAPH)
      return invalid(std::string("it has no ") + names[b] + " graph");
    branches[b] = &attr->g();
    if (branches[b]->output_size() != node.output_size())
      return invalid(std::string(names[b]) + " has " + std::to_string(branches[b]->output_size()) +
                     " outputs, the If " + std::to_string(node.output_size()));
    if (branches[b]->input_size() != 0)
      return invalid(std::string(names[b]) + " takes inputs (" + std::to_string(branches[b]->input_size()) +
                     "): not an If branch");
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::string> captured, captured_values(ctx, {branches[0], branches[1]}));
  graph::ControlAttrs attrs;
  std::vector<graph::Value> types;
  // Each branch's outputs in its own context; a sequence or optional output
  // gives the node one output per tensor, so both branches must agree on
  // its structure as on the tensors' types.
  ImportContext sub[2];
  std::vector<ValueId> outs[2];
  for (int b = 0; b < 2; ++b) {
    sub[b] = open_body(ctx, *branches[b], {}, captured);
    TESSERA_ASSIGN_OR_RETURN(outs[b], body_outputs(sub[b], *branches[b], names[b]));
    std::vector<ValueId> flat;
    for (size_t i = 0; i < outs[b].size(); ++i) {
      if (b == 1 && !same_structure(sub[0], outs[0][i], sub[1], outs[1][i]))
        return invalid("output " + std::to_string(i) + " is " + sub[0].describe(outs[0][i]) + " in then_branch but " +
                       sub[1].describe(outs[1][i]) + " in else_branch: an If on data needs both branches to agree");
      const std::vector<ValueId> tensors = flatten_value(sub[b], outs[b][i]);
      flat.insert(flat.end(), tensors.begin(), tensors.end());
    }
    for (size_t i = 0; i < flat.size(); ++i) {
      const graph::Value v = sub[b].value(flat[i]);
      if (b == 0) {
        types.push_back(v);
      } else if (v.shape != types[i].shape || v.dtype != types[i].dtype) {
        return invalid("output tensor " + std::to_string(i) + " is " + types[i].dtype.to_string() + " " +
                       graph::shape_string(types[i].shape) + " in then_branch but " + v.dtype.to_string() + " " +
                       graph::shape_string(v.shape) + " in else_branch: an If on data needs both branches to agree");
      }
    }
    attrs.bodies.push_back(close_body(sub[b], std::move(flat)));
  }
  std::vector<ValueId> inputs = {cond};
  TESSERA_ASSIGN_OR_RETURN(std::vector<ValueId> more, inputs_named(ctx, captured));
  inputs.insert(inputs.end(), more.begin(), more.end());
  return add_control_node(ctx, node, graph::OpKind::kIf, std::move(attrs), std::move(inputs), types, &sub[0], outs[0]);
}

Status convert_loop_at_run_time(ImportContext& ctx, const onnx::NodeProto& node, std::optional<double> trips) {
  const onnx::GraphProto& body = find_attr(node, "body")->g();
  const int carried = node.input_size() - 2, scans = body.output_size() - carried - 1;
  const bool has_trips = ImportContext::has_input(node, 0), has_cond = ImportContext::has_input(node, 1);
  std::optional<ValueId> m, cond;
  if (has_trips) {
    TESSERA_ASSIGN_OR_RETURN(m, ctx.input(node, 0));
    if (ctx.value(*m).dtype != DType::i64() || graph::shape_size(ctx.value(*m).shape) != 1)
      return invalid("its trip count is " + ctx.value(*m).dtype.to_string() + " " +
                     graph::shape_string(ctx.value(*m).shape) + ", not one int64");
  }
  if (has_cond) {
    TESSERA_ASSIGN_OR_RETURN(cond, ctx.input(node, 1));
    if (ctx.value(*cond).dtype != DType::boolean() || graph::shape_size(ctx.value(*cond).shape) != 1)
      return invalid("its condition is " + ctx.value(*cond).dtype.to_string() + " " +
                     graph::shape_string(ctx.value(*cond).shape) + ", not one bool");
  }
  std::vector<ValueId> initial;
  std::vector<std::pair<std::string, graph::Value>> own = {{body.input(0).name(), {"i", {}, DType::i64()}}};
  TESSERA_RETURN_IF_ERROR(carried_values(ctx, node, body, &initial, &own));
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::string> captured, captured_values(ctx, {&body}));
  // The body tests the trip count itself: it reads it as an outer value.
  if (m && !ctx.g.is_constant(*m) && std::find(captured.begin(), captured.end(), node.input(0)) == captured.end())
    captured.push_back(node.input(0));
  ImportContext sub = open_body(ctx, body, own, captured);
  // The body runs only while the condition holds: its condition input is true.
  sub.values[body.input(1).name()] =
      sub.g.add_constant(body.input(1).name(), graph::Constant::from_doubles(DType::boolean(), {}, {1.0}));
  if (m && ctx.g.is_constant(*m)) sub.values[node.input(0)] = sub.g.add_constant(node.input(0), ctx.g.constant(*m));
  TESSERA_ASSIGN_OR_RETURN(std::vector<ValueId> outs, body_outputs(sub, body, "body"));
  for (size_t k = 0; k < outs.size(); ++k)
    if (ImportContext::is_composite(outs[k]))
      return invalid("its body gives '" + body.output(static_cast<int>(k)).name() + "', " + sub.describe(outs[k]) +
                     ": a Loop run on the device gives tensors only");
  for (int k = 0; k < carried; ++k) {
    const graph::Value before = ctx.value(initial[static_cast<size_t>(k)]),
                       after = sub.value(outs[static_cast<size_t>(1 + k)]);
    if (before.shape != after.shape || before.dtype != after.dtype)
      return invalid("carried value " + std::to_string(k) + " is " + before.dtype.to_string() + " " +
                     graph::shape_string(before.shape) + " before an iteration and " + after.dtype.to_string() + " " +
                     graph::shape_string(after.shape) + " after it: a Loop run on the device keeps its carried shapes");
  }
  const ValueId cond_out = outs[0];
  const bool body_stops = !(sub.g.is_constant(cond_out) && sub.g.constant(cond_out).at(0) != 0);
  if (!has_trips && !body_stops)
    return invalid("its condition stays true and it has no trip count: it would never stop");
  // Scan outputs need the number of iterations, which only a constant trip
  // count with conditions that never turn false gives.
  const bool exact = trips && !body_stops && (!cond || ctx.g.is_constant(*cond));
  if (scans > 0 && !exact)
    return invalid(
        "it has scan outputs and its trip count or condition is known only at run time: their length "
        "would be too (bind what the trip count depends on with --input-value or --input-shape, and the "
        "loop is unrolled)");
  // The body's own test of the next iteration: go = cond_out && i + 1 < M.
  Emitter inner(sub, base_name(node) + ".next");
  const ValueId i = sub.values.at(body.input(0).name());
  TESSERA_ASSIGN_OR_RETURN(
      ValueId i_next,
      inner.op("Add", {i, sub.g.add_constant(base_name(node) + ".one", graph::Constant::from_int64s({}, {1}))}));
  ValueId go = cond_out;
  if (m) {
    TESSERA_ASSIGN_OR_RETURN(ValueId more, inner.op("Less", {i_next, sub.values.at(node.input(0))}));
    go = more;
    if (body_stops) {
      TESSERA_ASSIGN_OR_RETURN(go, inner.op("And", {cond_out, more}));
    }
  }
  TESSERA_ASSIGN_OR_RETURN(go, inner.op("Reshape", {go, inner.ints({})}));
  std::vector<ValueId> body_outs = {go, i_next};
  body_outs.insert(body_outs.end(), outs.begin() + 1, outs.end());
  graph::ControlAttrs attrs;
  attrs.num_carried = carried;
  attrs.scan_slots = exact ? static_cast<int64_t>(*trips) : 0;
  std::vector<graph::Value> types;
  for (int k = 0; k < carried; ++k) types.push_back(ctx.value(initial[static_cast<size_t>(k)]));
  for (int j = 0; j < scans; ++j) {
    graph::Value element = sub.value(outs[static_cast<size_t>(1 + carried + j)]);
    element.shape.insert(element.shape.begin(), attrs.scan_slots);
    types.push_back(element);
  }
  attrs.bodies.push_back(close_body(sub, std::move(body_outs)));
  // The first iteration runs when the condition holds and 0 < M.
  Emitter outer(ctx, base_name(node) + ".first");
  ValueId go0 =
      cond ? *cond
           : ctx.g.add_constant(base_name(node) + ".true", graph::Constant::from_doubles(DType::boolean(), {}, {1.0}));
  if (m) {
    TESSERA_ASSIGN_OR_RETURN(
        ValueId any,
        outer.op("Less", {ctx.g.add_constant(base_name(node) + ".zero", graph::Constant::from_int64s({}, {0})), *m}));
    TESSERA_ASSIGN_OR_RETURN(go0, outer.op("And", {go0, any}));
  }
  TESSERA_ASSIGN_OR_RETURN(go0, outer.op("Reshape", {go0, outer.ints({})}));
  std::vector<ValueId> inputs = {go0};
  inputs.insert(inputs.end(), initial.begin(), initial.end());
  TESSERA_ASSIGN_OR_RETURN(std::vector<ValueId> more, inputs_named(ctx, captured));
  inputs.insert(inputs.end(), more.begin(), more.end());
  return add_control_node(ctx, node, graph::OpKind::kLoop, std::move(attrs), std::move(inputs), types);
}

}  // namespace tessera::frontend::detail
