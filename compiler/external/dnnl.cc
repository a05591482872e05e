#include "compiler/external/dnnl.h"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace tessera::external {
namespace {

using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::ValueId;
using nlohmann::json;

// Float32 throughout, one output, no empty tensor (oneDNN takes none).
bool all_f32(const Graph& g, const Node& n) {
  for (ValueId v : n.inputs)
    if (g.value(v).dtype != DType::f32() || graph::shape_size(g.value(v).shape) == 0) return false;
  for (ValueId v : n.outputs)
    if (g.value(v).dtype != DType::f32() || graph::shape_size(g.value(v).shape) == 0) return false;
  return n.outputs.size() == 1;
}

size_t rank(const Graph& g, ValueId v) {
  return g.value(v).shape.size();
}

bool is_conv(const Graph& g, const Node& n) {
  if (n.kind != OpKind::kConv || !all_f32(g, n) || n.inputs.size() < 2 || n.inputs.size() > 3) return false;
  const auto& a = std::get<graph::ConvAttrs>(n.attrs);
  return !a.winograd && rank(g, n.inputs[0]) == 4 && g.is_constant(n.inputs[1]) &&
         (n.inputs.size() == 2 || g.is_constant(n.inputs[2]));
}

// A dense layer: Gemm (2-D, alpha 1, A not transposed) or a 2-D MatMul
// without views, its weight a constant.
bool is_dense(const Graph& g, const Node& n) {
  if (!all_f32(g, n) || n.inputs.size() < 2 || !g.is_constant(n.inputs[1])) return false;
  if (rank(g, n.inputs[0]) != 2 || rank(g, n.inputs[1]) != 2) return false;
  if (n.kind == OpKind::kGemm) {
    const auto& a = std::get<graph::GemmAttrs>(n.attrs);
    if (a.alpha != 1.0 || a.trans_a || n.inputs.size() > 3) return false;
    if (n.inputs.size() == 2) return true;
    const auto& c = g.value(n.inputs[2]).shape;
    const int64_t out_n = g.value(n.outputs[0]).shape[1];
    return a.beta == 1.0 && g.is_constant(n.inputs[2]) && graph::shape_size(c) == out_n && c.back() == out_n;
  }
  if (n.kind != OpKind::kMatMul || n.inputs.size() != 2) return false;
  const auto* views = std::get_if<graph::MatMulAttrs>(&n.attrs);
  return !views || (views->a.map.empty() && views->b.map.empty());
}

bool is_pool(const Graph& g, const Node& n) {
  if (!all_f32(g, n) || n.inputs.size() != 1 || rank(g, n.inputs[0]) != 4) return false;
  if (n.kind == OpKind::kGlobalAvgPool) return true;
  if (n.kind != OpKind::kMaxPool && n.kind != OpKind::kAvgPool) return false;
  const auto& a = std::get<graph::PoolAttrs>(n.attrs);
  return !a.indices && a.dilation_h == 1 && a.dilation_w == 1;
}

// Whether `from` broadcasts to `to` (numpy rules).
bool broadcasts_to(const std::vector<int64_t>& from, const std::vector<int64_t>& to) {
  if (from.size() > to.size()) return false;
  const size_t off = to.size() - from.size();
  for (size_t d = 0; d < from.size(); ++d)
    if (from[d] != 1 && from[d] != to[off + d]) return false;
  return true;
}

bool is_add(const Graph& g, const Node& n) {
  if (n.kind != OpKind::kAdd || !all_f32(g, n) || n.inputs.size() != 2) return false;
  const auto& out = g.value(n.outputs[0]).shape;
  return broadcasts_to(g.value(n.inputs[0]).shape, out) && broadcasts_to(g.value(n.inputs[1]).shape, out);
}

bool supports(const Graph& g, const Node& n) {
  if (is_conv(g, n) || is_dense(g, n) || is_pool(g, n) || is_add(g, n)) return true;
  if (!all_f32(g, n) || n.inputs.empty() || rank(g, n.outputs[0]) > 6) return false;
  switch (n.kind) {
    case OpKind::kRelu:
    case OpKind::kClip: return n.inputs.size() == 1;
    case OpKind::kConcat:
    case OpKind::kTranspose: return true;
    default: return false;
  }
}

// Conv / dense + bias or residual add, relu, clip: oneDNN post-ops.
bool is_post_op(const Graph& g, const Node& n, ValueId v) {
  if (!all_f32(g, n) || g.value(n.outputs[0]).shape != g.value(v).shape) return false;
  if (n.kind == OpKind::kRelu || n.kind == OpKind::kClip) return n.inputs.size() == 1;
  if (!is_add(g, n)) return false;
  // The other operand must be computed before the chain's value: a residual
  // made later (a downsampling conv after the block's second conv) ends
  // the chain here, so that its conv takes the add instead and the
  // partitioner, going in node order, keeps the block in one region.
  const ValueId other = n.inputs[0] == v ? n.inputs[1] : n.inputs[0];
  const std::vector<int> producer = g.producers();
  return producer[static_cast<size_t>(other)] < producer[static_cast<size_t>(v)];
}

bool is_anchor(const Graph& g, const Node& n) {
  return is_conv(g, n) || is_dense(g, n);
}

// A Clip's bounds, each only when finite: JSON has no infinity (it would
// write null), and an absent bound is no bound (the module reads ±infinity).
json clip_bounds(const graph::AffineAttrs& a, json op) {
  if (std::isfinite(a.alpha)) op["lo"] = a.alpha;
  if (std::isfinite(a.beta)) op["hi"] = a.beta;
  return op;
}

Status cannot(const Node& n, const std::string& why) {
  return Status(ErrorCode::kInvalidArgument, "node " + n.name + ": " + why);
}

// Writes the payload: one op per node, post-ops folded into the conv or
// dense op they follow.
class PayloadWriter {
 public:
  explicit PayloadWriter(const Graph& body) : g_(body) {
    for (const Node& n : body.nodes())
      for (ValueId v : n.inputs) ++uses_[v];
    for (ValueId v : body.outputs()) ++uses_[v], outputs_.insert(v);
    for (ValueId v : body.inputs()) available_before_.insert(v);
  }

  Result<json> write() {
    json ops = json::array();
    for (const Node& n : g_.nodes()) {
      if (n.outputs.size() != 1) return cannot(n, "several outputs");
      if (!ops.empty() && fold(n, ops.back())) continue;
      TESSERA_ASSIGN_OR_RETURN(json op, node_op(n));
      op["name"] = n.name;
      op["output"] = n.outputs[0];
      if (!ops.empty()) available_before_.insert(ops.back()["output"].get<ValueId>());
      ops.push_back(std::move(op));
    }
    json j;
    j["version"] = std::stoi(kDnnlPayloadVersion);
    j["values"] = json::array();
    std::set<ValueId> listed;
    auto list = [&](ValueId v) {
      if (listed.insert(v).second) j["values"].push_back({{"id", v}, {"shape", g_.value(v).shape}});
    };
    j["inputs"] = json::array();
    for (ValueId v : g_.inputs()) {
      list(v);
      j["inputs"].push_back({{"id", v}, {"weight", weights_.count(v) > 0}});
    }
    for (const Node& n : g_.nodes()) list(n.outputs[0]);
    j["outputs"] = g_.outputs();
    j["ops"] = std::move(ops);
    return j;
  }

 private:
  // Folds `n` into `last` (a conv or dense op) as a post-op when it reads
  // `last`'s value, the only reader, and that value is no region output.
  bool fold(const Node& n, json& last) {
    const std::string op = last["op"];
    if (op != "conv" && op != "dense") return false;
    const ValueId u = last["output"];
    if (uses_[u] != 1 || outputs_.count(u) || g_.value(n.outputs[0]).shape != g_.value(u).shape) return false;
    if (n.kind == OpKind::kRelu && n.inputs[0] == u) {
      last["post_ops"].push_back({{"kind", "relu"}});
    } else if (n.kind == OpKind::kClip && n.inputs[0] == u) {
      const auto& a = std::get<graph::AffineAttrs>(n.attrs);
      last["post_ops"].push_back(clip_bounds(a, {{"kind", "clip"}}));
    } else if (n.kind == OpKind::kAdd && n.inputs.size() == 2 && n.inputs[0] != n.inputs[1] &&
               (n.inputs[0] == u || n.inputs[1] == u)) {
      const ValueId other = n.inputs[0] == u ? n.inputs[1] : n.inputs[0];
      // The operand must exist when the anchor runs, and have the output's
      // rank unless it comes from outside (a plain buffer, reshaped freely).
      if (!available_before_.count(other)) return false;
      if (!g_.is_input(other) && rank(g_, other) != rank(g_, u)) return false;
      last["post_ops"].push_back({{"kind", "add"}, {"input", other}});
    } else {
      return false;
    }
    last["output"] = n.outputs[0];
    return true;
  }

  Result<json> node_op(const Node& n) {
    json op;
    op["inputs"] = n.inputs;
    if (!all_f32(g_, n)) return cannot(n, "only float32 is taken");
    switch (n.kind) {
      case OpKind::kConv: return conv(n, op);
      case OpKind::kGemm:
      case OpKind::kMatMul: return dense(n, op);
      case OpKind::kMaxPool:
      case OpKind::kAvgPool:
      case OpKind::kGlobalAvgPool: return pool(n, op);
      case OpKind::kRelu: op["op"] = "relu"; return op;
      case OpKind::kClip: {
        const auto& a = std::get<graph::AffineAttrs>(n.attrs);
        op["op"] = "clip";
        return clip_bounds(a, std::move(op));
      }
      case OpKind::kAdd: return add(n, op);
      case OpKind::kConcat: op["op"] = "concat", op["axis"] = std::get<graph::AxisAttrs>(n.attrs).axis; return op;
      case OpKind::kTranspose: op["op"] = "transpose", op["perm"] = std::get<graph::PermAttrs>(n.attrs).perm; return op;
      default: return cannot(n, std::string("the operator ") + graph::op_kind_name(n.kind) + " is not taken");
    }
  }

  Result<json> conv(const Node& n, json& op) {
    const auto& a = std::get<graph::ConvAttrs>(n.attrs);
    if (a.winograd) return cannot(n, "a Winograd-transformed weight");
    for (size_t i = 1; i < n.inputs.size(); ++i) {
      if (!g_.is_input(n.inputs[i])) return cannot(n, "a weight computed inside the region");
      weights_.insert(n.inputs[i]);
    }
    op["op"] = "conv";
    op["nhwc"] = a.nhwc;
    op["groups"] = a.groups;
    op["strides"] = {a.stride_h, a.stride_w};
    op["dilations"] = {a.dilation_h - 1, a.dilation_w - 1};
    op["pads_begin"] = {a.pad_top, a.pad_left};
    op["pads_end"] = {a.pad_bottom, a.pad_right};
    op["post_ops"] = json::array();
    return op;
  }

  Result<json> dense(const Node& n, json& op) {
    for (size_t i = 1; i < n.inputs.size(); ++i) {
      if (!g_.is_input(n.inputs[i])) return cannot(n, "a weight computed inside the region");
      weights_.insert(n.inputs[i]);
    }
    const bool trans_b = n.kind == OpKind::kGemm && std::get<graph::GemmAttrs>(n.attrs).trans_b;
    op["op"] = "dense";
    op["weight_layout"] = trans_b ? "nk" : "kn";  // [N, K] or [K, N]
    op["post_ops"] = json::array();
    return op;
  }

  Result<json> pool(const Node& n, json& op) {
    const auto& in = g_.value(n.inputs[0]).shape;
    if (n.kind == OpKind::kGlobalAvgPool) {
      op["op"] = "avg_pool", op["nhwc"] = false, op["kernel"] = {in[2], in[3]}, op["strides"] = {1, 1};
      op["pads_begin"] = {0, 0}, op["pads_end"] = {0, 0}, op["include_pad"] = false;
      return op;
    }
    const auto& a = std::get<graph::PoolAttrs>(n.attrs);
    if (a.indices || a.dilation_h != 1 || a.dilation_w != 1) return cannot(n, "dilated windows or indices");
    op["op"] = n.kind == OpKind::kMaxPool ? "max_pool" : "avg_pool";
    op["nhwc"] = a.nhwc;
    op["kernel"] = {a.kernel_h, a.kernel_w};
    op["strides"] = {a.stride_h, a.stride_w};
    op["pads_begin"] = {a.pad_top, a.pad_left};
    op["pads_end"] = {a.pad_bottom, a.pad_right};
    op["include_pad"] = a.count_include_pad;
    return op;
  }

  // oneDNN broadcasts the second operand only: the full one goes first.
  Result<json> add(const Node& n, json& op) {
    const auto& out = g_.value(n.outputs[0]).shape;
    ValueId full = n.inputs[0], other = n.inputs[1];
    if (g_.value(full).shape != out) std::swap(full, other);
    if (g_.value(full).shape != out) return cannot(n, "both operands broadcast; oneDNN broadcasts the second only");
    if (!g_.is_input(other) && rank(g_, other) != out.size())
      return cannot(n, "an operand of lower rank computed inside the region");
    op["op"] = "add";
    op["inputs"] = {full, other};
    return op;
  }

  const Graph& g_;
  std::map<ValueId, int> uses_;
  std::set<ValueId> outputs_, weights_, available_before_;
};

class DnnlBackend final : public Backend {
 public:
  std::string name() const override { return "dnnl"; }
  BackendKind kind() const override { return BackendKind::kGraphPayload; }

  graph::PartitionRules partition_rules() const override {
    graph::PartitionRules rules;
    rules.backend = name();
    rules.supports = supports;
    rules.patterns.push_back(graph::CompositePattern{"conv_dense_post_ops", is_anchor, is_post_op, 3});
    rules.min_nodes = 1;
    return rules;
  }

  Result<ExternalCode> generate(const Graph& body, const std::string& symbol) const override {
    for (ValueId v : body.inputs())
      if (body.value(v).dtype != DType::f32())
        return Status(ErrorCode::kInvalidArgument, "input " + body.value(v).name + " is not float32");
    TESSERA_ASSIGN_OR_RETURN(json payload, PayloadWriter(body).write());
    payload["symbol"] = symbol;
    return ExternalCode{symbol, payload.dump(), kDnnlPayloadVersion};
  }

  std::vector<std::string> link_libraries() const override { return {}; }
  std::string runtime_library() const override { return kDnnlModuleLibrary; }
};

}  // namespace

std::unique_ptr<Backend> make_dnnl_backend() {
  return std::make_unique<DnnlBackend>();
}

}  // namespace tessera::external
