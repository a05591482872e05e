#include "runtime/dnnl/payload_check.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::dnnl_module {
namespace {

using nlohmann::json;
using Dims = std::vector<int64_t>;

// Bounds that keep every size the builder computes far from overflow.
constexpr int64_t kMaxDim = int64_t{1} << 31;
constexpr int64_t kMaxElements = int64_t{1} << 40;
constexpr size_t kMaxRank = 12;

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(what);
}

const json& field(const json& object, const char* name, const std::string& where) {
  if (!object.is_object() || !object.contains(name)) fail(where + " has no '" + name + "'");
  return object.at(name);
}

int64_t integer(const json& j, const std::string& what, int64_t lo, int64_t hi) {
  if (!j.is_number_integer()) fail(what + " is not an integer");
  const int64_t v = j.get<int64_t>();
  if (v < lo || v > hi)
    fail(what + " is " + std::to_string(v) + ", outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

bool boolean(const json& object, const char* name, const std::string& where) {
  const json& j = field(object, name, where);
  if (!j.is_boolean()) fail(where + "'s '" + name + "' is not a boolean");
  return j.get<bool>();
}

// A list of `count` integers in [lo, hi].
Dims integers(const json& object, const char* name, size_t count, int64_t lo, const std::string& where) {
  const json& j = field(object, name, where);
  if (!j.is_array() || j.size() != count)
    fail(where + "'s '" + name + "' is not a list of " + std::to_string(count) + " integers");
  Dims out;
  for (const json& x : j) out.push_back(integer(x, where + "'s '" + name + "'", lo, kMaxDim));
  return out;
}

class Checker {
 public:
  Checker(const json& payload, const int64_t* arg_bytes, int64_t num_args)
      : payload_(payload), arg_bytes_(arg_bytes), num_args_(num_args) {}

  void run() {
    if (!payload_.is_object()) fail("the payload is not a JSON object");
    for (const char* list : {"values", "inputs", "outputs", "ops"})
      if (!field(payload_, list, "the payload").is_array()) fail(std::string("'") + list + "' is not a list");
    for (const json& v : payload_.at("values")) value_entry(v);
    arguments();
    for (const json& op : payload_.at("ops")) operation(op);
  }

 private:
  void value_entry(const json& v) {
    const int64_t id = integer(field(v, "id", "a value"), "a value's id", 0, kMaxDim);
    const json& shape = field(v, "shape", "value " + std::to_string(id));
    if (!shape.is_array() || shape.size() > kMaxRank)
      fail("value " + std::to_string(id) + "'s shape is not a list of at most " + std::to_string(kMaxRank) +
           " dimensions");
    Dims dims;
    int64_t elements = 1;
    for (const json& d : shape) {
      dims.push_back(integer(d, "a dimension of value " + std::to_string(id), 1, kMaxDim));
      elements *= dims.back();
      if (elements > kMaxElements) fail("value " + std::to_string(id) + " is too large");
    }
    if (!shapes_.emplace(id, dims).second) fail("value " + std::to_string(id) + " is listed twice");
  }

  const Dims& shape(const json& id_json, const std::string& what) const {
    const int64_t id = integer(id_json, what, 0, kMaxDim);
    auto it = shapes_.find(id);
    if (it == shapes_.end()) fail(what + " (value " + std::to_string(id) + ") has no shape");
    return it->second;
  }

  static int64_t float_bytes(const Dims& dims) {
    int64_t n = 4;
    for (int64_t d : dims) n *= d;
    return n;
  }

  // The inputs then the outputs, one buffer each, of exactly their bytes.
  void arguments() {
    std::vector<const Dims*> args;
    for (const json& in : payload_.at("inputs")) {
      args.push_back(&shape(field(in, "id", "an input"), "an input"));
      boolean(in, "weight", "an input");
    }
    for (const json& out : payload_.at("outputs")) args.push_back(&shape(out, "an output"));
    if (static_cast<int64_t>(args.size()) != num_args_)
      fail("the region has " + std::to_string(args.size()) + " inputs and outputs, the call " +
           std::to_string(num_args_) + " buffers");
    for (size_t a = 0; a < args.size(); ++a)
      if (float_bytes(*args[a]) != arg_bytes_[a])
        fail("argument " + std::to_string(a) + " takes " + std::to_string(float_bytes(*args[a])) +
             " bytes, its buffer " + std::to_string(arg_bytes_[a]));
  }

  void operation(const json& op) {
    const std::string where = "an op";
    const json& kind_json = field(op, "op", where);
    if (!kind_json.is_string()) fail("an op's kind is not a string");
    const std::string kind = kind_json.get<std::string>();
    const std::string at = "op '" + kind + "'";
    const Dims& out = shape(field(op, "output", at), at + "'s output");
    const json& in_json = field(op, "inputs", at);
    if (!in_json.is_array()) fail(at + "'s inputs are not a list");
    std::vector<const Dims*> in;
    for (const json& i : in_json) in.push_back(&shape(i, at + "'s input"));
    auto arity = [&](size_t lo, size_t hi) {
      if (in.size() < lo || in.size() > hi) fail(at + " has " + std::to_string(in.size()) + " inputs");
    };
    if (kind == "conv") return arity(2, 3), conv(op, at, in, out);
    if (kind == "dense") return arity(2, 3), dense(op, at, in, out);
    if (kind == "max_pool" || kind == "avg_pool") return arity(1, 1), pool(op, at, kind, *in[0], out);
    if (kind == "relu" || kind == "clip" || kind == "add") {
      arity(kind == "add" ? 2 : 1, kind == "add" ? 2 : 1);
      if (*in[0] != out) fail(at + "'s output is not the shape of its input");
      if (kind == "add" && in[1]->size() > out.size()) fail(at + "'s second operand has more axes than its output");
      if (kind == "clip") bounds(op, at);
      return;
    }
    if (kind == "concat") return arity(1, 4096), concat(op, at, in, out);
    if (kind == "transpose") return arity(1, 1), transpose(op, at, *in[0], out);
    fail("unknown op '" + kind + "'");
  }

  static void bounds(const json& op, const std::string& at) {
    for (const char* b : {"lo", "hi"})
      if (op.contains(b) && !op.at(b).is_number()) fail(at + "'s '" + b + "' is not a number");
  }

  static void rank(const Dims& d, size_t want, const std::string& what) {
    if (d.size() != want) fail(what + " has rank " + std::to_string(d.size()) + ", not " + std::to_string(want));
  }

  // Biases of `channels` and the post-ops' operands.
  void bias_and_post_ops(const json& op, const std::string& at, const std::vector<const Dims*>& in, int64_t channels,
                         size_t rank_of_output) {
    if (in.size() > 2 && float_bytes(*in[2]) != 4 * channels)
      fail(at + "'s bias has not " + std::to_string(channels) + " elements");
    const json& post = field(op, "post_ops", at);
    if (!post.is_array()) fail(at + "'s post_ops are not a list");
    for (const json& p : post) {
      const json& k = field(p, "kind", "a post-op");
      if (!k.is_string()) fail("a post-op's kind is not a string");
      const std::string kind = k.get<std::string>();
      if (kind == "add") {
        if (shape(field(p, "input", "an add post-op"), at + "'s add post-op").size() > rank_of_output)
          fail(at + "'s add post-op has more axes than its output");
      } else if (kind == "clip") {
        bounds(p, at + "'s clip post-op");
      } else if (kind != "relu") {
        fail(at + " has an unknown post-op '" + kind + "'");
      }
    }
  }

  void conv(const json& op, const std::string& at, const std::vector<const Dims*>& in, const Dims& out) {
    const bool nhwc = boolean(op, "nhwc", at);
    const Dims &x = *in[0], &w = *in[1];
    rank(x, 4, at + "'s input");
    rank(w, 4, at + "'s weight");
    rank(out, 4, at + "'s output");
    const int64_t groups = integer(field(op, "groups", at), at + "'s groups", 1, kMaxDim);
    const int64_t c = nhwc ? x[3] : x[1], k = nhwc ? out[3] : out[1];
    const int64_t wk = nhwc ? w[3] : w[0], wc = nhwc ? w[2] : w[1];
    if (c % groups != 0 || k % groups != 0)
      fail(at + "'s " + std::to_string(groups) + " groups do not divide its channels");
    if (wk != k || wc != c / groups) fail(at + "'s weight does not match its channels");
    if (x[0] != out[0]) fail(at + "'s batch changes");
    integers(op, "strides", 2, 1, at);
    integers(op, "dilations", 2, 0, at);
    integers(op, "pads_begin", 2, 0, at);
    integers(op, "pads_end", 2, 0, at);
    bias_and_post_ops(op, at, in, k, out.size());
  }

  void dense(const json& op, const std::string& at, const std::vector<const Dims*>& in, const Dims& out) {
    const Dims &x = *in[0], &w = *in[1];
    rank(x, 2, at + "'s input");
    rank(w, 2, at + "'s weight");
    rank(out, 2, at + "'s output");
    const json& layout = field(op, "weight_layout", at);
    if (layout != "nk" && layout != "kn") fail(at + "'s weight_layout is neither 'nk' nor 'kn'");
    const int64_t n = out[1], k = x[1];
    if (x[0] != out[0] || w != (layout == "nk" ? Dims{n, k} : Dims{k, n}))
      fail(at + "'s weight does not match its input and output");
    bias_and_post_ops(op, at, in, n, out.size());
  }

  static void pool(const json& op, const std::string& at, const std::string& kind, const Dims& x, const Dims& out) {
    boolean(op, "nhwc", at);
    rank(x, 4, at + "'s input");
    rank(out, 4, at + "'s output");
    integers(op, "kernel", 2, 1, at);
    integers(op, "strides", 2, 1, at);
    integers(op, "pads_begin", 2, 0, at);
    integers(op, "pads_end", 2, 0, at);
    if (kind == "avg_pool") boolean(op, "include_pad", at);
  }

  static void concat(const json& op, const std::string& at, const std::vector<const Dims*>& in, const Dims& out) {
    const auto axis =
        static_cast<size_t>(integer(field(op, "axis", at), at + "'s axis", 0, static_cast<int64_t>(out.size()) - 1));
    int64_t along = 0;
    for (const Dims* d : in) {
      rank(*d, out.size(), at + "'s input");
      for (size_t a = 0; a < out.size(); ++a)
        if (a != axis && (*d)[a] != out[a]) fail(at + "'s inputs differ from its output off the axis");
      along += (*d)[axis];
    }
    if (along != out[axis]) fail(at + "'s output is not its inputs' sum along the axis");
  }

  static void transpose(const json& op, const std::string& at, const Dims& x, const Dims& out) {
    const Dims perm = integers(op, "perm", x.size(), 0, at);
    std::set<int64_t> seen(perm.begin(), perm.end());
    if (seen.size() != x.size() || (!seen.empty() && *seen.rbegin() >= static_cast<int64_t>(x.size())))
      fail(at + "'s perm is not a permutation of its input's axes");
    Dims permuted;
    for (int64_t p : perm) permuted.push_back(x[static_cast<size_t>(p)]);
    if (permuted != out) fail(at + "'s output is not its input transposed");
  }

  const json& payload_;
  const int64_t* arg_bytes_;
  int64_t num_args_;
  std::map<int64_t, Dims> shapes_;
};

}  // namespace

void check_payload(const json& payload, const int64_t* arg_bytes, int64_t num_args) {
  Checker(payload, arg_bytes, num_args).run();
}

}  // namespace tessera::dnnl_module
