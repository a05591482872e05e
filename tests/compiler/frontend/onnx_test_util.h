// Builds small ONNX models in memory with the protobuf API.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace tessera::frontend::test {

/// A model under construction (default domain at `opset`).
struct ModelBuilder {
  onnx::ModelProto model;

  explicit ModelBuilder(int64_t opset = 13) {
    model.set_ir_version(8);
    model.set_producer_name("tessera-test");
    auto* o = model.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    model.mutable_graph()->set_name("test");
  }

  static void set_shape(onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims,
                        int elem_type) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem_type);
    auto* shape = t->mutable_shape();
    for (int64_t d : dims) {
      auto* dim = shape->add_dim();
      if (d < 0)
        dim->set_dim_param("N" + std::to_string(-d));  // -1 -> "N1": dynamic
      else
        dim->set_dim_value(d);
    }
  }

  /// A graph input; negative dims become named dynamic dims.
  void input(const std::string& name, const std::vector<int64_t>& dims, int elem_type = onnx::TensorProto::FLOAT) {
    set_shape(model.mutable_graph()->add_input(), name, dims, elem_type);
  }
  void output(const std::string& name, const std::vector<int64_t>& dims, int elem_type = onnx::TensorProto::FLOAT) {
    set_shape(model.mutable_graph()->add_output(), name, dims, elem_type);
  }

  void floats(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& data) {
    auto* t = model.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float)));
  }
  void int64s(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& data) {
    auto* t = model.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : data) t->add_int64_data(v);
  }

  /// An initializer of any element type from its values' bytes (T is the
  /// storage type: int8_t, uint8_t, int32_t, ...).
  template <typename T>
  void raw(const std::string& name, const std::vector<int64_t>& dims, int elem_type, const std::vector<T>& data) {
    auto* t = model.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(elem_type);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(T)));
  }

  /// Adds a node and returns it for attributes.
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "") {
    auto* n = model.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? outputs.at(0) + "_node" : name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return n;
  }

  std::string bytes() const { return model.SerializeAsString(); }
};

inline void attr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
inline void attr(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
inline void attr(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void attr(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

/// A node of a subgraph: `op` on `inputs`, one output, named after it.
inline onnx::NodeProto make_node(const std::string& op, const std::vector<std::string>& inputs,
                                 const std::string& output) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(output + "_node");
  for (const auto& i : inputs) n.add_input(i);
  n.add_output(output);
  return n;
}

/// A subgraph (an If branch): its nodes, one output.
inline onnx::GraphProto branch(const std::string& name, const std::vector<onnx::NodeProto>& nodes,
                               const std::string& output) {
  onnx::GraphProto g;
  g.set_name(name);
  for (const onnx::NodeProto& n : nodes) *g.add_node() = n;
  g.add_output()->set_name(output);
  return g;
}

/// Graph attribute `name` of `n`.
inline void graph_attr(onnx::NodeProto* n, const std::string& name, const onnx::GraphProto& g) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = g;
}

/// An If's two branches.
inline void set_branches(onnx::NodeProto* n, const onnx::GraphProto& then_g, const onnx::GraphProto& else_g) {
  graph_attr(n, "then_branch", then_g);
  graph_attr(n, "else_branch", else_g);
}

}  // namespace tessera::frontend::test
