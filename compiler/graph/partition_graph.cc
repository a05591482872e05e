#include "compiler/graph/partition_graph.h"

#include <algorithm>
#include <map>
#include <memory>
#include <queue>
#include <set>

namespace tessera::graph {

namespace {

// Who reads what, by node index.
struct Edges {
  std::vector<int> producer;                // per value: its node, or -1
  std::vector<std::vector<int>> readers;    // per value: the nodes reading it, ascending
  std::vector<std::vector<int>> consumers;  // per node: the nodes reading any of its outputs, ascending, once each
  std::vector<bool> is_output;              // per value: a graph output
};

Edges edges_of(const Graph& g) {
  Edges e;
  e.producer = g.producers();
  e.readers.resize(g.values().size());
  e.consumers.resize(g.nodes().size());
  e.is_output.assign(g.values().size(), false);
  for (ValueId v : g.outputs()) e.is_output[static_cast<size_t>(v)] = true;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const int node = static_cast<int>(i);
    for (ValueId v : g.nodes()[i].inputs) {
      std::vector<int>& r = e.readers[static_cast<size_t>(v)];
      if (r.empty() || r.back() != node) r.push_back(node);
      const int p = e.producer[static_cast<size_t>(v)];
      if (p < 0) continue;
      std::vector<int>& c = e.consumers[static_cast<size_t>(p)];
      if (c.empty() || c.back() != node) c.push_back(node);
    }
  }
  return e;
}

// The chain of `pattern` anchored at node `i`, or empty when it does not
// match. Epilogue nodes are the only readers of the value they extend.
std::vector<int> match_pattern(const Graph& g, const Edges& e, const CompositePattern& pattern, int i,
                               const std::vector<bool>& claimed) {
  const Node& anchor = g.nodes()[static_cast<size_t>(i)];
  if (!pattern.anchor || !pattern.anchor(g, anchor)) return {};
  std::vector<int> chain = {i};
  if (anchor.outputs.size() != 1 || !pattern.epilogue) return chain;
  ValueId v = anchor.outputs[0];
  while (static_cast<int>(chain.size()) <= pattern.max_epilogue) {
    const std::vector<int>& readers = e.readers[static_cast<size_t>(v)];
    if (readers.size() != 1 || e.is_output[static_cast<size_t>(v)]) break;
    const int m = readers[0];
    const Node& next = g.nodes()[static_cast<size_t>(m)];
    if (claimed[static_cast<size_t>(m)] || next.outputs.size() != 1 || !pattern.epilogue(g, next, v)) break;
    chain.push_back(m);
    v = next.outputs[0];
  }
  return chain;
}

// Units the backend takes whole, in order of their first node: composites
// (first matching pattern wins) and single supported nodes.
std::vector<std::vector<int>> find_units(const Graph& g, const Edges& e, const PartitionRules& rules) {
  const size_t n = g.nodes().size();
  std::vector<bool> claimed(n, false);
  std::vector<std::vector<int>> units;
  for (size_t i = 0; i < n; ++i) {
    if (claimed[i]) continue;
    const Node& node = g.nodes()[i];
    if (node.kind == OpKind::kExternal) continue;  // already some backend's
    std::vector<int> unit;
    for (const CompositePattern& p : rules.patterns) {
      unit = match_pattern(g, e, p, static_cast<int>(i), claimed);
      if (!unit.empty()) break;
    }
    if (unit.empty() && rules.supports && rules.supports(g, node)) unit = {static_cast<int>(i)};
    for (int m : unit) claimed[static_cast<size_t>(m)] = true;
    if (!unit.empty()) units.push_back(std::move(unit));
  }
  return units;
}

// Whether contracting `members` leaves the graph acyclic: no path from a
// member through non-members back to a member. Walks forward from the
// members' outside readers.
bool is_convex(const Edges& e, const std::vector<int>& members, size_t num_nodes) {
  std::vector<char> inside(num_nodes, 0), seen(num_nodes, 0);
  for (int m : members) inside[static_cast<size_t>(m)] = 1;
  std::vector<int> stack;
  for (int m : members)
    for (int c : e.consumers[static_cast<size_t>(m)])
      if (!inside[static_cast<size_t>(c)] && !seen[static_cast<size_t>(c)]) {
        seen[static_cast<size_t>(c)] = 1;
        stack.push_back(c);
      }
  while (!stack.empty()) {
    const int x = stack.back();
    stack.pop_back();
    for (int c : e.consumers[static_cast<size_t>(x)]) {
      if (inside[static_cast<size_t>(c)]) return false;
      if (!seen[static_cast<size_t>(c)]) {
        seen[static_cast<size_t>(c)] = 1;
        stack.push_back(c);
      }
    }
  }
  return true;
}

// Inputs and outputs of a region's nodes (ascending).
void finish_region(const Graph& g, const Edges& e, Region* r) {
  std::set<int> members(r->nodes.begin(), r->nodes.end());
  std::set<ValueId> produced;
  for (int i : r->nodes)
    for (ValueId v : g.nodes()[static_cast<size_t>(i)].outputs) produced.insert(v);
  for (int i : r->nodes) {
    const Node& n = g.nodes()[static_cast<size_t>(i)];
    for (ValueId v : n.inputs)
      if (!produced.count(v) && std::find(r->inputs.begin(), r->inputs.end(), v) == r->inputs.end())
        r->inputs.push_back(v);
    for (ValueId v : n.outputs) {
      bool escapes = e.is_output[static_cast<size_t>(v)];
      for (int reader : e.readers[static_cast<size_t>(v)]) escapes = escapes || !members.count(reader);
      if (escapes) r->outputs.push_back(v);
    }
  }
}

}  // namespace

std::vector<Region> find_regions(const Graph& g, const PartitionRules& rules) {
  const Edges e = edges_of(g);
  const size_t n = g.nodes().size();
  std::vector<int> region_of(n, -1);
  std::vector<std::vector<int>> members;  // by region id; emptied when merged into another
  for (const std::vector<int>& unit : find_units(g, e, rules)) {
    int cur = static_cast<int>(members.size());
    members.push_back(unit);
    for (int m : unit) region_of[static_cast<size_t>(m)] = cur;
    // Join the regions that produce this unit's inputs, one at a time, while
    // the union stays convex.
    for (int m : unit) {
      for (ValueId v : g.nodes()[static_cast<size_t>(m)].inputs) {
        const int p = e.producer[static_cast<size_t>(v)];
        if (p < 0) continue;
        const int r = region_of[static_cast<size_t>(p)];
        if (r < 0 || r == cur) continue;
        std::vector<int> joined = members[static_cast<size_t>(r)];
        joined.insert(joined.end(), members[static_cast<size_t>(cur)].begin(), members[static_cast<size_t>(cur)].end());
        if (!is_convex(e, joined, n)) continue;
        for (int x : members[static_cast<size_t>(cur)]) region_of[static_cast<size_t>(x)] = r;
        members[static_cast<size_t>(cur)].clear();
        members[static_cast<size_t>(r)] = std::move(joined);
        cur = r;
      }
    }
  }
  std::vector<Region> regions;
  for (std::vector<int>& m : members) {
    if (m.empty() || static_cast<int>(m.size()) < rules.min_nodes) continue;
    std::sort(m.begin(), m.end());
    Region r;
    r.nodes = m;
    regions.push_back(std::move(r));
  }
  std::sort(regions.begin(), regions.end(), [](const Region& a, const Region& b) { return a.nodes[0] < b.nodes[0]; });
  for (size_t k = 0; k < regions.size(); ++k) {
    regions[k].name = rules.backend + "_region" + std::to_string(k);
    finish_region(g, e, &regions[k]);
  }
  return regions;
}

Graph region_body(const Graph& g, const Region& region) {
  Graph body;
  std::map<ValueId, ValueId> id;
  for (ValueId v : region.inputs) {
    const Value& val = g.value(v);
    id[v] = body.add_input(val.name.empty() ? "v" + std::to_string(v) : val.name, val.shape, val.dtype);
  }
  for (int i : region.nodes) {
    Node n = g.nodes()[static_cast<size_t>(i)];
    for (ValueId& v : n.inputs) v = id.at(v);
    for (ValueId& v : n.outputs) {
      const Value& val = g.value(v);
      const ValueId inner = body.add_value(val.name, val.shape, val.dtype);
      id[v] = inner;
      v = inner;
    }
    body.add_node(std::move(n));
  }
  std::vector<ValueId> outputs;
  for (ValueId v : region.outputs) outputs.push_back(id.at(v));
  body.set_outputs(std::move(outputs));
  return body;
}

Result<Graph> partition_graph(const Graph& g, const PartitionRules& rules, std::vector<Region>* regions_out) {
  std::vector<Region> regions = find_regions(g, rules);
  const size_t n = g.nodes().size();
  // Units of the contracted graph: each region, then each node outside one.
  std::vector<int> unit_of(n, -1);
  for (size_t k = 0; k < regions.size(); ++k)
    for (int i : regions[k].nodes) unit_of[static_cast<size_t>(i)] = static_cast<int>(k);
  std::vector<int> first_node;  // per unit: its first node, the topological tie-break
  for (const Region& r : regions) first_node.push_back(r.nodes[0]);
  for (size_t i = 0; i < n; ++i)
    if (unit_of[i] < 0) {
      unit_of[i] = static_cast<int>(first_node.size());
      first_node.push_back(static_cast<int>(i));
    }
  const std::vector<int> producer = g.producers();
  std::vector<std::set<int>> succ(first_node.size());
  std::vector<int> indegree(first_node.size(), 0);
  for (size_t i = 0; i < n; ++i)
    for (ValueId v : g.nodes()[i].inputs) {
      const int p = producer[static_cast<size_t>(v)];
      if (p < 0) continue;
      const int from = unit_of[static_cast<size_t>(p)], to = unit_of[i];
      if (from != to && succ[static_cast<size_t>(from)].insert(to).second) ++indegree[static_cast<size_t>(to)];
    }
  // Kahn's algorithm, earliest first node first: the original order where it can.
  using Item = std::pair<int, int>;  // (first node, unit)
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ready;
  for (size_t u = 0; u < first_node.size(); ++u)
    if (indegree[u] == 0) ready.push({first_node[u], static_cast<int>(u)});
  std::vector<Node> nodes;
  while (!ready.empty()) {
    const auto u = static_cast<size_t>(ready.top().second);
    ready.pop();
    if (u < regions.size()) {
      const Region& r = regions[u];
      Node ext;
      ext.name = r.name;
      ext.kind = OpKind::kExternal;
      ext.attrs = ExternalAttrs{rules.backend, std::make_shared<const Graph>(region_body(g, r))};
      ext.inputs = r.inputs;
      ext.outputs = r.outputs;
      nodes.push_back(std::move(ext));
    } else {
      nodes.push_back(g.nodes()[static_cast<size_t>(first_node[u])]);
    }
    for (int s : succ[u])
      if (--indegree[static_cast<size_t>(s)] == 0) ready.push({first_node[static_cast<size_t>(s)], s});
  }
  if (nodes.size() != first_node.size())
    return Status(ErrorCode::kInternal, "partitioning for " + rules.backend + " made a cycle");
  Graph out = g;
  out.mutable_nodes() = std::move(nodes);
  TESSERA_RETURN_IF_ERROR(out.validate().with_context("partitioning for " + rules.backend));
  if (regions_out) *regions_out = std::move(regions);
  return out;
}

Result<Graph> inline_external_nodes(const Graph& g, const std::function<bool(const Node&)>& which) {
  Graph out = g;
  std::vector<Node> nodes;
  for (const Node& n : g.nodes()) {
    if (n.kind != OpKind::kExternal || !which(n)) {
      nodes.push_back(n);
      continue;
    }
    const auto* attrs = std::get_if<ExternalAttrs>(&n.attrs);
    if (!attrs || !attrs->body || attrs->body->inputs().size() != n.inputs.size() ||
        attrs->body->outputs().size() != n.outputs.size())
      return Status(ErrorCode::kInternal, "external node " + n.name + " does not match its body");
    const Graph& body = *attrs->body;
    std::map<ValueId, ValueId> id;
    for (size_t i = 0; i < n.inputs.size(); ++i) id[body.inputs()[i]] = n.inputs[i];
    for (size_t i = 0; i < n.outputs.size(); ++i) id[body.outputs()[i]] = n.outputs[i];
    for (const auto& [v, c] : body.constants()) id[v] = out.add_constant(body.value(v).name, c);
    for (Node inner : body.nodes()) {
      for (ValueId& v : inner.inputs) v = id.at(v);
      for (ValueId& v : inner.outputs) {
        auto it = id.find(v);
        if (it == id.end()) {
          const Value& val = body.value(v);
          it = id.emplace(v, out.add_value(val.name, val.shape, val.dtype)).first;
        }
        v = it->second;
      }
      nodes.push_back(std::move(inner));
    }
  }
  out.mutable_nodes() = std::move(nodes);
  TESSERA_RETURN_IF_ERROR(out.validate().with_context("inlining external regions"));
  return out;
}

}  // namespace tessera::graph
