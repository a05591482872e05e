// Test helpers for partitioned graphs: random weights, the region list as
// text, and a reference run that evaluates external nodes by their bodies.
#pragma once

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "compiler/graph/partition_graph.h"
#include "runtime/ndarray.h"
#include "tests/compiler/graph/graph_test_util.h"

namespace tessera::graph::test {

/// A constant of `shape` filled with random floats from `seed`: a weight.
inline ValueId weight(Graph& g, const std::string& name, std::vector<int64_t> shape, uint32_t seed) {
  const auto n = static_cast<size_t>(shape_size(shape));
  return g.add_constant(name, Constant::from_floats(shape, random_floats(n, seed)));
}

/// A float32 array of `shape` holding `data`.
inline runtime::NDArray array_of(const std::vector<int64_t>& shape, const std::vector<float>& data) {
  runtime::NDArray a = runtime::NDArray::create(shape, DType::f32()).value();
  std::memcpy(a.raw_data(), data.data(), data.size() * sizeof(float));
  return a;
}

/// A package's outputs, by name.
using Outputs = std::map<std::string, std::vector<float>>;

/// One line per region: "cblas_region0: mm0 add0 relu0 (in %0 %1 %2) -> %5".
inline std::string regions_to_string(const Graph& g, const std::vector<Region>& regions) {
  std::string s;
  for (const Region& r : regions) {
    s += r.name + ":";
    for (int i : r.nodes) s += " " + g.nodes()[static_cast<size_t>(i)].name;
    s += " (in";
    for (ValueId v : r.inputs) s += " %" + std::to_string(v);
    s += ") ->";
    for (ValueId v : r.outputs) s += " %" + std::to_string(v);
    s += "\n";
  }
  return s;
}

/// Runs `g` node by node through the reference path (run_graph): an
/// external node runs its body, any other node runs alone.
inline Result<std::vector<Bytes>> run_partitioned(const Graph& g, const std::map<ValueId, Bytes>& inputs) {
  std::map<ValueId, Bytes> env = inputs;
  for (const auto& [id, c] : g.constants()) env[id] = c->bytes;
  for (const Node& n : g.nodes()) {
    Graph single;
    const Graph* sub = &single;
    std::map<ValueId, Bytes> sub_inputs;
    if (n.kind == OpKind::kExternal) {
      sub = std::get<ExternalAttrs>(n.attrs).body.get();
      for (size_t i = 0; i < n.inputs.size(); ++i) sub_inputs[sub->inputs()[i]] = env.at(n.inputs[i]);
    } else {
      std::map<ValueId, ValueId> id;
      Node copy = n;
      for (ValueId& v : copy.inputs) {
        if (!id.count(v)) {
          id[v] = single.add_input(g.value(v).name, g.value(v).shape, g.value(v).dtype);
          sub_inputs[id[v]] = env.at(v);
        }
        v = id[v];
      }
      std::vector<ValueId> outs;
      for (ValueId& v : copy.outputs) {
        v = single.add_value(g.value(v).name, g.value(v).shape, g.value(v).dtype);
        outs.push_back(v);
      }
      single.add_node(copy);
      single.set_outputs(outs);
    }
    TESSERA_ASSIGN_OR_RETURN(std::vector<Bytes> outs, run_graph(*sub, sub_inputs));
    for (size_t i = 0; i < n.outputs.size(); ++i) env[n.outputs[i]] = outs[i];
  }
  std::vector<Bytes> outputs;
  for (ValueId v : g.outputs()) outputs.push_back(env.at(v));
  return outputs;
}

}  // namespace tessera::graph::test
