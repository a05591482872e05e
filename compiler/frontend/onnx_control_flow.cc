// Control flow the importer resolves at compile time: an If whose condition
// is known once constants are folded and input shapes bound (a shape check,
// a sample rate bound with --input-value) becomes the nodes of the branch it
// takes, nested Ifs included. An If on data stays unsupported: the error
// says so and how to bind what it depends on.
#include "compiler/frontend/onnx_context.h"

namespace tessera::frontend::detail {

namespace {

using Node = onnx::NodeProto;

std::string node_label(const Node& node, int index) {
  const std::string name = node.name().empty() ? "#" + std::to_string(index) : node.name();
  return "node '" + name + "' (" + node.op_type() + ")";
}

Status convert_if(ImportContext& ctx, const Node& node) {
  const graph::Constant* cond = ctx.constant_input(node, 0);
  if (!cond)
    return invalid("its condition '" + node.input(0) +
                   "' is known only at run time: an If on data is not supported yet (if the condition depends "
                   "on a scalar input such as a sample rate, bind it with --input-value NAME=VALUE)");
  if (cond->num_elements() != 1)
    return invalid("the condition has " + std::to_string(cond->num_elements()) + " elements, not one");
  const bool taken = cond->at(0) != 0;
  const char* which = taken ? "then_branch" : "else_branch";
  const onnx::AttributeProto* attr = find_attr(node, which);
  if (!attr || attr->type() != onnx::AttributeProto::GRAPH) return invalid(std::string("it has no ") + which + " graph");
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

}  // namespace

Status convert_subgraph(ImportContext& ctx, const onnx::GraphProto& graph, const std::string& where) {
  if (graph.input_size() != 0)
    return invalid(where + " takes inputs (" + std::to_string(graph.input_size()) + "): not an If branch");
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

void add_control_flow_converters(std::map<std::string, Converter>& table) { table["If"] = convert_if; }

}  // namespace tessera::frontend::detail
