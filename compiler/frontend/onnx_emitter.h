// Internal to the ONNX importer: converters that build their result out of
// other ONNX operators (a recurrent cell's MatMul, Split and Sigmoid; an
// unrolled Loop's Concat) emit them through the operators' own converters,
// so shapes, checks and constant folding are theirs.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "compiler/frontend/onnx_context.h"

namespace tessera::frontend::detail {

inline onnx::AttributeProto int_attr(const std::string& name, int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}

inline onnx::AttributeProto ints_attr(const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
  return a;
}

inline onnx::AttributeProto float_attr(const std::string& name, float v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}

/// Emits ONNX operators through their converters, each input bound to a
/// fresh name under `prefix`.
class Emitter {
 public:
  Emitter(ImportContext& ctx, std::string prefix) : ctx_(ctx), prefix_(std::move(prefix)) {}

  /// `type` applied to `inputs` with `attrs`; its first `outputs` outputs.
  Result<std::vector<graph::ValueId>> ops(const std::string& type, const std::vector<graph::ValueId>& inputs,
                                          int outputs, const std::vector<onnx::AttributeProto>& attrs = {}) {
    onnx::NodeProto n;
    n.set_op_type(type);
    const std::string base = prefix_ + "." + type + std::to_string(next_++);
    n.set_name(base);
    for (const auto& a : attrs) *n.add_attribute() = a;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string in = base + ".in" + std::to_string(i);
      ctx_.values[in] = inputs[i];
      n.add_input(in);
    }
    for (int o = 0; o < outputs; ++o) n.add_output(base + (o == 0 ? "" : ".out" + std::to_string(o)));
    TESSERA_RETURN_IF_ERROR(convert_node(ctx_, n));
    std::vector<graph::ValueId> out;
    for (int o = 0; o < outputs; ++o) out.push_back(ctx_.values.at(n.output(o)));
    return out;
  }

  Result<graph::ValueId> op(const std::string& type, const std::vector<graph::ValueId>& inputs,
                            const std::vector<onnx::AttributeProto>& attrs = {}) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<graph::ValueId> out, ops(type, inputs, 1, attrs));
    return out[0];
  }

  /// Constants: an int64 vector, a float scalar.
  graph::ValueId ints(const std::vector<int64_t>& v) {
    return ctx_.g.add_constant(prefix_ + ".c" + std::to_string(next_++),
                               graph::Constant::from_int64s({static_cast<int64_t>(v.size())}, v));
  }
  graph::ValueId scalar(float v) {
    return ctx_.g.add_constant(prefix_ + ".c" + std::to_string(next_++), graph::Constant::from_floats({}, {v}));
  }
  /// An int64 scalar constant.
  graph::ValueId index(int64_t v) {
    return ctx_.g.add_constant(prefix_ + ".c" + std::to_string(next_++), graph::Constant::from_int64s({}, {v}));
  }

  /// `parts` concatenated along `axis`, at most 32 to a Concat (a kernel of
  /// a hundred inputs is more arguments than a worker measures, and a chain
  /// of a hundred selects): a tree of Concats.
  Result<graph::ValueId> concat(std::vector<graph::ValueId> parts, int64_t axis) {
    constexpr size_t kFanIn = 32;
    while (parts.size() > 1) {
      std::vector<graph::ValueId> joined;
      for (size_t i = 0; i < parts.size(); i += kFanIn) {
        const std::vector<graph::ValueId> chunk(
            parts.begin() + static_cast<std::ptrdiff_t>(i),
            parts.begin() + static_cast<std::ptrdiff_t>(std::min(parts.size(), i + kFanIn)));
        if (chunk.size() == 1) {
          joined.push_back(chunk[0]);
          continue;
        }
        TESSERA_ASSIGN_OR_RETURN(graph::ValueId c, op("Concat", chunk, {int_attr("axis", axis)}));
        joined.push_back(c);
      }
      parts = std::move(joined);
    }
    return parts.at(0);
  }

  /// x[index] along axis 0, that axis dropped.
  Result<graph::ValueId> at(graph::ValueId x, int64_t index) {
    const graph::ValueId i =
        ctx_.g.add_constant(prefix_ + ".i" + std::to_string(next_++), graph::Constant::from_int64s({}, {index}));
    return op("Gather", {x, i}, {int_attr("axis", 0)});
  }

  ImportContext& ctx() { return ctx_; }

 private:
  ImportContext& ctx_;
  std::string prefix_;
  int next_ = 0;
};

}  // namespace tessera::frontend::detail
