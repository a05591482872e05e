// Sequences and optionals whose structure is known at import: a sequence's
// length and an optional's presence follow from the model's nodes, its
// constants and the bindings of its inputs (as torch writes a scripted list:
// SequenceEmpty, then SequenceInsert in a Loop that unrolls, then
// ConcatFromSequence). They are Composites of the importer, never graph
// values: each element is a tensor of the graph, and what reads a sequence
// at a position (SequenceAt, SequenceInsert, SequenceErase) needs the
// position as a constant. Where a structure would depend on the data (a
// position computed at run time, branches of an If on data that differ, a
// sequence carried by a Loop the device runs) the converter says so.
#include <algorithm>

#include "compiler/frontend/onnx_context.h"
#include "compiler/frontend/onnx_emitter.h"

namespace tessera::frontend::detail {

using graph::ValueId;
using Node = onnx::NodeProto;

namespace {

// Input i as a sequence; kInvalidArgument naming what it is otherwise.
Result<const Composite*> sequence_input(const ImportContext& ctx, const Node& node, int i) {
  TESSERA_ASSIGN_OR_RETURN(ValueId v, ctx.any_input(node, i));
  if (!ImportContext::is_composite(v) || ctx.composite(v).kind != Composite::Kind::kSequence)
    return invalid("input '" + node.input(i) + "' is " + ctx.describe(v) + ", not a sequence");
  return &ctx.composite(v);
}

// The constant position of input i (absent: `fallback`), checked against
// [-n, n) or, `inclusive`, [-n, n], and made non-negative.
Result<int64_t> position_input(const ImportContext& ctx, const Node& node, int i, int64_t n, int64_t fallback,
                               bool inclusive) {
  if (!ImportContext::has_input(node, i)) return fallback;
  const graph::Constant* c = ctx.constant_input(node, i);
  if (!c) {
    TESSERA_RETURN_IF_ERROR(ctx.any_input(node, i).status());
    return invalid("the position '" + node.input(i) +
                   "' is known only at run time: a sequence's elements are chosen at compile time (bind what it "
                   "depends on with --input-value or --input-shape)");
  }
  if (c->num_elements() != 1) return invalid("the position has " + std::to_string(c->num_elements()) + " elements");
  const auto p = static_cast<int64_t>(c->at(0));
  const int64_t hi = inclusive ? n : n - 1;
  if (p < -n || p > hi)
    return invalid("position " + std::to_string(p) + " is outside [" + std::to_string(-n) + ", " + std::to_string(hi) +
                   "] for a sequence of " + std::to_string(n));
  return p < 0 ? p + n : p;
}

Status bind_sequence(ImportContext& ctx, const Node& node, std::vector<ValueId> elements, DType dtype) {
  ctx.values[node.output(0)] = ctx.add_composite({Composite::Kind::kSequence, std::move(elements), dtype});
  return Status::ok();
}

// A tensor's type against a sequence's element type.
Status check_element_type(const ImportContext& ctx, ValueId t, DType want) {
  const DType got = ctx.value(t).dtype;
  if (got != want) return invalid("a " + got.to_string() + " tensor cannot join a sequence of " + want.to_string());
  return Status::ok();
}

Status convert_sequence_empty(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(
      DType dtype, computed_type_of_onnx(static_cast<int32_t>(attr_int(node, "dtype", onnx::TensorProto::FLOAT))));
  return bind_sequence(ctx, node, {}, dtype);
}

Status convert_sequence_construct(ImportContext& ctx, const Node& node) {
  if (node.input_size() == 0) return invalid("SequenceConstruct takes at least one tensor");
  std::vector<ValueId> elements;
  for (int i = 0; i < node.input_size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(ValueId t, ctx.input(node, i));
    if (!elements.empty()) TESSERA_RETURN_IF_ERROR(check_element_type(ctx, t, ctx.value(elements[0]).dtype));
    elements.push_back(t);
  }
  const DType dtype = ctx.value(elements[0]).dtype;
  return bind_sequence(ctx, node, std::move(elements), dtype);
}

Status convert_sequence_insert(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(const Composite* seq, sequence_input(ctx, node, 0));
  Composite out = *seq;  // a copy: binding the result may grow ctx.composites
  TESSERA_ASSIGN_OR_RETURN(ValueId t, ctx.input(node, 1));
  TESSERA_RETURN_IF_ERROR(check_element_type(ctx, t, out.dtype));
  const auto n = static_cast<int64_t>(out.elements.size());
  TESSERA_ASSIGN_OR_RETURN(int64_t at, position_input(ctx, node, 2, n, n, /*inclusive=*/true));
  out.elements.insert(out.elements.begin() + at, t);
  return bind_sequence(ctx, node, std::move(out.elements), out.dtype);
}

Status convert_sequence_erase(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(const Composite* seq, sequence_input(ctx, node, 0));
  Composite out = *seq;
  const auto n = static_cast<int64_t>(out.elements.size());
  if (n == 0) return invalid("it erases from an empty sequence");
  TESSERA_ASSIGN_OR_RETURN(int64_t at, position_input(ctx, node, 1, n, n - 1, /*inclusive=*/false));
  out.elements.erase(out.elements.begin() + at);
  return bind_sequence(ctx, node, std::move(out.elements), out.dtype);
}

Status convert_sequence_at(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(const Composite* seq, sequence_input(ctx, node, 0));
  const auto n = static_cast<int64_t>(seq->elements.size());
  if (!ImportContext::has_input(node, 1)) return invalid("SequenceAt needs a position");
  TESSERA_ASSIGN_OR_RETURN(int64_t at, position_input(ctx, node, 1, n, 0, /*inclusive=*/false));
  ctx.alias(node, seq->elements[static_cast<size_t>(at)]);
  return Status::ok();
}

Status convert_sequence_length(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(const Composite* seq, sequence_input(ctx, node, 0));
  const auto n = static_cast<double>(seq->elements.size());
  ctx.alias(node, scalar_constant(ctx, base_name(node), DType::i64(), n));
  return Status::ok();
}

// ConcatFromSequence: the elements joined along `axis`, or stacked along a
// new one (new_axis 1, torch.stack).
Status convert_concat_from_sequence(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(const Composite* seq, sequence_input(ctx, node, 0));
  const std::vector<ValueId> elements = seq->elements;
  if (elements.empty()) return invalid("it concatenates an empty sequence: the result would have no shape");
  if (!find_attr(node, "axis")) return invalid("it has no axis");
  const bool new_axis = attr_int(node, "new_axis", 0) != 0;
  const size_t rank = ctx.value(elements[0]).shape.size() + (new_axis ? 1 : 0);
  TESSERA_ASSIGN_OR_RETURN(int64_t axis, norm_axis(attr_int(node, "axis", 0), rank, "axis"));
  Emitter e(ctx, base_name(node));
  std::vector<ValueId> parts;
  for (ValueId v : elements) {
    if (!new_axis) {
      parts.push_back(v);
      continue;
    }
    TESSERA_ASSIGN_OR_RETURN(ValueId u, e.op("Unsqueeze", {v, e.ints({axis})}));
    parts.push_back(u);
  }
  TESSERA_ASSIGN_OR_RETURN(ValueId joined, e.concat(std::move(parts), axis));
  ctx.alias(node, joined);
  return Status::ok();
}

// The lengths SplitToSequence cuts a dimension of `extent` into: `split`
// as lengths, a scalar split as a chunk length (the last may be shorter),
// no split as chunks of one.
Result<std::vector<int64_t>> split_lengths(const ImportContext& ctx, const Node& node, int64_t extent) {
  if (!ImportContext::has_input(node, 1)) return std::vector<int64_t>(static_cast<size_t>(extent), 1);
  const graph::Constant* c = ctx.constant_input(node, 1);
  if (!c) return invalid("its split is known only at run time: the sequence's length would be too");
  std::vector<int64_t> lengths = c->to_int64s();
  if (c->shape.empty()) {
    const int64_t chunk = lengths.at(0);
    if (chunk <= 0) return invalid("split " + std::to_string(chunk) + " is not a positive length");
    lengths.clear();
    for (int64_t at = 0; at < extent; at += chunk) lengths.push_back(std::min(chunk, extent - at));
    return lengths;
  }
  int64_t sum = 0;
  for (int64_t l : lengths) {
    if (l < 0) return invalid("split has a negative length " + std::to_string(l));
    sum += l;
  }
  if (sum != extent)
    return invalid("split sums to " + std::to_string(sum) + ", the axis has " + std::to_string(extent));
  return lengths;
}

Status convert_split_to_sequence(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId x, ctx.input(node, 0));
  const std::vector<int64_t> shape = ctx.value(x).shape;
  const DType dtype = ctx.value(x).dtype;
  TESSERA_ASSIGN_OR_RETURN(int64_t axis, norm_axis(attr_int(node, "axis", 0), shape.size(), "axis"));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> lengths, split_lengths(ctx, node, shape[static_cast<size_t>(axis)]));
  // keepdims applies only where no split is given (chunks of one).
  const bool squeeze = !ImportContext::has_input(node, 1) && attr_int(node, "keepdims", 1) == 0;
  Emitter e(ctx, base_name(node));
  std::vector<ValueId> elements;
  int64_t at = 0;
  for (int64_t length : lengths) {
    TESSERA_ASSIGN_OR_RETURN(ValueId part, e.op("Slice", {x, e.ints({at}), e.ints({at + length}), e.ints({axis})}));
    if (squeeze) {
      TESSERA_ASSIGN_OR_RETURN(part, e.op("Squeeze", {part, e.ints({axis})}));
    }
    elements.push_back(part);
    at += length;
  }
  return bind_sequence(ctx, node, std::move(elements), dtype);
}

// The element type an Optional's `type` attribute declares (a tensor, or a
// sequence of tensors).
Result<DType> declared_element_type(const Node& node) {
  const onnx::AttributeProto* a = find_attr(node, "type");
  if (!a || !a->has_tp()) return invalid("an empty Optional needs its type attribute");
  const onnx::TypeProto& t = a->tp();
  if (t.has_tensor_type()) return computed_type_of_onnx(t.tensor_type().elem_type());
  if (t.has_sequence_type() && t.sequence_type().elem_type().has_tensor_type())
    return computed_type_of_onnx(t.sequence_type().elem_type().tensor_type().elem_type());
  return invalid("its type is neither a tensor nor a sequence of tensors");
}

Status convert_optional(ImportContext& ctx, const Node& node) {
  Composite c{Composite::Kind::kOptional, {}, DType::f32()};
  if (ImportContext::has_input(node, 0)) {
    TESSERA_ASSIGN_OR_RETURN(ValueId v, ctx.any_input(node, 0));
    c.elements.push_back(v);
    c.dtype = ImportContext::is_composite(v) ? ctx.composite(v).dtype : ctx.value(v).dtype;
  } else {
    TESSERA_ASSIGN_OR_RETURN(c.dtype, declared_element_type(node));
  }
  ctx.values[node.output(0)] = ctx.add_composite(std::move(c));
  return Status::ok();
}

bool is_optional(const ImportContext& ctx, ValueId v) {
  return ImportContext::is_composite(v) && ctx.composite(v).kind == Composite::Kind::kOptional;
}

// OptionalHasElement: false for an empty optional or a missing input (opset
// 18), true for anything else.
Status convert_optional_has_element(ImportContext& ctx, const Node& node) {
  bool has = false;
  if (ImportContext::has_input(node, 0)) {
    TESSERA_ASSIGN_OR_RETURN(ValueId v, ctx.any_input(node, 0));
    has = !is_optional(ctx, v) || !ctx.composite(v).elements.empty();
  }
  ctx.alias(node, scalar_constant(ctx, base_name(node), DType::boolean(), has ? 1.0 : 0.0));
  return Status::ok();
}

// OptionalGetElement: an optional's content; a tensor or sequence as it is
// (opset 18).
Status convert_optional_get_element(ImportContext& ctx, const Node& node) {
  TESSERA_ASSIGN_OR_RETURN(ValueId v, ctx.any_input(node, 0));
  if (is_optional(ctx, v)) {
    if (ctx.composite(v).elements.empty()) return invalid("the optional '" + node.input(0) + "' is empty");
    v = ctx.composite(v).elements[0];
  }
  ctx.alias(node, v);
  return Status::ok();
}

// SequenceMap(sequence, extra...): its body applied to each element, with
// each extra input's element where it is a sequence (as long as the first)
// and the whole tensor where it is not; one sequence per body output.
Status convert_sequence_map(ImportContext& ctx, const Node& node) {
  const onnx::AttributeProto* attr = find_attr(node, "body");
  if (!attr || attr->type() != onnx::AttributeProto::GRAPH) return invalid("it has no body graph");
  const onnx::GraphProto& body = attr->g();
  if (body.input_size() != node.input_size())
    return invalid("the body takes " + std::to_string(body.input_size()) + " inputs, the node gives " +
                   std::to_string(node.input_size()));
  if (body.output_size() != node.output_size())
    return invalid("the body gives " + std::to_string(body.output_size()) + " outputs, the node has " +
                   std::to_string(node.output_size()));
  TESSERA_ASSIGN_OR_RETURN(const Composite* first, sequence_input(ctx, node, 0));
  const size_t n = first->elements.size();
  std::vector<ValueId> inputs;  // tensors, or sequences to take element k of
  for (int i = 0; i < node.input_size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(ValueId v, ctx.any_input(node, i));
    if (ImportContext::is_composite(v)) {
      const Composite& c = ctx.composite(v);
      if (c.kind != Composite::Kind::kSequence) return invalid("input '" + node.input(i) + "' is " + ctx.describe(v));
      if (c.elements.size() != n)
        return invalid("input '" + node.input(i) + "' has " + std::to_string(c.elements.size()) +
                       " elements, the first sequence " + std::to_string(n));
    }
    inputs.push_back(v);
  }
  std::vector<std::vector<ValueId>> results(static_cast<size_t>(body.output_size()));
  for (size_t k = 0; k < n; ++k) {
    std::vector<ValueId> bound;
    for (ValueId v : inputs) bound.push_back(ImportContext::is_composite(v) ? ctx.composite(v).elements[k] : v);
    TESSERA_ASSIGN_OR_RETURN(std::vector<ValueId> out,
                             unroll_body(ctx, body, bound, base_name(node), static_cast<int64_t>(k)));
    for (size_t j = 0; j < out.size(); ++j) {
      if (ImportContext::is_composite(out[j]))
        return invalid("its body gives " + ctx.describe(out[j]) + ": a SequenceMap's body gives tensors");
      results[j].push_back(out[j]);
    }
  }
  for (int j = 0; j < node.output_size(); ++j) {
    if (node.output(j).empty()) continue;
    const std::vector<ValueId>& elements = results[static_cast<size_t>(j)];
    DType dtype = DType::f32();
    if (!elements.empty()) {
      dtype = ctx.value(elements[0]).dtype;
    } else if (const auto* t = body.output(j).type().sequence_type().elem_type().has_tensor_type()
                                   ? &body.output(j).type().sequence_type().elem_type().tensor_type()
                               : body.output(j).type().has_tensor_type() ? &body.output(j).type().tensor_type()
                                                                         : nullptr) {
      TESSERA_ASSIGN_OR_RETURN(dtype, computed_type_of_onnx(t->elem_type()));
    }
    ctx.values[node.output(j)] = ctx.add_composite({Composite::Kind::kSequence, elements, dtype});
  }
  return Status::ok();
}

}  // namespace

std::vector<ValueId> flatten_value(const ImportContext& ctx, ValueId id) {
  if (!ImportContext::is_composite(id)) return {id};
  std::vector<ValueId> out;
  for (ValueId e : ctx.composite(id).elements) {
    const std::vector<ValueId> inner = flatten_value(ctx, e);
    out.insert(out.end(), inner.begin(), inner.end());
  }
  return out;
}

bool same_structure(const ImportContext& ca, ValueId a, const ImportContext& cb, ValueId b) {
  if (ImportContext::is_composite(a) != ImportContext::is_composite(b)) return false;
  if (!ImportContext::is_composite(a)) return true;
  const Composite &x = ca.composite(a), &y = cb.composite(b);
  if (x.kind != y.kind || x.elements.size() != y.elements.size()) return false;
  for (size_t i = 0; i < x.elements.size(); ++i)
    if (!same_structure(ca, x.elements[i], cb, y.elements[i])) return false;
  return true;
}

ValueId rebuild_value(ImportContext& ctx, const ImportContext& like_ctx, ValueId like,
                      const std::vector<ValueId>& tensors, size_t* next) {
  if (!ImportContext::is_composite(like)) return tensors.at((*next)++);
  Composite c = like_ctx.composite(like);
  for (ValueId& e : c.elements) e = rebuild_value(ctx, like_ctx, e, tensors, next);
  return ctx.add_composite(std::move(c));
}

void add_sequence_converters(std::map<std::string, Converter>& table) {
  table["SequenceEmpty"] = convert_sequence_empty;
  table["SequenceConstruct"] = convert_sequence_construct;
  table["SequenceInsert"] = convert_sequence_insert;
  table["SequenceErase"] = convert_sequence_erase;
  table["SequenceAt"] = convert_sequence_at;
  table["SequenceLength"] = convert_sequence_length;
  table["ConcatFromSequence"] = convert_concat_from_sequence;
  table["SplitToSequence"] = convert_split_to_sequence;
  table["SequenceMap"] = convert_sequence_map;
  table["Optional"] = convert_optional;
  table["OptionalHasElement"] = convert_optional_has_element;
  table["OptionalGetElement"] = convert_optional_get_element;
}

}  // namespace tessera::frontend::detail
