// The order the importer converts a graph's nodes in: each after the
// producers of what it reads, whatever order the file lists them in (ONNX
// asks for a sorted graph; some converters write them otherwise). A
// subgraph's reads from an enclosing scope count as reads of the node that
// holds it.
#include <queue>

#include "compiler/frontend/onnx_context.h"

namespace tessera::frontend::detail {

namespace {

using Node = onnx::NodeProto;

std::vector<const onnx::GraphProto*> subgraphs(const Node& node) {
  std::vector<const onnx::GraphProto*> out;
  for (const auto& a : node.attribute()) {
    if (a.type() == onnx::AttributeProto::GRAPH) out.push_back(&a.g());
    for (const auto& g : a.graphs()) out.push_back(&g);
  }
  return out;
}

// Names `g` reads that none of its inputs, initializers or nodes define.
void add_free_names(const onnx::GraphProto& g, std::set<std::string>* out) {
  std::set<std::string> local, reads;
  for (const auto& in : g.input()) local.insert(in.name());
  for (const auto& init : g.initializer()) local.insert(init.name());
  for (const Node& n : g.node()) {
    for (const std::string& in : n.input())
      if (!in.empty()) reads.insert(in);
    for (const onnx::GraphProto* sub : subgraphs(n)) add_free_names(*sub, &reads);
    for (const std::string& o : n.output()) local.insert(o);
  }
  for (const auto& o : g.output()) reads.insert(o.name());
  for (const std::string& r : reads)
    if (!local.count(r)) out->insert(r);
}

std::string label(const onnx::GraphProto& g, int i) {
  const Node& n = g.node(i);
  return "'" + (n.name().empty() ? "#" + std::to_string(i) : n.name()) + "' (" + n.op_type() + ")";
}

}  // namespace

std::set<std::string> node_reads(const Node& node) {
  std::set<std::string> reads;
  for (const std::string& in : node.input())
    if (!in.empty()) reads.insert(in);
  for (const onnx::GraphProto* sub : subgraphs(node)) add_free_names(*sub, &reads);
  return reads;
}

std::set<std::string> free_names(const onnx::GraphProto& graph) {
  std::set<std::string> names;
  add_free_names(graph, &names);
  return names;
}

Result<std::vector<int>> topological_order(const onnx::GraphProto& graph) {
  const int n = graph.node_size();
  std::map<std::string, int> producer;
  for (int i = 0; i < n; ++i)
    for (const std::string& o : graph.node(i).output())
      if (!o.empty()) producer[o] = i;
  std::vector<std::vector<int>> readers(static_cast<size_t>(n));
  std::vector<std::vector<int>> needs(static_cast<size_t>(n));
  std::vector<int> waiting(static_cast<size_t>(n), 0);
  for (int i = 0; i < n; ++i) {
    std::set<int> from;
    for (const std::string& r : node_reads(graph.node(i)))
      if (auto it = producer.find(r); it != producer.end()) from.insert(it->second);
    for (int p : from) {
      readers[static_cast<size_t>(p)].push_back(i);
      needs[static_cast<size_t>(i)].push_back(p);
    }
    waiting[static_cast<size_t>(i)] = static_cast<int>(from.size());
  }
  // The lowest-numbered ready node first: a sorted file keeps its order.
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (waiting[static_cast<size_t>(i)] == 0) ready.push(i);
  std::vector<int> order;
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int r : readers[static_cast<size_t>(i)])
      if (--waiting[static_cast<size_t>(r)] == 0) ready.push(r);
  }
  if (static_cast<int>(order.size()) == n) return order;
  // A cycle: from a node still waiting, follow what it waits for until a
  // node repeats; the nodes from that one on are the cycle.
  int at = 0;
  while (waiting[static_cast<size_t>(at)] == 0) ++at;
  std::vector<int> path;
  std::map<int, size_t> seen;
  while (!seen.count(at)) {
    seen[at] = path.size();
    path.push_back(at);
    for (int p : needs[static_cast<size_t>(at)])
      if (waiting[static_cast<size_t>(p)] > 0) {
        at = p;
        break;
      }
  }
  // path[k + 1] produces what path[k] reads: the values flow from the end.
  std::string cycle = label(graph, at);
  for (size_t k = path.size() - 1; k > seen[at]; --k) cycle += " -> " + label(graph, path[k]);
  return invalid("the nodes form a cycle, none can run first: " + cycle + " -> " + label(graph, at));
}

}  // namespace tessera::frontend::detail
