#include "compiler/graph/fused_graph_dot.h"

#include <map>

namespace tessera::graph {
namespace {

// More node names than this in one label are summarized ("... 12 more"):
// a fused group is short, an external region may hold a whole model.
constexpr size_t kMaxNamesInLabel = 8;

// A dot string literal's body: quotes and backslashes escaped, line breaks
// written as dot's "\n" by the callers.
std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (c == '\n' || c == '\r') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

std::string dims(const std::vector<int64_t>& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

std::string group_label(const Graph& g, const FusedGroup& group) {
  std::string kinds, names;
  size_t shown = 0;
  for (int n : group.nodes) {
    const Node& node = g.nodes()[static_cast<size_t>(n)];
    kinds += (kinds.empty() ? "" : " + ") + std::string(op_kind_name(node.kind));
    if (const auto* region = std::get_if<ExternalAttrs>(&node.attrs)) kinds += " (" + region->backend + ")";
    if (shown++ < kMaxNamesInLabel) names += "\\n" + escape(node.name);
  }
  if (shown > kMaxNamesInLabel) names += "\\n... " + std::to_string(shown - kMaxNamesInLabel) + " more";
  std::string constants;
  for (ValueId v : group.inputs) {
    if (!g.is_constant(v)) continue;
    constants += "\\n" + escape(g.value(v).name) + " <" + dims(g.value(v).shape) + ">";
  }
  return escape(kinds) + names + constants + "\\n-> " + dims(g.value(group.output).shape);
}

}  // namespace

std::string fused_graph_dot(const Graph& g, const std::vector<FusedGroup>& groups) {
  std::string out =
      "digraph model {\n"
      "  rankdir=TB;\n"
      "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#dbe8f7\", fontname=\"Helvetica\", fontsize=10];\n"
      "  edge [fontname=\"Helvetica\", fontsize=9];\n";
  // Who produces each value: "in<i>" for a graph input, "g<i>" for a group
  // (every output of its nodes, so an external region's several outputs too).
  std::map<ValueId, std::string> producer;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const Value& v = g.value(g.inputs()[i]);
    const std::string id = "in" + std::to_string(i);
    producer[g.inputs()[i]] = id;
    out += "  " + id + " [shape=ellipse, fillcolor=\"#e6f4e6\", label=\"" + escape(v.name) + "\\n" + dims(v.shape) +
           "\"];\n";
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::string id = "g" + std::to_string(i);
    out += "  " + id + " [label=\"" + group_label(g, groups[i]) + "\"];\n";
    for (int n : groups[i].nodes)
      for (ValueId v : g.nodes()[static_cast<size_t>(n)].outputs) producer[v] = id;
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    for (ValueId v : groups[i].inputs) {
      auto from = producer.find(v);
      if (from == producer.end()) continue;  // a constant, in the label
      out += "  " + from->second + " -> g" + std::to_string(i) + " [label=\"" + dims(g.value(v).shape) + "\"];\n";
    }
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ValueId v = g.outputs()[i];
    const std::string id = "out" + std::to_string(i);
    out += "  " + id + " [shape=ellipse, fillcolor=\"#fbe9d0\", label=\"" + escape(g.output_name(i)) + "\\n" +
           dims(g.value(v).shape) + "\"];\n";
    auto from = producer.find(v);
    if (from != producer.end())
      out += "  " + from->second + " -> " + id + " [label=\"" + dims(g.value(v).shape) + "\"];\n";
  }
  out += "}\n";
  return out;
}

}  // namespace tessera::graph
