// libtessera_dnnl.so: the runtime module of the dnnl backend. It builds a
// region's oneDNN primitives once, when the package loads, from the JSON
// payload compiler/external/dnnl.cc wrote, and runs them on each call.
//
// Every value of the region is a dnnl::memory whose descriptor has the
// value's dimensions as Tessera's graph states them (an NHWC conv's output is
// [N, H, W, C]); a conv or pooling views it with its own (N, C, H, W) axes by
// permute_axes. Convolutions and dense layers let oneDNN choose their layouts
// (format_tag::any); the other primitives take what they are given, so the
// region's values stay in oneDNN's blocked layouts and reorders happen at the
// region's inputs and outputs (and where two primitives disagree). Weights
// are reordered once, at load.
#include <cstring>
#include <dnnl.hpp>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "runtime/dnnl/payload_check.h"
#include "runtime/external_abi.h"

namespace {

using dnnl::memory;
using nlohmann::json;
using Dims = memory::dims;
constexpr auto kF32 = memory::data_type::f32;

// Logical (N, H, W, C) <-> the primitives' (N, C, H, W): permute_axes takes,
// per axis, its new position.
const std::vector<int> kNhwcToNchw = {0, 2, 3, 1};
const std::vector<int> kNchwToNhwc = {0, 3, 1, 2};

memory::desc plain_desc(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return memory::desc(dims, kF32, strides);
}

// A descriptor in the primitive's (N, C, H, W) axes from one in logical axes, and back.
memory::desc to_nchw(const memory::desc& d, bool nhwc) {
  return nhwc ? d.permute_axes(kNhwcToNchw) : d;
}
memory::desc from_nchw(const memory::desc& d, bool nhwc) {
  return nhwc ? d.permute_axes(kNchwToNhwc) : d;
}

Dims nchw_dims(const Dims& logical, bool nhwc) {
  return nhwc ? Dims{logical[0], logical[3], logical[1], logical[2]} : logical;
}

// A Clip's bounds: an absent one is no bound (JSON has no infinity).
float clip_lo(const json& op) {
  return op.value("lo", -std::numeric_limits<float>::infinity());
}
float clip_hi(const json& op) {
  return op.value("hi", std::numeric_limits<float>::infinity());
}

struct Step {
  dnnl::primitive primitive;
  std::unordered_map<int, memory> args;
};

class Region {
 public:
  Region(const json& payload, void** args) {
    for (const json& v : payload.at("values")) shapes_[v.at("id").get<int>()] = v.at("shape").get<Dims>();
    int arg = 0;
    for (const json& in : payload.at("inputs")) {
      const int id = in.at("id").get<int>();
      memory m(plain_desc(shape(id)), engine_, args[arg++]);
      values_[id] = m;
      if (in.at("weight").get<bool>()) weights_[id] = m;
    }
    std::vector<std::pair<int, memory>> outputs;
    for (const json& out : payload.at("outputs")) {
      const int id = out.get<int>();
      outputs.emplace_back(id, memory(plain_desc(shape(id)), engine_, args[arg++]));
    }
    for (const json& op : payload.at("ops")) build(op);
    for (auto& [id, user] : outputs) reorder_step(value(id), user);
  }

  void run() {
    for (Step& s : steps_) s.primitive.execute(stream_, s.args);
    stream_.wait();
  }

 private:
  const Dims& shape(int id) const {
    auto it = shapes_.find(id);
    if (it == shapes_.end()) throw std::runtime_error("value " + std::to_string(id) + " has no shape");
    return it->second;
  }
  const memory& value(int id) const {
    auto it = values_.find(id);
    if (it == values_.end()) throw std::runtime_error("value " + std::to_string(id) + " is read before it is computed");
    return it->second;
  }

  void reorder_step(const memory& from, const memory& to) {
    steps_.push_back({dnnl::reorder(from, to), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}});
  }

  // Value `id` with descriptor `want` (logical axes): itself, or a copy
  // reordered on each run (once, now, for a weight).
  memory as(int id, const memory::desc& want) {
    const memory& have = value(id);
    if (have.get_desc() == want) return have;
    memory copy(want, engine_);
    auto w = weights_.find(id);
    if (w != weights_.end()) {
      dnnl::reorder(w->second, copy).execute(stream_, w->second, copy);
      stream_.wait();
    } else {
      reorder_step(have, copy);
    }
    return copy;
  }

  // A value as a second operand (a binary op or post-op) broadcast to `rank`
  // dimensions: an outside buffer of lower rank gains leading ones.
  memory::desc operand_desc(int id, size_t rank) const {
    const memory::desc d = value(id).get_desc();
    if (static_cast<size_t>(d.data.ndims) == rank) return d;
    Dims dims(rank - shape(id).size(), 1);
    dims.insert(dims.end(), shape(id).begin(), shape(id).end());
    return plain_desc(dims);
  }
  memory operand(int id, size_t rank) {
    const memory::desc d = operand_desc(id, rank);
    return d == value(id).get_desc() ? value(id) : memory(d, engine_, value(id).get_data_handle());
  }

  // A post-op's second operand in logical axes: as it is (a lower-rank
  // outside buffer gaining leading ones), or plain when oneDNN takes no other.
  memory post_operand(int id, size_t rank, bool plain) {
    const memory m = operand(id, rank);
    if (!plain || m.get_desc() == plain_desc(m.get_desc().dims())) return m;
    return as(id, plain_desc(shape(id)));
  }

  void build(const json& op) {
    const std::string kind = op.at("op");
    const int out = op.at("output").get<int>();
    const std::vector<int> in = op.at("inputs").get<std::vector<int>>();
    if (kind == "conv" || kind == "dense") return anchor(op, kind, in, out);
    if (kind == "max_pool" || kind == "avg_pool") return pool(op, kind, in.at(0), out);
    if (kind == "relu" || kind == "clip") {
      const memory& x = value(in.at(0));
      const auto alg = kind == "relu" ? dnnl::algorithm::eltwise_relu : dnnl::algorithm::eltwise_clip;
      const float lo = kind == "clip" ? clip_lo(op) : 0.f, hi = kind == "clip" ? clip_hi(op) : 0.f;
      dnnl::eltwise_forward::primitive_desc pd({dnnl::prop_kind::forward_inference, alg, x.get_desc(), lo, hi},
                                               engine_);
      return add_step(dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, x}}, pd.dst_desc(), out);
    }
    if (kind == "add") {
      const memory& a = value(in.at(0));
      const memory b = operand(in.at(1), shape(out).size());
      dnnl::binary::primitive_desc pd({dnnl::algorithm::binary_add, a.get_desc(), b.get_desc(), a.get_desc()}, engine_);
      return add_step(dnnl::binary(pd), {{DNNL_ARG_SRC_0, a}, {DNNL_ARG_SRC_1, b}}, pd.dst_desc(), out);
    }
    if (kind == "concat") {
      std::vector<memory::desc> descs;
      std::unordered_map<int, memory> args;
      for (size_t i = 0; i < in.size(); ++i) {
        descs.push_back(value(in[i]).get_desc());
        args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] = value(in[i]);
      }
      dnnl::concat::primitive_desc pd(op.at("axis").get<int>(), descs, engine_);
      return add_step(dnnl::concat(pd), std::move(args), pd.dst_desc(), out);
    }
    if (kind == "transpose") {  // a view: output axis d is input axis perm[d]
      const std::vector<int> perm = op.at("perm").get<std::vector<int>>();
      std::vector<int> position(perm.size());
      for (size_t d = 0; d < perm.size(); ++d) position.at(static_cast<size_t>(perm[d])) = static_cast<int>(d);
      const memory& x = value(in.at(0));
      values_[out] = memory(x.get_desc().permute_axes(position), engine_, x.get_data_handle());
      return;
    }
    throw std::runtime_error("unknown op '" + kind + "'");
  }

  // Runs `p` writing a new memory of `dst` (the primitive's axes, logical
  // when `nhwc` is false) that becomes value `out`.
  void add_step(dnnl::primitive p, std::unordered_map<int, memory> args, const memory::desc& dst, int out,
                bool nhwc = false) {
    add_step(std::move(p), std::move(args), memory(dst, engine_), out, nhwc);
  }
  void add_step(dnnl::primitive p, std::unordered_map<int, memory> args, const memory& dst, int out, bool nhwc) {
    args[DNNL_ARG_DST] = dst;
    steps_.push_back({std::move(p), std::move(args)});
    values_[out] = memory(from_nchw(dst.get_desc(), nhwc), engine_, dst.get_data_handle());
  }

  // A conv or dense layer with its post-ops: relu and clip as eltwise; the
  // first add of a full-shape operand (a residual) as a sum into the
  // destination, which then holds the operand before the primitive runs;
  // other adds (a bias) as binary post-ops.
  void anchor(const json& op, const std::string& kind, const std::vector<int>& in, int out) {
    const bool conv = kind == "conv", nhwc = conv && op.at("nhwc").get<bool>();
    const Dims dst_dims = nchw_dims(shape(out), nhwc);
    const Dims src_dims = nchw_dims(shape(in.at(0)), nhwc);
    const memory::desc src_any(src_dims, kF32, memory::format_tag::any),
        dst_any(dst_dims, kF32, memory::format_tag::any);
    const memory::desc user_w = weight_desc(op, kind, shape(in.at(1)), src_dims, dst_dims);
    const memory::desc w_any(user_w.dims(), kF32, memory::format_tag::any);
    const bool has_bias = in.size() > 2;
    const memory::desc bias_desc = has_bias ? plain_desc({dst_dims[1]}) : memory::desc();
    const json& post = op.at("post_ops");
    int sum_post = -1;
    for (size_t i = 0; i < post.size() && sum_post < 0; ++i)
      if (post[i].at("kind") == "add" && shape(post[i].at("input").get<int>()) == shape(out))
        sum_post = static_cast<int>(i);
    // Binary operands in the primitive's axes; plain ones if oneDNN takes no other.
    auto make_pd = [&](bool plain_operands) {
      dnnl::post_ops ops;
      for (size_t i = 0; i < post.size(); ++i) {
        const json& p = post[i];
        const std::string k = p.at("kind");
        if (k == "relu") ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
        if (k == "clip") ops.append_eltwise(1.f, dnnl::algorithm::eltwise_clip, clip_lo(p), clip_hi(p));
        if (k == "add" && static_cast<int>(i) == sum_post) ops.append_sum(1.f);
        if (k == "add" && static_cast<int>(i) != sum_post) {
          memory::desc d = operand_desc(p.at("input").get<int>(), dst_dims.size());
          if (plain_operands) d = plain_desc(d.dims());
          ops.append_binary(dnnl::algorithm::binary_add, to_nchw(d, nhwc));
        }
      }
      dnnl::primitive_attr attr;
      attr.set_post_ops(ops);
      return conv ? conv_pd(op, src_any, w_any, bias_desc, dst_any, attr)
                  : dense_pd(src_any, w_any, bias_desc, dst_any, attr);
    };
    bool plain_operands = false;
    dnnl::primitive prim;
    memory::desc src_d, w_d, dst_d;
    try {
      std::tie(prim, src_d, w_d, dst_d) = make_pd(false);
    } catch (const dnnl::error&) {
      plain_operands = true;
      std::tie(prim, src_d, w_d, dst_d) = make_pd(true);
    }
    std::unordered_map<int, memory> args;
    args[DNNL_ARG_SRC] = memory(src_d, engine_, as(in[0], from_nchw(src_d, nhwc)).get_data_handle());
    memory user_weight(user_w, engine_, value(in[1]).get_data_handle());
    memory w(w_d, engine_);
    dnnl::reorder(user_weight, w).execute(stream_, user_weight, w);  // once, at load
    stream_.wait();
    args[DNNL_ARG_WEIGHTS] = w;
    if (has_bias) args[DNNL_ARG_BIAS] = memory(bias_desc, engine_, value(in[2]).get_data_handle());
    for (size_t i = 0; i < post.size(); ++i) {
      if (post[i].at("kind") != "add" || static_cast<int>(i) == sum_post) continue;
      const memory m = post_operand(post[i].at("input").get<int>(), dst_dims.size(), plain_operands);
      args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(i)) | DNNL_ARG_SRC_1] =
          memory(to_nchw(m.get_desc(), nhwc), engine_, m.get_data_handle());
    }
    memory dst(dst_d, engine_);
    if (sum_post >= 0)
      reorder_step(value(post[static_cast<size_t>(sum_post)].at("input").get<int>()),
                   memory(from_nchw(dst_d, nhwc), engine_, dst.get_data_handle()));
    add_step(prim, std::move(args), dst, out, nhwc);
  }

  // The weight as Tessera stores it, in oneDNN's axes: conv OIHW or HWIO
  // (with a leading group axis when grouped), dense [N, K] or [K, N].
  static memory::desc weight_desc(const json& op, const std::string& kind, const Dims& w, const Dims& src,
                                  const Dims& dst) {
    if (kind == "dense") {
      const int64_t n = dst[1], k = src[1];
      return op.at("weight_layout") == "nk" ? memory::desc({n, k}, kF32, Dims{k, 1})
                                            : memory::desc({n, k}, kF32, Dims{1, n});
    }
    const int64_t g = op.at("groups").get<int64_t>(), kk = dst[1], kg = kk / g;
    if (!op.at("nhwc").get<bool>()) {  // [K, C/g, R, S]
      const int64_t cg = w[1], r = w[2], s = w[3];
      if (g == 1) return plain_desc({kk, cg, r, s});
      return memory::desc({g, kg, cg, r, s}, kF32, Dims{kg * cg * r * s, cg * r * s, r * s, s, 1});
    }
    const int64_t r = w[0], s = w[1], cg = w[2];  // [R, S, C/g, K]
    if (g == 1) return memory::desc({kk, cg, r, s}, kF32, Dims{1, kk, s * cg * kk, cg * kk});
    return memory::desc({g, kg, cg, r, s}, kF32, Dims{kg, 1, kk, s * cg * kk, cg * kk});
  }

  using Built = std::tuple<dnnl::primitive, memory::desc, memory::desc, memory::desc>;

  Built conv_pd(const json& op, const memory::desc& src, const memory::desc& w, const memory::desc& bias,
                const memory::desc& dst, const dnnl::primitive_attr& attr) const {
    const Dims strides = op.at("strides"), dilations = op.at("dilations"), pl = op.at("pads_begin"),
               pr = op.at("pads_end");
    using cf = dnnl::convolution_forward;
    const auto inference = dnnl::prop_kind::forward_inference;
    const auto alg = dnnl::algorithm::convolution_direct;
    cf::primitive_desc pd =
        bias.data.ndims
            ? cf::primitive_desc({inference, alg, src, w, bias, dst, strides, dilations, pl, pr}, attr, engine_)
            : cf::primitive_desc({inference, alg, src, w, dst, strides, dilations, pl, pr}, attr, engine_);
    return {cf(pd), pd.src_desc(), pd.weights_desc(), pd.dst_desc()};
  }

  Built dense_pd(const memory::desc& src, const memory::desc& w, const memory::desc& bias, const memory::desc& dst,
                 const dnnl::primitive_attr& attr) const {
    using ip = dnnl::inner_product_forward;
    const auto inference = dnnl::prop_kind::forward_inference;
    ip::primitive_desc pd = bias.data.ndims ? ip::primitive_desc({inference, src, w, bias, dst}, attr, engine_)
                                            : ip::primitive_desc({inference, src, w, dst}, attr, engine_);
    return {ip(pd), pd.src_desc(), pd.weights_desc(), pd.dst_desc()};
  }

  void pool(const json& op, const std::string& kind, int in, int out) {
    const bool nhwc = op.at("nhwc").get<bool>();
    const memory& x = value(in);
    const memory::desc src = to_nchw(x.get_desc(), nhwc);
    const memory::desc dst(nchw_dims(shape(out), nhwc), kF32, memory::format_tag::any);
    const auto alg = kind == "max_pool"                 ? dnnl::algorithm::pooling_max
                     : op.at("include_pad").get<bool>() ? dnnl::algorithm::pooling_avg_include_padding
                                                        : dnnl::algorithm::pooling_avg_exclude_padding;
    const Dims strides = op.at("strides"), kernel = op.at("kernel"), pl = op.at("pads_begin"), pr = op.at("pads_end");
    dnnl::pooling_forward::primitive_desc pd(
        {dnnl::prop_kind::forward_inference, alg, src, dst, strides, kernel, pl, pr}, engine_);
    add_step(dnnl::pooling_forward(pd), {{DNNL_ARG_SRC, memory(src, engine_, x.get_data_handle())}}, pd.dst_desc(), out,
             nhwc);
  }

  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
  std::map<int, Dims> shapes_;
  std::map<int, memory> values_;   // every value computed so far, logical axes
  std::map<int, memory> weights_;  // inputs the payload marks as weights
  std::vector<Step> steps_;
};

void write_error(char* error, int64_t size, const std::string& what) {
  if (size <= 0) return;
  const size_t n = std::min(what.size(), static_cast<size_t>(size - 1));
  std::memcpy(error, what.data(), n);
  error[n] = '\0';
}

}  // namespace

struct TesseraExternalRegion {
  std::unique_ptr<Region> region;
};

extern "C" {

__attribute__((visibility("default"))) int32_t tessera_external_abi_version(void) {
  return TESSERA_EXTERNAL_ABI_VERSION;
}

__attribute__((visibility("default"))) TesseraExternalRegion* tessera_external_create(const char* payload, int64_t size,
                                                                                      const char* version, void** args,
                                                                                      const int64_t* arg_bytes,
                                                                                      int64_t num_args, char* error,
                                                                                      int64_t error_size) {
  if (std::string(version) != "1") {
    write_error(error, error_size, std::string("payload version ") + version + ", this module reads 1");
    return nullptr;
  }
  try {
    const json j = json::parse(std::string(payload, static_cast<size_t>(size)));
    tessera::dnnl_module::check_payload(j, arg_bytes, num_args);
    return new TesseraExternalRegion{std::make_unique<Region>(j, args)};
  } catch (const dnnl::error& e) {
    write_error(error, error_size, std::string("oneDNN: ") + e.what());
  } catch (const std::exception& e) {
    write_error(error, error_size, std::string("malformed payload: ") + e.what());
  }
  return nullptr;
}

__attribute__((visibility("default"))) int32_t tessera_external_run(TesseraExternalRegion* region, void**) {
  try {
    region->region->run();
    return 0;
  } catch (const std::exception&) {
    return -1;
  }
}

__attribute__((visibility("default"))) void tessera_external_destroy(TesseraExternalRegion* region) {
  delete region;
}

}  // extern "C"
