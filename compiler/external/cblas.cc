#include "compiler/external/cblas.h"

#include <climits>
#include <optional>
#include <sstream>

namespace tessera::external {
namespace {

using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::ValueId;

int64_t product(const std::vector<int64_t>& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

bool all_f32(const Graph& g, const Node& n) {
  for (ValueId v : n.inputs)
    if (g.value(v).dtype != DType::f32()) return false;
  for (ValueId v : n.outputs)
    if (g.value(v).dtype != DType::f32()) return false;
  return true;
}

// The shape MatMul operand `i` is read as, when its data is the value's
// buffer as it is: the value's shape, or a view (fold_matmul_views) that only
// renames the row-major positions (a flatten: [1, 200, 1, 1] as [1, 200]).
// nullopt for a view that moves data (a transpose).
std::optional<std::vector<int64_t>> operand_shape(const Graph& g, const Node& n, size_t i) {
  const std::vector<int64_t>& source = g.value(n.inputs[i]).shape;
  const auto* attrs = std::get_if<graph::MatMulAttrs>(&n.attrs);
  if (!attrs) return source;
  const graph::MatMulAttrs::View& view = i == 0 ? attrs->a : attrs->b;
  if (view.map.empty()) return source;
  if (view.map.size() != source.size()) return std::nullopt;
  for (size_t d = 0; d < view.shape.size(); ++d) {
    if (view.shape[d] == 1) continue;  // never stepped along
    int64_t offset = 0;                // source flat offset of one step along view dim d
    for (size_t j = 0; j < source.size(); ++j) {
      if (view.map[j].size() != view.shape.size()) return std::nullopt;
      offset += view.map[j][d] * product(source, j + 1, source.size());
    }
    if (offset != product(view.shape, d + 1, view.shape.size())) return std::nullopt;
  }
  return view.shape;
}

bool is_matmul(const Graph& g, const Node& n) {
  if (!all_f32(g, n) || n.outputs.size() != 1) return false;
  if (n.kind == OpKind::kGemm) {
    if (n.inputs.size() < 2 || g.value(n.inputs[0]).shape.size() != 2 || g.value(n.inputs[1]).shape.size() != 2)
      return false;
    return n.inputs.size() == 2 || g.value(n.inputs[2]).shape.size() <= 2;
  }
  if (n.kind != OpKind::kMatMul || n.inputs.size() != 2) return false;
  const auto a = operand_shape(g, n, 0), b = operand_shape(g, n, 1);
  return a && b && a->size() >= 2 && b->size() >= 2;  // a view that moves data stays Tessera's
}

bool is_unary_epilogue(OpKind k) {
  return k == OpKind::kRelu || k == OpKind::kLeakyRelu || k == OpKind::kClip || k == OpKind::kSigmoid ||
         k == OpKind::kTanh || k == OpKind::kErf;
}

bool is_binary_epilogue(OpKind k) {
  return k == OpKind::kAdd || k == OpKind::kSub || k == OpKind::kMul || k == OpKind::kDiv || k == OpKind::kMax ||
         k == OpKind::kMin;
}

// Whether `from` broadcasts to `to` (numpy rules, `to` unchanged).
bool broadcasts_to(const std::vector<int64_t>& from, const std::vector<int64_t>& to) {
  if (from.size() > to.size()) return false;
  const size_t off = to.size() - from.size();
  for (size_t d = 0; d < from.size(); ++d)
    if (from[d] != 1 && from[d] != to[off + d]) return false;
  return true;
}

bool is_epilogue(const Graph& g, const Node& n, ValueId v) {
  if (!all_f32(g, n) || n.outputs.size() != 1) return false;
  const std::vector<int64_t>& shape = g.value(v).shape;
  if (g.value(n.outputs[0]).shape != shape) return false;
  if (is_unary_epilogue(n.kind)) return n.inputs.size() == 1;
  if (!is_binary_epilogue(n.kind) || n.inputs.size() != 2) return false;
  for (ValueId in : n.inputs)
    if (!broadcasts_to(g.value(in).shape, shape)) return false;
  return true;
}

std::string f32(double x) {
  std::ostringstream s;
  s.precision(9);
  s << x;
  std::string t = s.str();
  if (t.find_first_of(".eEn") == std::string::npos) t += ".0";
  return "(float)" + t;
}

// The flat index into a tensor of shape `in` broadcast to `out`, at output
// flat index `i` (C expression).
std::string broadcast_index(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  if (in == out) return "i";
  std::string e;
  const size_t off = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 1) continue;
    const int64_t out_stride = product(out, off + d + 1, out.size()), in_stride = product(in, d + 1, in.size());
    e += (e.empty() ? "" : " + ") + std::string("(i / ") + std::to_string(out_stride) + " % " + std::to_string(in[d]) +
         ") * " + std::to_string(in_stride);
  }
  return e.empty() ? "0" : e;
}

// Generates the C function of one node: `static void op<k>(inputs..., out)`.
class RegionWriter {
 public:
  explicit RegionWriter(const Graph& body) : g_(body) {}

  Result<std::string> function(size_t k, const Node& n) {
    std::ostringstream s;
    s << "/* " << n.name << ": " << graph::op_kind_name(n.kind) << " */\nstatic void op" << k << "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) s << "const float* restrict in" << i << ", ";
    s << "float* restrict out) {\n";
    if (!all_f32(g_, n)) return cannot(n, "only float32 is taken");
    if (n.kind == OpKind::kMatMul) {
      TESSERA_RETURN_IF_ERROR(matmul(n, s));
    } else if (n.kind == OpKind::kGemm) {
      TESSERA_RETURN_IF_ERROR(gemm(n, s));
    } else if (is_unary_epilogue(n.kind) || is_binary_epilogue(n.kind)) {
      TESSERA_RETURN_IF_ERROR(elementwise(n, s));
    } else {
      return cannot(n, std::string("the operator ") + graph::op_kind_name(n.kind) + " is not taken");
    }
    s << "}\n\n";
    return s.str();
  }

 private:
  static Status cannot(const Node& n, const std::string& why) {
    return Status(ErrorCode::kInvalidArgument, "node " + n.name + ": " + why);
  }

  static Status check_int(const Node& n, std::initializer_list<int64_t> dims) {
    for (int64_t d : dims)
      if (d > INT_MAX) return cannot(n, "a dimension beyond cblas's int range");
    return Status::ok();
  }

  // Batch dimensions of an operand: they must equal the output's (right
  // aligned) or be all ones; broadcasting on both sides is not taken.
  Result<bool> batched(const Node& n, const std::vector<int64_t>& in, const std::vector<int64_t>& out) const {
    const std::vector<int64_t> in_batch(in.begin(), in.end() - 2), out_batch(out.begin(), out.end() - 2);
    if (product(in_batch, 0, in_batch.size()) == 1) return false;
    std::vector<int64_t> padded(out_batch.size() - std::min(out_batch.size(), in_batch.size()), 1);
    padded.insert(padded.end(), in_batch.begin(), in_batch.end());
    if (padded == out_batch) return true;
    return cannot(n, "batch dimensions " + graph::shape_string(in) + " broadcast against the other operand's");
  }

  Status matmul(const Node& n, std::ostringstream& s) const {
    const auto a_shape = operand_shape(g_, n, 0), b_shape = operand_shape(g_, n, 1);
    if (!a_shape || !b_shape) return cannot(n, "an operand read through a view that moves data");
    const std::vector<int64_t>& a = *a_shape;
    const std::vector<int64_t>& b = *b_shape;
    const auto& o = g_.value(n.outputs[0]).shape;
    if (a.size() < 2 || b.size() < 2 || o.size() < 2) return cannot(n, "a vector operand");
    const int64_t m = a[a.size() - 2], k = a.back(), nn = b.back(), batch = product(o, 0, o.size() - 2);
    TESSERA_ASSIGN_OR_RETURN(bool a_batched, batched(n, a, o));
    TESSERA_ASSIGN_OR_RETURN(bool b_batched, batched(n, b, o));
    TESSERA_RETURN_IF_ERROR(check_int(n, {m * batch, k, nn}));
    if (!b_batched) {  // one call: the batch folds into the rows of A
      const int64_t rows = a_batched ? m * batch : m;
      s << "  cblas_sgemm(101, 111, 111, " << rows << ", " << nn << ", " << k << ", 1.0f, in0, " << k << ", in1, " << nn
        << ", 0.0f, out, " << nn << ");\n";
      if (!a_batched && batch > 1)
        s << "  for (int64_t b = 1; b < " << batch << "; ++b) memcpy(out + b * " << m * nn << ", out, sizeof(float) * "
          << m * nn << ");\n";
      return Status::ok();
    }
    s << "  for (int64_t b = 0; b < " << batch << "; ++b)\n    cblas_sgemm(101, 111, 111, " << m << ", " << nn << ", "
      << k << ", 1.0f, in0 + " << (a_batched ? "b * " + std::to_string(m * k) : "0") << ", " << k << ", in1 + b * "
      << k * nn << ", " << nn << ", 0.0f, out + b * " << m * nn << ", " << nn << ");\n";
    return Status::ok();
  }

  Status gemm(const Node& n, std::ostringstream& s) const {
    const auto& attrs = std::get<graph::GemmAttrs>(n.attrs);
    const auto& a = g_.value(n.inputs[0]).shape;
    const auto& b = g_.value(n.inputs[1]).shape;
    const auto& o = g_.value(n.outputs[0]).shape;
    const int64_t m = o[0], nn = o[1], k = attrs.trans_a ? a[0] : a[1];
    TESSERA_RETURN_IF_ERROR(check_int(n, {m, nn, k}));
    double beta = 0.0;
    if (n.inputs.size() > 2 && attrs.beta != 0.0) {
      const auto& c = g_.value(n.inputs[2]).shape;
      if (!broadcasts_to(c, o)) return cannot(n, "a bias of shape " + graph::shape_string(c));
      s << "  for (int64_t i = 0; i < " << m * nn << "; ++i) out[i] = in2[" << broadcast_index(c, o) << "];\n";
      beta = attrs.beta;
    }
    s << "  cblas_sgemm(101, " << (attrs.trans_a ? 112 : 111) << ", " << (attrs.trans_b ? 112 : 111) << ", " << m
      << ", " << nn << ", " << k << ", " << f32(attrs.alpha) << ", in0, " << a[1] << ", in1, " << b[1] << ", "
      << f32(beta) << ", out, " << nn << ");\n";
    return Status::ok();
  }

  Status elementwise(const Node& n, std::ostringstream& s) const {
    const auto& o = g_.value(n.outputs[0]).shape;
    std::vector<std::string> x;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const auto& shape = g_.value(n.inputs[i]).shape;
      if (!broadcasts_to(shape, o)) return cannot(n, "an operand of shape " + graph::shape_string(shape));
      x.push_back("in" + std::to_string(i) + "[" + broadcast_index(shape, o) + "]");
    }
    std::string e;
    switch (n.kind) {
      case OpKind::kAdd: e = x[0] + " + " + x[1]; break;
      case OpKind::kSub: e = x[0] + " - " + x[1]; break;
      case OpKind::kMul: e = x[0] + " * " + x[1]; break;
      case OpKind::kDiv: e = x[0] + " / " + x[1]; break;
      case OpKind::kMax: e = "fmaxf(" + x[0] + ", " + x[1] + ")"; break;
      case OpKind::kMin: e = "fminf(" + x[0] + ", " + x[1] + ")"; break;
      case OpKind::kRelu: e = "x > 0.0f ? x : 0.0f"; break;
      case OpKind::kLeakyRelu:
        e = "x >= 0.0f ? x : " + f32(std::get<graph::ScalarAttrs>(n.attrs).value) + " * x";
        break;
      case OpKind::kClip: {
        const auto& c = std::get<graph::AffineAttrs>(n.attrs);
        e = "fminf(fmaxf(x, " + f32(c.alpha) + "), " + f32(c.beta) + ")";
        break;
      }
      case OpKind::kSigmoid: e = "1.0f / (1.0f + expf(-x))"; break;
      case OpKind::kTanh: e = "tanhf(x)"; break;
      case OpKind::kErf: e = "erff(x)"; break;
      default: return cannot(n, "not an elementwise operator");
    }
    s << "  for (int64_t i = 0; i < " << graph::shape_size(o) << "; ++i) {\n";
    if (n.inputs.size() == 1) s << "    const float x = " << x[0] << ";\n";
    s << "    out[i] = " << e << ";\n  }\n";
    return Status::ok();
  }

  const Graph& g_;
};

// The entry point: binds the arguments, allocates the intermediates from the
// runtime's workspace, calls the node functions in order and frees.
std::string entry_point(const Graph& body, const std::string& symbol) {
  std::ostringstream s;
  // Its arguments' count and bytes, for the loader (runtime/c_abi.h,
  // TESSERA_KERNEL_ARGS_SUFFIX).
  s << "const int64_t " << symbol << "__tessera_args[] = {" << body.inputs().size() + body.outputs().size();
  for (const std::vector<ValueId>* list : {&body.inputs(), &body.outputs()})
    for (ValueId v : *list) s << ", " << graph::shape_size(body.value(v).shape) * 4;
  s << "};\n";
  s << "int32_t " << symbol << "(void** args) {\n";
  std::vector<bool> bound(body.values().size(), false);
  int arg = 0;
  for (ValueId v : body.inputs()) {
    s << "  float* v" << v << " = (float*)args[" << arg++ << "];\n";
    bound[static_cast<size_t>(v)] = true;
  }
  for (ValueId v : body.outputs()) {
    s << "  float* v" << v << " = (float*)args[" << arg++ << "];\n";
    bound[static_cast<size_t>(v)] = true;
  }
  std::vector<ValueId> temps;
  for (const Node& n : body.nodes())
    for (ValueId v : n.outputs)
      if (!bound[static_cast<size_t>(v)]) temps.push_back(v);
  for (ValueId v : temps)
    s << "  float* v" << v << " = (float*)tessera_workspace_alloc(" << graph::shape_size(body.value(v).shape) * 4
      << ");\n";
  if (!temps.empty()) {
    s << "  if (";
    for (size_t i = 0; i < temps.size(); ++i) s << (i ? " || " : "") << "!v" << temps[i];
    s << ") {\n";
    for (ValueId v : temps) s << "    tessera_workspace_free(v" << v << ");\n";
    s << "    return -1;\n  }\n";
  }
  for (size_t k = 0; k < body.nodes().size(); ++k) {
    const Node& n = body.nodes()[k];
    s << "  op" << k << "(";
    for (ValueId v : n.inputs) s << "v" << v << ", ";
    s << "v" << n.outputs[0] << ");\n";
  }
  for (ValueId v : temps) s << "  tessera_workspace_free(v" << v << ");\n";
  s << "  return 0;\n}\n";
  return s.str();
}

// Declared here rather than included: the generated file needs no BLAS
// headers, so a cross compiler without arm64 -dev packages compiles it.
constexpr const char* kPrologue = R"(/* Generated by Tessera's cblas backend. */
#include <math.h>
#include <stdint.h>
#include <string.h>

void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc);
void* tessera_workspace_alloc(int64_t nbytes);
void tessera_workspace_free(void* ptr);

)";

class CblasBackend final : public Backend {
 public:
  std::string name() const override { return "cblas"; }
  BackendKind kind() const override { return BackendKind::kCSource; }

  graph::PartitionRules partition_rules() const override {
    graph::PartitionRules rules;
    rules.backend = name();
    rules.supports = is_matmul;
    rules.patterns.push_back(graph::CompositePattern{"matmul_epilogue", is_matmul, is_epilogue, 4});
    rules.min_nodes = 1;
    return rules;
  }

  Result<ExternalCode> generate(const Graph& body, const std::string& symbol) const override {
    std::string source = kPrologue;
    RegionWriter writer(body);
    for (size_t k = 0; k < body.nodes().size(); ++k) {
      const Node& n = body.nodes()[k];
      if (n.outputs.size() != 1) return Status(ErrorCode::kInvalidArgument, "node " + n.name + ": several outputs");
      TESSERA_ASSIGN_OR_RETURN(std::string f, writer.function(k, n));
      source += f;
    }
    for (ValueId v : body.inputs())
      if (body.value(v).dtype != DType::f32())
        return Status(ErrorCode::kInvalidArgument, "input " + body.value(v).name + " is not float32");
    source += entry_point(body, symbol);
    return ExternalCode{symbol, std::move(source), ""};
  }

  std::vector<std::string> link_libraries() const override { return {"openblas"}; }
  std::string runtime_library() const override { return "libopenblas.so.0"; }
};

}  // namespace

std::unique_ptr<Backend> make_cblas_backend() {
  return std::make_unique<CblasBackend>();
}

}  // namespace tessera::external
