// ONNX import: a model file (opsets 11-17, default domain) becomes a graph IR
// with static shapes. Initializers and Constant nodes become constants;
// Shape, Gather, Cast, Squeeze, Unsqueeze, Concat and arithmetic on constants
// are folded while importing, so a Shape -> Gather -> Reshape chain leaves a
// plain reshape.
//
// Every error a file can cause is a value: a malformed or truncated file is
// kParseError; unsupported operators, unbound dynamic dimensions and shapes
// that cannot be made static are one kInvalidArgument whose message lists
// each offending node as `node 'NAME' (OpType): why`, one per line.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/graph/graph.h"

namespace tessera::frontend {

/// Bindings for graph inputs with dynamic dimensions: the full shape of each
/// named input (its static dims must agree).
using InputShapes = std::map<std::string, std::vector<int64_t>>;

/// Options of an import.
struct ImportOptions {
  InputShapes input_shapes;
  /// Graph inputs to treat as constants with the given data (e.g. the shape
  /// or axes tensors that ONNX's node tests feed as inputs); their shape and
  /// type must match the model's declaration where it has one.
  std::map<std::string, graph::Constant> constant_inputs;
  /// Scalar graph inputs bound to a value (`--input-value`, e.g. a sample
  /// rate): constants of the input's type from then on, so that what
  /// depends on them folds (an If on them becomes its branch).
  std::map<std::string, double> input_values;
  /// Graph inputs that are sequences: their length. A package takes a
  /// sequence's elements as tensor inputs of their own, NAME[0], NAME[1], ...,
  /// shaped as the model declares or as input_shapes binds "NAME[i]"; a
  /// sequence given no length here has as many elements as input_shapes
  /// binds.
  std::map<std::string, int64_t> sequence_lengths;
  /// Optional graph inputs given no value; the others hold one (a tensor
  /// input of the optional's name, or a sequence's elements as above).
  std::set<std::string> absent_inputs;
};

/// Parses `name=value` bindings (the `--input-value` flag), e.g.
/// "sr=16000". kInvalidArgument naming the bad spec on error.
Result<std::map<std::string, double>> parse_input_values(const std::vector<std::string>& specs);

/// Parses `name:d0,d1,...` bindings (the `--input-shape` flag), e.g.
/// "x:1,3,224,224". kInvalidArgument naming the bad spec on error.
Result<InputShapes> parse_input_shapes(const std::vector<std::string>& specs);

/// Imports the serialized ModelProto in `bytes`; `origin` names it in errors.
Result<graph::Graph> import_onnx_bytes(const std::string& bytes, const ImportOptions& options = {},
                                       const std::string& origin = "<memory>");

/// Reads and imports an .onnx file; kNotFound / kIOError when it cannot be read.
Result<graph::Graph> import_onnx_file(const std::string& path, const ImportOptions& options = {});

/// How many .onnx files this process has read (import_onnx_file's calls):
/// a command imports its model once and hands the graph on, which a test
/// counts.
int64_t onnx_files_read();

/// The operator types (default domain) the importer accepts, sorted.
std::vector<std::string> supported_onnx_ops();

/// docs/operators.md: the operators of supported_onnx_ops() as a Markdown
/// page (the build checks the committed file against it).
std::string supported_onnx_ops_markdown();

}  // namespace tessera::frontend
