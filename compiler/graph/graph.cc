#include "compiler/graph/graph.h"

#include <cstring>
#include <iterator>
#include <limits>
#include <set>
#include <sstream>

#include "base/half.h"

namespace tessera::graph {

const OpTraits& op_traits(OpKind kind) {
  // The scalar function column's words: none, attrs, unary(F), binary(F).
  // clang-format off
#define TESSERA_SCALAR_none ScalarFn{}
#define TESSERA_SCALAR_attrs ScalarFn{ScalarFn::Of::kAttrs}
#define TESSERA_SCALAR_unary(f) ScalarFn{ScalarFn::Of::kUnary, ops::UnaryFn::f}
#define TESSERA_SCALAR_binary(f) ScalarFn{ScalarFn::Of::kBinary, {}, ops::BinaryFn::f}
  // clang-format on
  static constexpr OpTraits kTraits[] = {
#define TESSERA_GRAPH_OP_TRAITS(e, name, fusion, foldable, scalar) \
  {name, FusionRule::fusion, foldable, TESSERA_SCALAR_##scalar},
      TESSERA_GRAPH_OPS(TESSERA_GRAPH_OP_TRAITS)
#undef TESSERA_GRAPH_OP_TRAITS
  };
#undef TESSERA_SCALAR_none
#undef TESSERA_SCALAR_attrs
#undef TESSERA_SCALAR_unary
#undef TESSERA_SCALAR_binary
  static_assert(std::size(kTraits) == static_cast<size_t>(OpKind::kLoop) + 1, "a row for every kind");
  return kTraits[static_cast<size_t>(kind)];
}

int64_t shape_size(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  // Saturates instead of overflowing: a file can declare absurd dims, and
  // callers compare the result with real sizes.
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<int64_t>::max();
  return n;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s.append(i ? ", " : "").append(std::to_string(shape[i]));
  return s + "]";
}

// ---------------------------------------------------------------------------
// Constant

int64_t Constant::num_elements() const {
  return shape_size(shape);
}

namespace {
template <typename T>
T load_as(const std::vector<uint8_t>& bytes, int64_t i) {
  T v;
  std::memcpy(&v, bytes.data() + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}
template <typename T>
void store_as(std::vector<uint8_t>& bytes, int64_t i, T v) {
  std::memcpy(bytes.data() + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}
}  // namespace

double Constant::at(int64_t i) const {
  if (dtype == DType::f32()) return load_as<float>(bytes, i);
  if (dtype == DType::f64()) return load_as<double>(bytes, i);
  if (dtype == DType::i64()) return static_cast<double>(load_as<int64_t>(bytes, i));
  if (dtype == DType::i32()) return load_as<int32_t>(bytes, i);
  if (dtype == DType::i8()) return load_as<int8_t>(bytes, i);
  if (dtype == DType::u8() || dtype == DType::boolean()) return load_as<uint8_t>(bytes, i);
  if (dtype == DType::f16()) return half_to_float(load_as<uint16_t>(bytes, i));
  if (dtype == DType::bf16()) return bfloat16_to_float(load_as<uint16_t>(bytes, i));
  return 0.0;  // other types never become constants (the importer rejects them)
}

std::vector<double> Constant::to_doubles() const {
  std::vector<double> out(static_cast<size_t>(num_elements()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = at(static_cast<int64_t>(i));
  return out;
}

std::vector<int64_t> Constant::to_int64s() const {
  std::vector<int64_t> out(static_cast<size_t>(num_elements()));
  for (size_t i = 0; i < out.size(); ++i) {
    const auto k = static_cast<int64_t>(i);
    if (dtype == DType::i64()) {
      out[i] = load_as<int64_t>(bytes, k);
    } else {
      const double v = at(k);
      out[i] = v >= 9.2233720368547758e18    ? INT64_MAX
               : v <= -9.2233720368547758e18 ? INT64_MIN
                                             : static_cast<int64_t>(v);
    }
  }
  return out;
}

Constant Constant::from_doubles(DType dtype, std::vector<int64_t> shape, const std::vector<double>& values) {
  Constant c{dtype, std::move(shape), {}};
  c.bytes.resize(values.size() * static_cast<size_t>(dtype.storage_bytes()));
  for (size_t i = 0; i < values.size(); ++i) {
    const auto k = static_cast<int64_t>(i);
    const double v = values[i];
    if (dtype == DType::f32())
      store_as<float>(c.bytes, k, static_cast<float>(v));
    else if (dtype == DType::f64())
      store_as<double>(c.bytes, k, v);
    else if (dtype == DType::i64())
      store_as<int64_t>(c.bytes, k, static_cast<int64_t>(v));
    else if (dtype == DType::i32())
      store_as<int32_t>(c.bytes, k, static_cast<int32_t>(v));
    else if (dtype == DType::i8())
      store_as<int8_t>(c.bytes, k, static_cast<int8_t>(v));
    else if (dtype == DType::boolean())
      store_as<uint8_t>(c.bytes, k, v != 0.0);
    else if (dtype == DType::f16())
      store_as<uint16_t>(c.bytes, k, float_to_half(static_cast<float>(v)));
    else if (dtype == DType::bf16())
      store_as<uint16_t>(c.bytes, k, float_to_bfloat16(static_cast<float>(v)));
    else
      store_as<uint8_t>(c.bytes, k, static_cast<uint8_t>(v));
  }
  return c;
}

Constant Constant::from_floats(std::vector<int64_t> shape, const std::vector<float>& values) {
  Constant c{DType::f32(), std::move(shape), std::vector<uint8_t>(values.size() * sizeof(float))};
  if (!c.bytes.empty()) std::memcpy(c.bytes.data(), values.data(), c.bytes.size());  // none: both may be null
  return c;
}

Constant Constant::from_int64s(std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  Constant c{DType::i64(), std::move(shape), std::vector<uint8_t>(values.size() * sizeof(int64_t))};
  if (!c.bytes.empty()) std::memcpy(c.bytes.data(), values.data(), c.bytes.size());  // none: both may be null
  return c;
}

// ---------------------------------------------------------------------------
// Graph

ValueId Graph::add_value(std::string name, std::vector<int64_t> shape, DType dtype) {
  values_.push_back(Value{std::move(name), std::move(shape), dtype});
  return static_cast<ValueId>(values_.size() - 1);
}

ValueId Graph::add_input(std::string name, std::vector<int64_t> shape, DType dtype) {
  ValueId id = add_value(std::move(name), std::move(shape), dtype);
  inputs_.push_back(id);
  return id;
}

ValueId Graph::add_constant(std::string name, Constant data) {
  return add_constant(std::move(name), std::make_shared<const Constant>(std::move(data)));
}

ValueId Graph::add_constant(std::string name, std::shared_ptr<const Constant> data) {
  ValueId id = add_value(std::move(name), data->shape, data->dtype);
  constants_[id] = std::move(data);
  return id;
}

void Graph::add_node(Node node) {
  nodes_.push_back(std::move(node));
}

ValueId Graph::add_op(std::string name, OpKind kind, Attrs attrs, std::vector<ValueId> inputs,
                      std::vector<int64_t> out_shape, DType out_dtype) {
  ValueId out = add_value(name, std::move(out_shape), out_dtype);
  nodes_.push_back(Node{std::move(name), kind, std::move(attrs), std::move(inputs), {out}});
  return out;
}

void Graph::set_outputs(std::vector<ValueId> outputs, std::vector<std::string> names) {
  outputs_ = std::move(outputs);
  output_names_ = std::move(names);
  if (!output_names_.empty()) output_names_.resize(outputs_.size());
}

const std::string& Graph::output_name(size_t i) const {
  if (i < output_names_.size() && !output_names_[i].empty()) return output_names_[i];
  return value(outputs_.at(i)).name;
}

void Graph::replace_output(size_t i, ValueId value) {
  if (output_names_.empty()) output_names_.resize(outputs_.size());
  if (output_names_[i].empty()) output_names_[i] = this->value(outputs_.at(i)).name;
  outputs_.at(i) = value;
}

bool Graph::is_input(ValueId id) const {
  for (ValueId i : inputs_)
    if (i == id) return true;
  return false;
}

std::vector<int> Graph::producers() const {
  std::vector<int> p(values_.size(), -1);
  for (size_t n = 0; n < nodes_.size(); ++n)
    for (ValueId v : nodes_[n].outputs) p[static_cast<size_t>(v)] = static_cast<int>(n);
  return p;
}

std::vector<int> Graph::use_counts() const {
  std::vector<int> uses(values_.size(), 0);
  for (const Node& n : nodes_)
    for (ValueId v : n.inputs) ++uses[static_cast<size_t>(v)];
  for (ValueId v : outputs_) ++uses[static_cast<size_t>(v)];
  return uses;
}

Status Graph::validate() const {
  const auto n_values = static_cast<ValueId>(values_.size());
  std::vector<bool> defined(values_.size(), false);
  for (ValueId v : inputs_) defined[static_cast<size_t>(v)] = true;
  for (const auto& [id, c] : constants_) {
    defined[static_cast<size_t>(id)] = true;
    if (static_cast<int64_t>(c->bytes.size()) != c->num_elements() * c->dtype.storage_bytes())
      return Status(ErrorCode::kInternal, "constant " + values_[id].name + " has the wrong byte size");
  }
  for (const Node& n : nodes_) {
    for (ValueId v : n.inputs)
      if (v < 0 || v >= n_values || !defined[static_cast<size_t>(v)])
        return Status(ErrorCode::kInternal, "node " + n.name + " reads a value that is not defined before it");
    for (ValueId v : n.outputs) {
      if (v < 0 || v >= n_values || defined[static_cast<size_t>(v)])
        return Status(ErrorCode::kInternal, "node " + n.name + " writes a value that already has a producer");
      defined[static_cast<size_t>(v)] = true;
    }
  }
  for (ValueId v : outputs_)
    if (v < 0 || v >= n_values || !defined[static_cast<size_t>(v)])
      return Status(ErrorCode::kInternal, "a graph output is never defined");
  return Status::ok();
}

std::optional<NodeScalarFn> scalar_fn(const Node& n) {
  const ScalarFn& s = op_traits(n.kind).scalar;
  NodeScalarFn f;
  switch (s.of) {
    case ScalarFn::Of::kNone: return std::nullopt;
    case ScalarFn::Of::kBinary:
      f.is_binary = true;
      f.binary = s.binary;
      return f;
    case ScalarFn::Of::kUnary: f.unary = s.unary; break;
    case ScalarFn::Of::kAttrs:
      if (const auto* b = std::get_if<BinaryAttrs>(&n.attrs)) {
        f.is_binary = true;
        f.binary = b->fn;
        return f;
      }
      if (const auto* u = std::get_if<UnaryAttrs>(&n.attrs)) {
        f.unary = u->fn;
        f.params = u->params;
        return f;
      }
      return std::nullopt;  // a malformed node: its attributes name no function
  }
  // A named function's parameters: LeakyRelu's slope, Clip's and
  // HardSigmoid's pair.
  if (const auto* a = std::get_if<ScalarAttrs>(&n.attrs)) f.params.alpha = a->value;
  if (const auto* a = std::get_if<AffineAttrs>(&n.attrs)) f.params = {.alpha = a->alpha, .beta = a->beta};
  return f;
}

OpPattern node_pattern(const Graph& g, const Node& n) {
  switch (op_traits(n.kind).fusion) {
    case FusionRule::kComplex: return OpPattern::kComplex;
    case FusionRule::kReduction: return OpPattern::kReduction;
    case FusionRule::kInjective: return OpPattern::kInjective;
    case FusionRule::kBroadcast: return OpPattern::kBroadcast;
    case FusionRule::kElementwise: return OpPattern::kElementwise;
    case FusionRule::kByShapes: {
      const auto& out = g.value(n.outputs[0]).shape;
      for (ValueId v : n.inputs)
        if (g.value(v).shape != out) return OpPattern::kBroadcast;
      return OpPattern::kElementwise;
    }
    case FusionRule::kByLetters: {
      // A contraction is compute like a matmul; without summed letters it
      // only moves or multiplies data.
      const auto& a = std::get<EinsumAttrs>(n.attrs);
      size_t letters = 0;
      for (int64_t e : a.extents) letters += e > 0;
      if (letters > a.output.size()) return OpPattern::kComplex;
      return n.inputs.size() == 1 ? OpPattern::kInjective : OpPattern::kBroadcast;
    }
  }
  return OpPattern::kElementwise;
}

// ---------------------------------------------------------------------------
// Printer

namespace {

std::string ints(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s.append(i ? "," : "").append(std::to_string(v[i]));
  return s;
}

struct AttrPrinter {
  std::string operator()(const NoAttrs&) const { return ""; }
  std::string operator()(const ConvAttrs& a) const {
    std::ostringstream s;
    s << "stride=" << a.stride_h << "x" << a.stride_w << " pad=" << a.pad_top << "," << a.pad_left << ","
      << a.pad_bottom << "," << a.pad_right << " dilation=" << a.dilation_h << "x" << a.dilation_w
      << " groups=" << a.groups << (a.nhwc ? " layout=nhwc" : "") << (a.winograd ? " winograd" : "")
      << (a.pairs ? " pairs" : "") << (a.pad_value != 0 ? " pad_value=" + std::to_string(a.pad_value) : "");
    return s.str();
  }
  std::string operator()(const GemmAttrs& a) const {
    std::ostringstream s;
    s << "alpha=" << a.alpha << " beta=" << a.beta << " trans_a=" << a.trans_a << " trans_b=" << a.trans_b;
    return s.str();
  }
  std::string operator()(const PoolAttrs& a) const {
    std::ostringstream s;
    s << "kernel=" << a.kernel_h << "x" << a.kernel_w << " stride=" << a.stride_h << "x" << a.stride_w
      << " pad=" << a.pad_top << "," << a.pad_left << "," << a.pad_bottom << "," << a.pad_right
      << " dilation=" << a.dilation_h << "x" << a.dilation_w << " count_include_pad=" << a.count_include_pad
      << (a.nhwc ? " layout=nhwc" : "") << (a.indices ? a.column_major ? " indices=column_major" : " indices" : "");
    return s.str();
  }
  std::string operator()(const ScalarAttrs& a) const {
    std::ostringstream s;
    s << "value=" << a.value;
    return s.str();
  }
  std::string operator()(const AffineAttrs& a) const {
    std::ostringstream s;
    s << "alpha=" << a.alpha << " beta=" << a.beta;
    return s.str();
  }
  std::string operator()(const AxisAttrs& a) const { return "axis=" + std::to_string(a.axis); }
  std::string operator()(const PermAttrs& a) const { return "perm=" + ints(a.perm); }
  std::string operator()(const ReduceAttrs& a) const {
    return "axes=" + ints(a.axes) + " keepdims=" + (a.keepdims ? "1" : "0");
  }
  std::string operator()(const CastAttrs& a) const { return "to=" + a.to.to_string(); }
  std::string operator()(const NormAttrs& a) const {
    std::ostringstream s;
    s << "axis=" << a.axis << " epsilon=" << a.epsilon;
    if (a.count > 0) s << " count=" << a.count;
    return s.str();
  }
  std::string operator()(const PadAttrs& a) const {
    std::ostringstream s;
    s << "before=" << ints(a.before) << " after=" << ints(a.after);
    if (a.mode == PadAttrs::Mode::kConstant)
      s << " value=" << a.value;
    else
      s << " mode=" << (a.mode == PadAttrs::Mode::kEdge ? "edge" : "reflect");
    return s.str();
  }
  std::string operator()(const ResizeAttrs& a) const {
    std::ostringstream s;
    static const char* const kModes[] = {"nearest", "linear", "cubic"};
    s << "mode=" << kModes[static_cast<int>(a.mode)] << " coord=" << static_cast<int>(a.coord)
      << " round=" << static_cast<int>(a.round);
    if (a.mode == ResizeAttrs::Mode::kCubic) s << " a=" << a.cubic_a << " exclude_outside=" << a.exclude_outside;
    if (a.coord == ResizeAttrs::Coord::kTfCropAndResize) {
      s << " roi=";
      for (size_t i = 0; i < a.roi.size(); ++i) s << (i ? "," : "") << a.roi[i];
      s << " extrapolation=" << a.extrapolation_value;
    }
    s << " scales=";
    for (size_t i = 0; i < a.scales.size(); ++i) s << (i ? "," : "") << a.scales[i];
    return s.str();
  }
  std::string operator()(const SliceAttrs& a) const { return "starts=" + ints(a.starts) + " steps=" + ints(a.steps); }
  std::string operator()(const UnaryAttrs& a) const {
    std::ostringstream s;
    s << "fn=" << ops::unary_fn_name(a.fn);
    if (a.params.alpha != 0.0 || a.params.beta != 0.0) s << " alpha=" << a.params.alpha << " beta=" << a.params.beta;
    return s.str();
  }
  std::string operator()(const BinaryAttrs& a) const { return std::string("fn=") + ops::binary_fn_name(a.fn); }
  std::string operator()(const GridSampleAttrs& a) const {
    static const char* const kModes[] = {"bilinear", "nearest", "bicubic"};
    static const char* const kPaddings[] = {"zeros", "border", "reflection"};
    return std::string("mode=") + kModes[static_cast<int>(a.mode)] +
           " padding=" + kPaddings[static_cast<int>(a.padding)] + " align_corners=" + (a.align_corners ? "1" : "0");
  }
  std::string operator()(const ScatterAttrs& a) const {
    static const char* const kReductions[] = {"none", "add", "mul"};
    return "axis=" + std::to_string(a.axis) + " reduction=" + kReductions[static_cast<int>(a.reduction)];
  }
  std::string operator()(const EinsumAttrs& a) const {
    auto letters = [](const std::vector<int>& v) {
      std::string s;
      for (int l : v) s += static_cast<char>(l < 26 ? 'a' + l : 'A' + l - 26);
      return s;
    };
    std::string s = "equation=";
    for (size_t i = 0; i < a.inputs.size(); ++i) s += (i ? "," : "") + letters(a.inputs[i]);
    return s + "->" + letters(a.output);
  }
  std::string operator()(const MatMulAttrs& a) const {
    auto view = [](const char* name, const MatMulAttrs::View& v) -> std::string {
      if (v.map.empty()) return "";
      std::string s = std::string(name) + "=view[" + ints(v.shape) + "] from (";
      for (size_t j = 0; j < v.map.size(); ++j) s += (j ? ";" : "") + ints(v.map[j]);
      return s + ")";
    };
    std::string s = view("a", a.a);
    for (const std::string& more : {view("b", a.b), std::string(a.pairs ? "pairs" : "")})
      if (!more.empty()) s += (s.empty() ? "" : " ") + more;
    return s;
  }
  std::string operator()(const ArgAttrs& a) const {
    return "axis=" + std::to_string(a.axis) + " keepdims=" + (a.keepdims ? "1" : "0") +
           (a.select_last ? " select_last" : "") + (a.exclusive ? " exclusive" : "") + (a.reverse ? " reverse" : "");
  }
  std::string operator()(const ControlAttrs& a) const {
    std::string s = "bodies=" + std::to_string(a.bodies.size());
    for (const auto& body : a.bodies) s += " " + std::to_string(body ? body->nodes().size() : 0) + "nodes";
    if (a.num_carried || a.scan_slots)
      s += " carried=" + std::to_string(a.num_carried) + " slots=" + std::to_string(a.scan_slots);
    return s;
  }
  std::string operator()(const ExternalAttrs& a) const {
    std::string s = "backend=" + a.backend + " nodes=";
    if (!a.body) return s + "none";
    for (size_t i = 0; i < a.body->nodes().size(); ++i) s += (i ? "," : "") + a.body->nodes()[i].name;
    return s;
  }
};

std::string value_ref(const Graph& g, ValueId id) {
  const Value& v = g.value(id);
  return "%" + std::to_string(id) + ":" + v.dtype.to_string() + shape_string(v.shape);
}

}  // namespace

std::string graph_to_string(const Graph& g) {
  std::ostringstream s;
  for (ValueId v : g.inputs()) s << "input " << value_ref(g, v) << " \"" << g.value(v).name << "\"\n";
  for (const auto& [id, c] : g.constants()) s << "const " << value_ref(g, id) << " \"" << g.value(id).name << "\"\n";
  for (const Node& n : g.nodes()) {
    for (size_t i = 0; i < n.outputs.size(); ++i) s << (i ? ", " : "") << value_ref(g, n.outputs[i]);
    s << " = " << op_kind_name(n.kind) << " \"" << n.name << "\" (";
    for (size_t i = 0; i < n.inputs.size(); ++i) s << (i ? ", " : "") << "%" << n.inputs[i];
    s << ")";
    const std::string attrs = std::visit(AttrPrinter{}, n.attrs);
    if (!attrs.empty()) s << " {" << attrs << "}";
    s << "\n";
  }
  s << "output";
  for (ValueId v : g.outputs()) s << " %" << v;
  s << "\n";
  return s.str();
}

}  // namespace tessera::graph
