// ONNX backend node tests (Debian's libonnx-testdata, files no one here
// wrote): each directory holds model.onnx and test_data_set_0/input_N.pb,
// output_N.pb (TensorProtos). Shared by the reference-interpreter tests in
// onnx_testdata_test.cc and the native conformance runner in
// tests/conformance/: reading the data, which inputs become constants, and
// the comparison with its tolerance.
#pragma once

#include <onnx/onnx-data_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/frontend/onnx_context.h"
#include "compiler/frontend/onnx_import.h"

namespace tessera::frontend::test {

namespace fs = std::filesystem;

/// Where Debian installs the node tests.
inline const char kNodeTestDir[] = "/usr/share/libonnx-testdata/data/node";

/// A TensorProto file as a constant of its own type (float16 stays
/// float16); kParseError when it is missing or not a TensorProto, the
/// importer's error for types Tessera lacks. `declared` is the model's
/// element type for it: this ONNX release's test data writes bfloat16
/// tensors as uint16, which read as the bfloat16 they hold.
inline Result<graph::Constant> read_tensor(const fs::path& path, int32_t declared) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(ErrorCode::kParseError, path.string() + ": cannot open");
  std::stringstream s;
  s << in.rdbuf();
  onnx::TensorProto t;
  if (!t.ParseFromString(s.str())) return Status(ErrorCode::kParseError, path.string() + ": not a TensorProto");
  if (declared == onnx::TensorProto::BFLOAT16 && t.data_type() == onnx::TensorProto::UINT16)
    t.set_data_type(onnx::TensorProto::BFLOAT16);
  return detail::tensor_data_of(t);
}

/// A value of the node tests that may be a sequence or an optional (a
/// SequenceProto or OptionalProto file): its tensors in order, whether it
/// holds a sequence, and whether an optional is empty.
struct ValueData {
  std::vector<graph::Constant> tensors;
  bool sequence = false;
  bool absent = false;
};

/// The data file of a value of `type` (a tensor, a sequence of tensors, or
/// an optional of either); kParseError when it is not what the type says.
inline Result<ValueData> read_value(const fs::path& path, const onnx::TypeProto& type) {
  if (type.has_tensor_type()) {
    TESSERA_ASSIGN_OR_RETURN(graph::Constant c, read_tensor(path, type.tensor_type().elem_type()));
    return ValueData{{std::move(c)}, false, false};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(ErrorCode::kParseError, path.string() + ": cannot open");
  std::stringstream s;
  s << in.rdbuf();
  auto tensors_of = [&](const onnx::SequenceProto& seq, ValueData* out) -> Status {
    out->sequence = true;
    for (const auto& t : seq.tensor_values()) {
      TESSERA_ASSIGN_OR_RETURN(graph::Constant c, detail::tensor_data_of(t));
      out->tensors.push_back(std::move(c));
    }
    return Status::ok();
  };
  ValueData out;
  if (type.has_sequence_type()) {
    onnx::SequenceProto seq;
    if (!seq.ParseFromString(s.str())) return Status(ErrorCode::kParseError, path.string() + ": not a SequenceProto");
    TESSERA_RETURN_IF_ERROR(tensors_of(seq, &out));
    return out;
  }
  onnx::OptionalProto opt;
  if (!type.has_optional_type() || !opt.ParseFromString(s.str()))
    return Status(ErrorCode::kParseError, path.string() + ": not an OptionalProto");
  out.sequence = type.optional_type().elem_type().has_sequence_type();
  if (opt.has_tensor_value()) {
    TESSERA_ASSIGN_OR_RETURN(graph::Constant c, detail::tensor_data_of(opt.tensor_value()));
    out.tensors.push_back(std::move(c));
  } else if (opt.has_sequence_value()) {
    TESSERA_RETURN_IF_ERROR(tensors_of(opt.sequence_value(), &out));
  } else {
    out.absent = true;
  }
  return out;
}

/// Input positions that are parameters rather than data: shapes, axes,
/// starts/ends, pads, scales/sizes, repeats, training flags. Tessera's
/// importer needs them static (a model carries them as initializers or
/// constants); the node tests feed them as graph inputs, so a runner binds
/// them as constants from the test data.
inline bool is_parameter_input(const std::string& op, int index) {
  static const std::map<std::string, std::set<int>> kParams = {
      {"Reshape", {1}},
      {"Expand", {1}},
      {"Tile", {1}},
      {"Squeeze", {1}},
      {"Unsqueeze", {1}},
      {"Slice", {1, 2, 3, 4}},
      {"Pad", {1, 2, 3}},
      {"Resize", {1, 2, 3}},
      {"Upsample", {1}},
      {"Split", {1}},
      {"ReduceMean", {1}},
      {"ReduceSum", {1}},
      {"ReduceMax", {1}},
      {"ReduceMin", {1}},
      {"ReduceProd", {1}},
      {"ReduceL1", {1}},
      {"ReduceL2", {1}},
      {"ReduceLogSum", {1}},
      {"ReduceLogSumExp", {1}},
      {"ReduceSumSquare", {1}},
      {"ConstantOfShape", {0}},
      {"TopK", {1}},
      {"Dropout", {1, 2}},
      {"OneHot", {1}},
      {"Range", {0, 1, 2}},
      {"CumSum", {1}},
      {"Trilu", {1}},
      // The output's shape depends on these values: Tessera needs them static.
      {"Compress", {1}},
      {"NonZero", {0}},
      // A Loop's scan outputs have a row per iteration: with a trip count
      // and condition known only at run time their length would be too.
      {"Loop", {0, 1}},
      // A sequence's elements are chosen at compile time.
      {"SequenceInsert", {2}},
      {"SequenceAt", {1}},
      {"SequenceErase", {1}},
      {"SplitToSequence", {1}}};
  auto it = kParams.find(op);
  return it != kParams.end() && it->second.count(index) != 0;
}

/// The values of `graph` that decide a parameter: read at a parameter
/// position (is_parameter_input), or read by a node (other than Shape and
/// Size, which read only a shape) that computes such a value. A window's
/// size cast and scaled before its Range, a Loop's trip count computed from
/// a range's start, limit and step: a user binds the inputs behind them
/// (--input-value), as these tests do.
inline std::set<std::string> parameter_values(const onnx::GraphProto& graph) {
  std::set<std::string> params;
  for (const auto& node : graph.node())
    for (int i = 0; i < node.input_size(); ++i)
      if (!node.input(i).empty() && is_parameter_input(node.op_type(), i)) params.insert(node.input(i));
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& node : graph.node()) {
      if (node.op_type() == "Shape" || node.op_type() == "Size") continue;
      const bool decides = std::any_of(node.output().begin(), node.output().end(),
                                       [&](const std::string& out) { return params.count(out) != 0; });
      if (!decides) continue;
      for (const std::string& in : node.input())
        if (!in.empty()) grew |= params.insert(in).second;
    }
  }
  return params;
}

/// Why Tessera cannot run `model` at all, or "" when it might: operators
/// outside supported_onnx_ops() (or of another domain), graph inputs or
/// outputs that are not tensors (sequences, optionals, maps), element types
/// Tessera has no DType for (16-bit and unsigned > 8-bit integers, strings,
/// complex).
inline std::string unsupported_reason(const onnx::ModelProto& model) {
  const std::vector<std::string> ops = supported_onnx_ops();
  std::set<std::string> missing;
  for (const auto& node : model.graph().node()) {
    const bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
    if (!default_domain || !std::binary_search(ops.begin(), ops.end(), node.op_type()))
      missing.insert(default_domain ? node.op_type() : node.domain() + "." + node.op_type());
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string& op : missing) list += (list.empty() ? "" : ", ") + op;
    return "unsupported operator: " + list;
  }
  std::vector<const onnx::ValueInfoProto*> io;
  for (const auto& v : model.graph().input()) io.push_back(&v);
  for (const auto& v : model.graph().output()) io.push_back(&v);
  for (const onnx::ValueInfoProto* v : io) {
    // A tensor, a sequence of tensors, or an optional of either.
    const onnx::TypeProto* t = &v->type();
    if (t->has_optional_type()) t = &t->optional_type().elem_type();
    if (t->has_sequence_type()) t = &t->sequence_type().elem_type();
    if (!t->has_tensor_type()) return "unsupported type: '" + v->name() + "' is not a tensor";
    auto dtype = detail::dtype_of_onnx(t->tensor_type().elem_type());
    if (!dtype.is_ok()) return "unsupported type: '" + v->name() + "': " + dtype.status().message();
  }
  return "";
}

/// One node test, read: import options (parameter inputs as constants), the
/// data inputs to feed by name, and the expected outputs in order; or only
/// why it is unsupported.
struct NodeTestCase {
  fs::path model;
  std::string unsupported;  ///< unsupported_reason(); nothing else is filled when set
  ImportOptions options;
  std::map<std::string, graph::Constant> inputs;
  std::vector<graph::Constant> outputs;
};

/// Reads the test in `dir`. A graph input becomes a constant when its value
/// decides a parameter (parameter_values).
/// Errors: an unreadable model or data file (kParseError).
inline Result<NodeTestCase> load_node_test(const fs::path& dir) {
  NodeTestCase tc;
  tc.model = dir / "model.onnx";
  onnx::ModelProto model;
  {
    std::ifstream in(tc.model, std::ios::binary);
    if (!in || !model.ParseFromIstream(&in)) return Status(ErrorCode::kParseError, tc.model.string() + ": not a model");
  }
  tc.unsupported = unsupported_reason(model);
  if (!tc.unsupported.empty()) return tc;
  const fs::path data = dir / "test_data_set_0";
  std::set<std::string> initializers;
  for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
  const std::set<std::string> params = parameter_values(model.graph());
  int index = 0;
  for (const auto& input : model.graph().input()) {
    const fs::path file = data / ("input_" + std::to_string(index++) + ".pb");
    if (initializers.count(input.name()) && !fs::exists(file)) continue;  // IR < 4: an initializer listed as an input
    if (!input.type().has_tensor_type()) {
      // A sequence or optional: its structure bound, its tensors fed as the
      // package's inputs NAME[i] (a sequence's) or NAME (an optional's tensor).
      TESSERA_ASSIGN_OR_RETURN(ValueData v, read_value(file, input.type()));
      if (v.absent) tc.options.absent_inputs.insert(input.name());
      if (v.sequence) tc.options.sequence_lengths[input.name()] = static_cast<int64_t>(v.tensors.size());
      for (size_t i = 0; i < v.tensors.size(); ++i) {
        const std::string name = v.sequence ? input.name() + "[" + std::to_string(i) + "]" : input.name();
        tc.options.input_shapes[name] = v.tensors[i].shape;
        tc.inputs[name] = std::move(v.tensors[i]);
      }
      continue;
    }
    TESSERA_ASSIGN_OR_RETURN(graph::Constant c, read_tensor(file, input.type().tensor_type().elem_type()));
    if (params.count(input.name())) {
      tc.options.constant_inputs[input.name()] = std::move(c);
      continue;
    }
    // Dynamic dimensions bound from the data, as a user binds them.
    bool dynamic = !input.type().tensor_type().has_shape();
    for (const auto& d : input.type().tensor_type().shape().dim()) dynamic |= !d.has_dim_value();
    if (dynamic) tc.options.input_shapes[input.name()] = c.shape;
    tc.inputs[input.name()] = std::move(c);
  }
  // A sequence or optional output gives its tensors in order (an empty
  // optional none), as a package does.
  for (int i = 0; fs::exists(data / ("output_" + std::to_string(i) + ".pb")); ++i) {
    onnx::TypeProto type;
    if (i < model.graph().output_size()) type = model.graph().output(i).type();
    if (!type.has_tensor_type() && !type.has_sequence_type() && !type.has_optional_type())
      type.mutable_tensor_type()->set_elem_type(0);
    TESSERA_ASSIGN_OR_RETURN(ValueData v, read_value(data / ("output_" + std::to_string(i) + ".pb"), type));
    for (graph::Constant& c : v.tensors) tc.outputs.push_back(std::move(c));
  }
  return tc;
}

/// The tolerance of compare_output, for reports.
inline const char kNodeTestTolerance[] =
    "|got - want| <= 1e-4 + 1e-3 * |want| for floats (2^-7 * |want| for bfloat16, its one step; NaN matches NaN, "
    "inf matches inf); integers and bools exact";

/// Compares output `index`: dtype and shape equal, values within
/// kNodeTestTolerance. kInvalidArgument naming the first mismatch.
inline Status compare_output(size_t index, const graph::Constant& got, const graph::Constant& want) {
  const std::string which = "output " + std::to_string(index);
  if (got.dtype != want.dtype)
    return Status(ErrorCode::kInvalidArgument,
                  which + " has type " + got.dtype.to_string() + ", want " + want.dtype.to_string());
  if (got.shape != want.shape)
    return Status(ErrorCode::kInvalidArgument,
                  which + " has shape " + graph::shape_string(got.shape) + ", want " + graph::shape_string(want.shape));
  const bool exact = !want.dtype.is_float();
  const double relative = want.dtype == DType::bf16() ? 1.0 / 128 : 1e-3;
  const auto a = got.to_doubles(), b = want.to_doubles();
  for (size_t j = 0; j < a.size(); ++j) {
    const bool ok = a[j] == b[j] || (std::isnan(a[j]) && std::isnan(b[j])) ||
                    (!exact && std::fabs(a[j] - b[j]) <= 1e-4 + relative * std::fabs(b[j]));
    if (!ok) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "[%zu] is %.9g, want %.9g", j, a[j], b[j]);
      return Status(ErrorCode::kInvalidArgument, which + buf);
    }
  }
  return Status::ok();
}

}  // namespace tessera::frontend::test
