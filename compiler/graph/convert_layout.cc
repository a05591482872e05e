// convert_layout_nhwc: convolutions (plain, grouped, depthwise) in NHWC with
// HWIO weights, where the templates vectorize along the output channels
// (NCHW vectorizes along the output columns, which are 7 or 14 wide in a
// ResNet's late layers, and strided in a stride-2 depthwise conv).
//
// Every value keeps its NCHW id; a value computed in NHWC gets a second id,
// and the NCHW one is produced (by a transpose) only when a node that stays
// in NCHW, or a graph output, reads it. Elementwise operators follow their
// inputs into NHWC, and so do max pooling, global average pooling (as a
// mean over rows and columns), resizing and concatenation: a residual network
// transposes its input and, before the head, its last feature map; a feature
// pyramid's upsampling and joins stay in NHWC.
//
// A 1-D conv runs as a 2-D one of height 1 between reshapes, so its rank-3
// [N, C, W] values have a channels-last twin too: the conv's own
// [N, 1, W, C]. The reshapes that drop or restore the height are then no
// nodes at all (both sides have that twin), and elementwise operators, a
// channel slice (GLU's Split), an instance norm over W (GroupNorm as torch
// exports it) and a transpose to [N, W, C] follow. An audio encoder's
// GroupNorm and GELU, or a conformer's GLU and SiLU, run between its convs
// without a transpose, the activations in the convs' epilogues.
#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "compiler/graph/pack_words.h"
#include "compiler/graph/passes.h"

namespace tessera::graph {

namespace {

const std::vector<int64_t> kToNhwc = {0, 2, 3, 1};  // out dim d is in dim perm[d]
const std::vector<int64_t> kToNchw = {0, 3, 1, 2};

template <typename T>
std::vector<T> permuted(const std::vector<T>& per_dim, const std::vector<int64_t>& perm) {
  std::vector<T> out;
  for (int64_t d : perm) out.push_back(per_dim[static_cast<size_t>(d)]);
  return out;
}

// A rank-3 value [N, C, W] as the rank-4 one of height 1 it stands for,
// [N, C, 1, W]; a rank-4 one as it is. Per dimension: shapes, or a slice's
// starts (`fill` 0) and steps (`fill` 1).
std::vector<int64_t> lifted(std::vector<int64_t> per_dim, int64_t fill = 1) {
  if (per_dim.size() == 3) per_dim.insert(per_dim.begin() + 2, fill);
  return per_dim;
}

// The channels-last twin's shape of a value of rank 4 or 3: [N, H, W, C],
// or [N, 1, W, C] for [N, C, W].
std::vector<int64_t> twin_shape(const std::vector<int64_t>& shape) {
  return permuted(lifted(shape), kToNhwc);
}

// Where NCHW dimension `axis` stands in NHWC.
int64_t nhwc_axis(int64_t axis) {
  return std::find(kToNhwc.begin(), kToNhwc.end(), axis) - kToNhwc.begin();
}

// out[i] = in[i permuted]: a rank-4 constant transposed by `perm`.
Constant permute_constant(const Constant& c, const std::vector<int64_t>& perm) {
  Constant out;
  out.dtype = c.dtype;
  out.shape = permuted(c.shape, perm);
  const size_t bytes = static_cast<size_t>(c.dtype.storage_bytes());
  out.bytes.resize(c.bytes.size());
  std::vector<int64_t> in_strides(4, 1);
  for (int d = 2; d >= 0; --d) in_strides[d] = in_strides[d + 1] * c.shape[d + 1];
  int64_t o = 0;
  for (int64_t a = 0; a < out.shape[0]; ++a)
    for (int64_t b = 0; b < out.shape[1]; ++b)
      for (int64_t e = 0; e < out.shape[2]; ++e)
        for (int64_t f = 0; f < out.shape[3]; ++f, ++o) {
          const int64_t idx[4] = {a, b, e, f};
          int64_t i = 0;
          for (int d = 0; d < 4; ++d) i += idx[d] * in_strides[static_cast<size_t>(perm[d])];
          std::memcpy(&out.bytes[static_cast<size_t>(o) * bytes], &c.bytes[static_cast<size_t>(i) * bytes], bytes);
        }
  return out;
}

// An elementwise operator (its fusion rule says so: one element in, one
// out, operands broadcast by their shapes) computes the same in any layout,
// so it follows its input's.
bool follows_layout(OpKind k) {
  const FusionRule rule = op_traits(k).fusion;
  return rule == FusionRule::kElementwise || rule == FusionRule::kByShapes;
}

// A 2-D conv with constant weights: plain, grouped or depthwise (NHWC
// vectorizes all three along the channels), or an integer one (NHWC is its
// dot-product form).
bool convertible_conv(const Graph& g, const Node& n) {
  if (n.kind != OpKind::kConv && n.kind != OpKind::kConvU8S8) return false;
  const auto& a = std::get<ConvAttrs>(n.attrs);
  return !a.nhwc && g.value(n.inputs[0]).shape.size() == 4 && g.is_constant(n.inputs[1]);
}

class LayoutRewriter {
 public:
  explicit LayoutRewriter(const Graph& g) : g_(g), out_(g) { out_.mutable_nodes().clear(); }

  Result<Graph> run() {
    for (const Node& n : g_.nodes()) {
      if (convertible_conv(g_, n)) {
        TESSERA_RETURN_IF_ERROR(convert_conv(n));
      } else if (!try_follow(n) && !try_max_pool(n) && !try_global_avg_pool(n) && !try_resize(n) && !try_concat(n) &&
                 !try_reduce_all(n) && !try_reshape(n) && !try_slice(n) && !try_instance_norm(n) && !try_transpose(n))
        keep(n);
    }
    for (ValueId v : g_.outputs()) need_nchw(v);
    TESSERA_RETURN_IF_ERROR(out_.validate());
    return eliminate_dead_nodes(out_);
  }

 private:
  // The NHWC id of `v`, transposing it (once) when it exists only in NCHW.
  ValueId need_nhwc(ValueId v) {
    auto it = nhwc_.find(v);
    if (it != nhwc_.end()) return it->second;
    const Value& val = g_.value(v);
    ValueId nchw = v;
    if (val.shape.size() == 3)
      nchw = out_.add_op(val.name + ".nchw4", OpKind::kReshape, NoAttrs{}, {v}, lifted(val.shape), val.dtype);
    ValueId t = out_.add_op(val.name + ".nhwc", OpKind::kTranspose, PermAttrs{kToNhwc}, {nchw}, twin_shape(val.shape),
                            val.dtype);
    nhwc_[v] = t;
    return t;
  }

  // Makes `v`'s NCHW id computed (by a transpose of its NHWC one) when a
  // converted node produced it; a rank-3 one is that transpose's [N, C, 1, W]
  // reshaped.
  void need_nchw(ValueId v) {
    if (!pending_nchw_.count(v)) return;
    pending_nchw_.erase(v);
    const Value& val = g_.value(v);
    if (val.shape.size() == 4) {
      out_.add_node(Node{val.name + ".nchw", OpKind::kTranspose, PermAttrs{kToNchw}, {nhwc_.at(v)}, {v}});
      return;
    }
    const ValueId t = out_.add_op(val.name + ".nchw4", OpKind::kTranspose, PermAttrs{kToNchw}, {nhwc_.at(v)},
                                  lifted(val.shape), val.dtype);
    out_.add_node(Node{val.name + ".nchw", OpKind::kReshape, NoAttrs{}, {t}, {v}});
  }

  // The conv in NHWC: input transposed (or already NHWC), weight OIHW -> HWIO
  // (an integer conv's packed four input channels to a word, but for a
  // depthwise conv's, one channel a group).
  Status convert_conv(const Node& n) {
    auto a = std::get<ConvAttrs>(n.attrs);
    a.nhwc = true;
    const ValueId w = n.inputs[1];
    Constant weights = permute_constant(g_.constant(w), {2, 3, 1, 0});
    if (n.kind == OpKind::kConvU8S8 && weights.shape[2] % 4 == 0) {
      TESSERA_ASSIGN_OR_RETURN(weights, pack_int8_words(weights, 2));
    }
    const ValueId hwio = out_.add_constant(g_.value(w).name + ".hwio", std::move(weights));
    std::vector<ValueId> inputs = {need_nhwc(n.inputs[0]), hwio};
    for (size_t i = 2; i < n.inputs.size(); ++i) {
      need_nchw(n.inputs[i]);
      inputs.push_back(n.inputs[i]);
    }
    produce_nhwc(n, a, inputs);
    return Status::ok();
  }

  // A lower-rank value broadcast against `rank` (4, or 3: its twin is of
  // rank 4), channels last: its shape with leading 1s, lifted and permuted.
  // Empty where that permutation moves more than one dimension that is not 1
  // (it would not be a reshape).
  static std::vector<int64_t> broadcast_nhwc_shape(std::vector<int64_t> shape, size_t rank) {
    shape.insert(shape.begin(), rank - shape.size(), 1);
    const std::vector<int64_t> nhwc = twin_shape(shape);
    return std::count_if(shape.begin(), shape.end(), [](int64_t d) { return d != 1; }) <= 1 ? nhwc
                                                                                            : std::vector<int64_t>{};
  }

  // An elementwise node with an NHWC input runs in NHWC: rank-4 inputs are
  // taken (or made) NHWC, constants of lower rank are broadcast to rank 4 and
  // permuted, a computed value of lower rank with one dimension that is not
  // 1 (a dynamic zero point's correction, per channel) is reshaped, scalars
  // pass. Anything else keeps the node in NCHW.
  bool try_follow(const Node& n) {
    if (!follows_layout(n.kind) || n.outputs.size() != 1) return false;
    const size_t rank = g_.value(n.outputs[0]).shape.size();
    if (rank != 4 && rank != 3) return false;
    bool any_nhwc = false;
    for (ValueId v : n.inputs) {
      const auto& shape = g_.value(v).shape;
      if (shape.size() > rank) return false;
      if (shape.size() != rank && !shape.empty() && !g_.is_constant(v) && broadcast_nhwc_shape(shape, rank).empty())
        return false;
      any_nhwc = any_nhwc || nhwc_.count(v);
    }
    if (!any_nhwc) return false;
    std::vector<ValueId> inputs;
    for (ValueId v : n.inputs) {
      const Value& val = g_.value(v);
      if (val.shape.empty() || (val.shape.size() != rank && shape_size(val.shape) == 1)) {
        inputs.push_back(v);  // a scalar broadcasts the same in any layout
      } else if (g_.is_constant(v) && !nhwc_.count(v)) {
        Constant c = g_.constant(v);
        c.shape.insert(c.shape.begin(), rank - c.shape.size(), 1);
        c.shape = lifted(c.shape);
        inputs.push_back(out_.add_constant(val.name + ".nhwc", permute_constant(c, kToNhwc)));
      } else if (val.shape.size() != rank) {
        if (!broadcast_.count(v)) {
          need_nchw(v);
          broadcast_[v] = out_.add_op(val.name + ".nhwc", OpKind::kReshape, NoAttrs{}, {v},
                                      broadcast_nhwc_shape(val.shape, rank), val.dtype);
        }
        inputs.push_back(broadcast_.at(v));
      } else {
        inputs.push_back(need_nhwc(v));
      }
    }
    produce_nhwc(n, n.attrs, inputs);
    return true;
  }

  // Max pooling of an NHWC value pools in NHWC (no transpose around the
  // pool after a ResNet's first conv).
  bool try_max_pool(const Node& n) {
    if (n.kind != OpKind::kMaxPool || !nhwc_.count(n.inputs[0]) || g_.value(n.inputs[0]).shape.size() != 4 ||
        std::get<PoolAttrs>(n.attrs).indices)
      return false;
    auto a = std::get<PoolAttrs>(n.attrs);
    a.nhwc = true;
    produce_nhwc(n, a, {nhwc_.at(n.inputs[0])});
    return true;
  }

  // Global average pooling of an NHWC value is a mean over its rows and
  // columns (a squeeze-excite block's pool reads the feature map in place).
  bool try_global_avg_pool(const Node& n) {
    if (n.kind != OpKind::kGlobalAvgPool || !nhwc_.count(n.inputs[0]) || g_.value(n.inputs[0]).shape.size() != 4)
      return false;
    Node mean = n;
    mean.kind = OpKind::kReduceMean;
    produce_nhwc(mean, ReduceAttrs{{1, 2}, true}, {nhwc_.at(n.inputs[0])});
    return true;
  }

  // A reduction of every element (a dynamic quantization's bounds, or its
  // minimum and maximum) reads an NHWC value as it is: the order of the
  // elements does not change the result.
  bool try_reduce_all(const Node& n) {
    const bool bounds = n.kind == OpKind::kReduceBounds;
    const bool to_scalar =
        (n.kind == OpKind::kReduceMin || n.kind == OpKind::kReduceMax) && g_.value(n.outputs[0]).shape.empty();
    if ((!bounds && !to_scalar) || n.inputs.size() != 1 || !nhwc_.count(n.inputs[0])) return false;
    out_.add_node(Node{n.name, n.kind, n.attrs, {nhwc_.at(n.inputs[0])}, n.outputs});
    return true;
  }

  // Resize of an NHWC value resizes in NHWC, its scales (and a crop's box)
  // permuted with the dimensions: a feature pyramid's upsampling stays
  // between its convs.
  bool try_resize(const Node& n) {
    if (n.kind != OpKind::kResize || !nhwc_.count(n.inputs[0]) || g_.value(n.inputs[0]).shape.size() != 4) return false;
    auto a = std::get<ResizeAttrs>(n.attrs);
    a.scales = permuted(a.scales, kToNhwc);
    if (!a.roi.empty()) {
      const std::vector<double> starts(a.roi.begin(), a.roi.begin() + 4), ends(a.roi.begin() + 4, a.roi.end());
      a.roi = permuted(starts, kToNhwc);
      for (double e : permuted(ends, kToNhwc)) a.roi.push_back(e);
    }
    produce_nhwc(n, a, {nhwc_.at(n.inputs[0])});
    return true;
  }

  // A concatenation of rank-4 values, one of them NHWC, concatenates in NHWC
  // along the permuted axis (a pyramid's maps joined along the channels).
  bool try_concat(const Node& n) {
    if (n.kind != OpKind::kConcat || g_.value(n.outputs[0]).shape.size() != 4) return false;
    if (std::none_of(n.inputs.begin(), n.inputs.end(), [&](ValueId v) { return nhwc_.count(v) > 0; })) return false;
    std::vector<ValueId> inputs;
    for (ValueId v : n.inputs) {
      if (g_.is_constant(v) && !nhwc_.count(v))
        inputs.push_back(out_.add_constant(g_.value(v).name + ".nhwc", permute_constant(g_.constant(v), kToNhwc)));
      else
        inputs.push_back(need_nhwc(v));
    }
    produce_nhwc(n, AxisAttrs{nhwc_axis(std::get<AxisAttrs>(n.attrs).axis)}, std::move(inputs));
    return true;
  }

  // A reshape of a value with a twin that keeps its batch and channels and
  // moves no other dimension across them: [N, C, 1, W] <-> [N, C, W] (a 1-D
  // conv's height dropped or restored), or the same shape (GroupNorm's
  // [N, G, -1] of one channel a group). Both sides have the same twin: no
  // node, no copy.
  bool try_reshape(const Node& n) {
    if (n.kind != OpKind::kReshape || n.inputs.size() != 1 || !nhwc_.count(n.inputs[0])) return false;
    const std::vector<int64_t>& in = g_.value(n.inputs[0]).shape;
    const std::vector<int64_t>& out = g_.value(n.outputs[0]).shape;
    if ((in.size() != 4 && in.size() != 3) || (out.size() != 4 && out.size() != 3) || lifted(in) != lifted(out))
      return false;
    nhwc_[n.outputs[0]] = nhwc_.at(n.inputs[0]);
    pending_nchw_.insert(n.outputs[0]);
    return true;
  }

  // A slice of a value with a twin slices the twin, its starts and steps
  // lifted and permuted: GLU's Split of a 1-D conv's channels.
  bool try_slice(const Node& n) {
    if (n.kind != OpKind::kSlice || n.inputs.size() != 1 || !nhwc_.count(n.inputs[0])) return false;
    const size_t rank = g_.value(n.inputs[0]).shape.size();
    if (rank != 4 && rank != 3) return false;
    auto a = std::get<SliceAttrs>(n.attrs);
    a.starts = permuted(lifted(a.starts, 0), kToNhwc);
    a.steps = permuted(lifted(a.steps, 1), kToNhwc);
    produce_nhwc(n, a, {nhwc_.at(n.inputs[0])});
    return true;
  }

  // A transpose to channels last of a value with a twin ([N, C, T] ->
  // [N, T, C], an encoder's features; or NCHW -> NHWC) is its twin
  // reshaped: a copy, which the elementwise work before it takes in,
  // instead of a transpose back to channels first and this one.
  bool try_transpose(const Node& n) {
    if (n.kind != OpKind::kTranspose || !nhwc_.count(n.inputs[0])) return false;
    const size_t rank = g_.value(n.inputs[0]).shape.size();
    const std::vector<int64_t>& perm = std::get<PermAttrs>(n.attrs).perm;
    if (!(rank == 4 && perm == kToNhwc) && !(rank == 3 && perm == std::vector<int64_t>{0, 2, 1})) return false;
    out_.add_node(Node{n.name, OpKind::kReshape, NoAttrs{}, {nhwc_.at(n.inputs[0])}, n.outputs});
    return true;
  }

  // A layer norm over a value's spatial axes (an instance norm: [N, C, W]
  // over W, or [N, C, H, W] over H and W) normalizes its twin [N, H, W, C]
  // over H and W: from axis 1, two axes; gamma and beta of shape [W]
  // become [1, W].
  bool try_instance_norm(const Node& n) {
    if (n.kind != OpKind::kLayerNorm || !nhwc_.count(n.inputs[0])) return false;
    const auto& a = std::get<NormAttrs>(n.attrs);
    const size_t rank = g_.value(n.inputs[0]).shape.size();
    if (a.axis != 2 || a.count != 0 || (rank != 3 && rank != 4)) return false;
    std::vector<ValueId> inputs = {nhwc_.at(n.inputs[0])};
    for (size_t i = 1; i <= 2; ++i) {
      const ValueId v = n.inputs[i];
      const Value& val = g_.value(v);
      need_nchw(v);
      if (rank == 4) {
        inputs.push_back(v);
      } else if (g_.is_constant(v)) {
        Constant c = g_.constant(v);
        c.shape.insert(c.shape.begin(), 1);
        inputs.push_back(out_.add_constant(val.name + ".nhwc", std::move(c)));
      } else {
        std::vector<int64_t> shape = val.shape;
        shape.insert(shape.begin(), 1);
        inputs.push_back(out_.add_op(val.name + ".nhwc", OpKind::kReshape, NoAttrs{}, {v}, shape, val.dtype));
      }
    }
    produce_nhwc(n, NormAttrs{1, a.epsilon, 2}, std::move(inputs));
    return true;
  }

  void produce_nhwc(const Node& n, Attrs attrs, std::vector<ValueId> inputs) {
    const ValueId v = n.outputs[0];
    const Value& val = g_.value(v);
    const ValueId y =
        out_.add_op(n.name, n.kind, std::move(attrs), std::move(inputs), twin_shape(val.shape), val.dtype);
    nhwc_[v] = y;
    pending_nchw_.insert(v);
  }

  void keep(const Node& n) {
    for (ValueId v : n.inputs) need_nchw(v);
    out_.add_node(n);
  }

  const Graph& g_;
  Graph out_;
  std::map<ValueId, ValueId> nhwc_;       // NCHW id -> NHWC id
  std::set<ValueId> pending_nchw_;        // NCHW ids not computed yet (their NHWC twin is)
  std::map<ValueId, ValueId> broadcast_;  // a computed lower-rank id -> its rank-4 NHWC reshape
};

}  // namespace

Result<Graph> convert_layout_nhwc(const Graph& g) {
  // Where it pays: graphs whose convolutions (plain, grouped, depthwise) all
  // have constant weights; one that does not would need a transpose on each
  // side.
  int convs = 0;
  for (const Node& n : g.nodes()) {
    if (n.kind != OpKind::kConv && n.kind != OpKind::kConvU8S8) continue;
    if (!convertible_conv(g, n)) return g;
    ++convs;
  }
  if (convs == 0) return g;
  return LayoutRewriter(g).run();
}

}  // namespace tessera::graph
