// Runs a small ONNX model through import, optimize_graph, fusion, lowering
// and the reference interpreter (the converter tests' harness).
#pragma once

#include <cstring>
#include <map>
#include <vector>

#include "compiler/frontend/onnx_import.h"
#include "compiler/graph/passes.h"
#include "tests/compiler/frontend/onnx_test_util.h"
#include "tests/compiler/graph/graph_test_util.h"

namespace tessera::frontend::test {

using graph::test::Bytes;

/// The bytes of `v` as a tensor's storage.
template <typename T>
Bytes bytes_of(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

/// A tensor's storage read back as T.
template <typename T>
std::vector<T> values_of(const Bytes& b) {
  std::vector<T> v(b.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

/// Imports, optimizes and runs a model whose inputs are given in order;
/// returns every output.
inline Result<std::vector<Bytes>> run_model_outputs(const ModelBuilder& m, const std::vector<Bytes>& inputs) {
  TESSERA_ASSIGN_OR_RETURN(graph::Graph g, import_onnx_bytes(m.bytes()));
  TESSERA_ASSIGN_OR_RETURN(graph::Graph opt, graph::optimize_graph(g));
  std::map<graph::ValueId, Bytes> feed;
  for (size_t i = 0; i < inputs.size(); ++i) feed[opt.inputs().at(i)] = inputs[i];
  return graph::test::run_graph(opt, feed);
}

/// run_model_outputs' output 0.
inline Result<Bytes> run_model(const ModelBuilder& m, const std::vector<Bytes>& inputs) {
  TESSERA_ASSIGN_OR_RETURN(auto outs, run_model_outputs(m, inputs));
  return outs.at(0);
}

}  // namespace tessera::frontend::test
