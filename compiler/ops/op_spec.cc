#include "compiler/ops/op_spec.h"

#include <charconv>
#include <functional>
#include <map>

#include "compiler/ir/op.h"
#include "compiler/ops/ops.h"

namespace tessera::ops {
namespace {

using Params = std::map<std::string, int64_t>;
using Builder = std::function<Result<std::vector<Tensor>>(const Params&)>;

struct OpEntry {
  OpInfo info;
  Builder build;
};

OpParam size(const char* name, const char* help) {
  return {name, std::nullopt, 1, std::numeric_limits<int64_t>::max(), help};
}
OpParam size_or(const char* name, int64_t def, int64_t lo, const char* help) {
  return {name, def, lo, std::numeric_limits<int64_t>::max(), help};
}
OpParam flag(const char* name, const char* help) {
  return {name, 0, 0, 1, help};
}
// A size that must be a multiple of `factor`.
OpParam multiple(const char* name, int64_t factor, const char* help) {
  return {name, std::nullopt, factor, std::numeric_limits<int64_t>::max(), help, factor};
}
// A size of bytes packed four to a word.
OpParam four_bytes(const char* name, const char* help) {
  return multiple(name, 4, help);
}
// A reduction of bfloat16 values packed two to a word: even.
OpParam pairs(const char* name, const char* help) {
  return multiple(name, 2, help);
}

Tensor input(std::vector<int64_t> shape, const char* name) {
  return placeholder(std::move(shape), DType::f32(), name);
}

// Appends the output of `out` to `inputs` (args are inputs, then the output).
Result<std::vector<Tensor>> with_output(std::vector<Tensor> inputs, Result<Tensor> out) {
  if (!out.is_ok()) return out.status();
  inputs.push_back(*out);
  return inputs;
}

std::vector<OpParam> conv_params(bool depthwise) {
  std::vector<OpParam> p = {size("N", "batch"), size("C", "input channels"), size("H", "input height"),
                            size("W", "input width")};
  if (!depthwise) p.push_back(size("K", "output channels"));
  p.push_back(size("R", "kernel height"));
  p.push_back(size("S", "kernel width"));
  if (depthwise) p.push_back(size_or("multiplier", 1, 1, "output channels per input channel"));
  p.push_back(size_or("stride", 1, 1, "stride of both spatial axes"));
  p.push_back(size_or("pad", 0, 0, "zero padding of all four sides"));
  p.push_back(size_or("dilation", 1, 1, "dilation of both spatial axes"));
  if (!depthwise) p.push_back(size_or("groups", 1, 1, "groups; must divide C and K"));
  if (depthwise) {
    // The column stride and the epilogue of a model's depthwise conv (e.g.
    // PP-OCR's stride 2 x 1 with its folded bias and ReLU), so that `--op`
    // names the same workload (compiler/graph/build_node.cc builds it so).
    p.push_back(size_or("stride_w", 0, 0, "stride of the columns when it differs (0: stride)"));
    p.push_back(flag("bias", "1: add a bias of C*multiplier per output channel"));
    p.push_back(flag("relu", "1: apply ReLU (after the bias)"));
  }
  return p;
}

std::vector<OpParam> pool_params(bool avg) {
  std::vector<OpParam> p = {size("N", "batch"),
                            size("C", "channels"),
                            size("H", "input height"),
                            size("W", "input width"),
                            size("R", "window height"),
                            size("S", "window width"),
                            size_or("stride", 1, 1, "stride of both spatial axes"),
                            size_or("pad", 0, 0, "padding of all four sides (smaller than the window)")};
  if (avg) p.push_back(flag("count_include_pad", "1: divide by the window size, padding included"));
  return p;
}

const std::vector<OpParam> kMatrixParams = {};

std::vector<OpParam> mn(const char* what) {
  return {size("M", "rows"), size("N", what)};
}

void add_binary(std::vector<OpEntry>& ops, const char* name,
                Result<Tensor> (*f)(const Tensor&, const Tensor&, const std::string&)) {
  std::vector<OpParam> p = mn("columns");
  p.push_back(flag("broadcast", "1: B is a row of N broadcast over the M rows"));
  ops.push_back(
      {{name, std::string(name) + " of A: M x N and B (M x N, or N with broadcast=1)", p}, [f, name](const Params& q) {
         Tensor a = input({q.at("M"), q.at("N")}, "A");
         Tensor b = q.at("broadcast") ? input({q.at("N")}, "B") : input({q.at("M"), q.at("N")}, "B");
         return with_output({a, b}, f(a, b, name));
       }});
}

void add_unary(std::vector<OpEntry>& ops, const char* name, const char* summary,
               std::function<Result<Tensor>(const Tensor&)> f) {
  ops.push_back({{name, summary, mn("columns")}, [f](const Params& q) {
                   Tensor x = input({q.at("M"), q.at("N")}, "X");
                   return with_output({x}, f(x));
                 }});
}

std::vector<OpEntry> op_table() {
  std::vector<OpEntry> ops;
  ops.push_back({{"matmul",
                  "C = A B for A: M x K, B: K x N",
                  {size("M", "rows of A"), size("N", "columns of B"), size("K", "reduction")}},
                 [](const Params& q) {
                   Tensor a = input({q.at("M"), q.at("K")}, "A"), b = input({q.at("K"), q.at("N")}, "B");
                   return with_output({a, b}, matmul(a, b));
                 }});
  ops.push_back(
      {{"conv1d",
        "1-D convolution of one input channel as the product of its windows (a model's long one-channel "
        "conv, an STFT): X: N x 1 x W x 1 (NHWC), weights S x K, the window m starting at sample m * stride",
        {size_or("N", 1, 1, "batch"), OpParam{"C", 1, 1, 1, "input channels (one)"}, size("W", "input length"),
         size("K", "output channels"), size("S", "taps"), size_or("stride", 1, 1, "stride")}},
       [](const Params& q) {
         Tensor x = placeholder({q.at("N"), 1, q.at("W"), 1}, DType::f32(), "X");
         Tensor w = placeholder({q.at("S"), q.at("K")}, DType::f32(), "W");
         return with_output({x, w}, conv1d_windows(x, w, q.at("stride")));
       }});
  ops.push_back({{"matmul_u8s8",
                  "C = A B in int32 for A: M x K uint8, B: K x N int8, packed four bytes of K to an int32 word",
                  {size("M", "rows of A"), size("N", "columns of B"), four_bytes("K", "reduction")}},
                 [](const Params& q) {
                   Tensor a = placeholder({q.at("M"), q.at("K") / 4}, DType::i32(), "A");
                   Tensor b = placeholder({q.at("K") / 4, q.at("N")}, DType::i32(), "B");
                   return with_output({a, b}, matmul_u8s8(a, b));
                 }});
  ops.push_back({{"matmul_u8s8_pairs",
                  "C = A B in int32 for A: M x K uint8 bytes, B: K x N int8 packed four bytes of K to an int32 word, "
                  "computed in 2 x 2 tiles over eight bytes of K (AArch64's USMMLA)",
                  {multiple("M", 2, "rows of A"), multiple("N", 2, "columns of B"), multiple("K", 8, "reduction")}},
                 [](const Params& q) {
                   Tensor a = placeholder({q.at("M"), q.at("K")}, DType::u8(), "A");
                   Tensor b = placeholder({q.at("K") / 4, q.at("N")}, DType::i32(), "B");
                   return with_output({a, b}, matmul_u8s8_pairs(a, b));
                 }});
  ops.push_back({{"matmul_bf16",
                  "C = A B in float32 for A: M x K and B: K x N bfloat16, B packed in pairs along K (K/2 x N x 2)",
                  {size("M", "rows of A"), size("N", "columns of B"), pairs("K", "reduction")}},
                 [](const Params& q) {
                   Tensor a = placeholder({q.at("M"), q.at("K")}, DType::bf16(), "A");
                   Tensor b = placeholder({q.at("K") / 2, q.at("N"), 2}, DType::bf16(), "B");
                   return with_output({a, b}, matmul_bf16(a, b));
                 }});
  ops.push_back({{"matmul_f16w",
                  "C = A B in float32 for A: M x K float32 and B: K x N float16 weights, widened to float32 as read "
                  "(--precision fp16)",
                  {size("M", "rows of A"), size("N", "columns of B"), size("K", "reduction")}},
                 [](const Params& q) {
                   Tensor a = input({q.at("M"), q.at("K")}, "A");
                   Tensor b = placeholder({q.at("K"), q.at("N")}, DType::f16(), "B");
                   return with_output({a, b}, matmul(a, b, "matmul_f16w"));
                 }});
  ops.push_back({{"batch_matmul",
                  "C[b] = A[b] B[b] for A: B x M x K, B: B x K x N",
                  {size("B", "batch"), size("M", "rows"), size("N", "columns"), size("K", "reduction")}},
                 [](const Params& q) {
                   Tensor a = input({q.at("B"), q.at("M"), q.at("K")}, "A");
                   Tensor b = input({q.at("B"), q.at("K"), q.at("N")}, "B");
                   return with_output({a, b}, batch_matmul(a, b));
                 }});
  ops.push_back({{"dense",
                  "Y = X W^T (+ bias) (then ReLU) for X: M x K, W: N x K",
                  {size("M", "batch rows"), size("N", "output features"), size("K", "input features"),
                   flag("bias", "1: add a bias of N"), flag("relu", "1: apply ReLU")}},
                 [](const Params& q) {
                   Tensor x = input({q.at("M"), q.at("K")}, "X"), w = input({q.at("N"), q.at("K")}, "W");
                   std::vector<Tensor> args = {x, w};
                   std::optional<Tensor> bias;
                   if (q.at("bias")) args.push_back(*(bias = input({q.at("N")}, "bias")));
                   return with_output(args, dense(x, w, bias, q.at("relu") != 0));
                 }});
  for (bool nhwc : {false, true}) {
    ops.push_back({{nhwc ? "conv2d_nhwc" : "conv2d",
                    nhwc ? "2-D convolution, X: N x H x W x C, W: R x S x C/groups x K (HWIO)"
                         : "2-D convolution, X: N x C x H x W, W: K x C/groups x R x S (OIHW)",
                    conv_params(false)},
                   [nhwc](const Params& q) {
                     const int64_t cg = q.at("C") / q.at("groups");
                     Tensor x = nhwc ? input({q.at("N"), q.at("H"), q.at("W"), q.at("C")}, "X")
                                     : input({q.at("N"), q.at("C"), q.at("H"), q.at("W")}, "X");
                     Tensor w = nhwc ? input({q.at("R"), q.at("S"), cg, q.at("K")}, "W")
                                     : input({q.at("K"), cg, q.at("R"), q.at("S")}, "W");
                     auto conv = nhwc ? conv2d_nhwc : conv2d_nchw;
                     return with_output({x, w}, conv(x, w, q.at("stride"), q.at("pad"), q.at("dilation"),
                                                     q.at("groups"), nhwc ? "conv2d_nhwc" : "conv2d"));
                   }});
  }
  ops.push_back(
      {{"conv2d_nhwc_u8s8",
        "2-D convolution in int32, X: N x H x W x C uint8, W: R x S x C/4 x K int8 packed four input "
        "channels to an int32 word",
        {size("N", "batch"), four_bytes("C", "input channels"), size("H", "input height"), size("W", "input width"),
         size("K", "output channels"), size("R", "kernel height"), size("S", "kernel width"),
         size_or("stride", 1, 1, "stride of both spatial axes"),
         size_or("pad", 0, 0, "padding of all four sides (by the pad value)"),
         size_or("dilation", 1, 1, "dilation of both spatial axes"),
         OpParam{"pad_value", 0, 0, 255, "the uint8 read outside the input (its zero point)"},
         size_or("groups", 1, 1, "groups; must divide K, and C into multiples of 4")}},
       [](const Params& q) {
         Tensor x = placeholder({q.at("N"), q.at("H"), q.at("W"), q.at("C")}, DType::u8(), "X");
         Tensor w = placeholder({q.at("R"), q.at("S"), q.at("C") / q.at("groups") / 4, q.at("K")}, DType::i32(), "W");
         return with_output({x, w}, conv2d_nhwc_u8s8(x, w, q.at("stride"), q.at("pad"), q.at("dilation"),
                                                     q.at("pad_value"), q.at("groups")));
       }});
  ops.push_back({{"conv2d_nhwc_u8s8_pairs",
                  "conv2d_nhwc_u8s8 of one group computed in 2 x 2 tiles (pairs of output columns by pairs of output "
                  "channels) over eight input channels at a time (AArch64's USMMLA)",
                  {size("N", "batch"), multiple("C", 8, "input channels"), size("H", "input height"),
                   size("W", "input width"), multiple("K", 2, "output channels"), size("R", "kernel height"),
                   size("S", "kernel width"), size_or("stride", 1, 1, "stride of both spatial axes"),
                   size_or("pad", 0, 0, "padding of all four sides (by the pad value)"),
                   size_or("dilation", 1, 1, "dilation of both spatial axes"),
                   OpParam{"pad_value", 0, 0, 255, "the uint8 read outside the input (its zero point)"}}},
                 [](const Params& q) {
                   Tensor x = placeholder({q.at("N"), q.at("H"), q.at("W"), q.at("C")}, DType::u8(), "X");
                   Tensor w = placeholder({q.at("R"), q.at("S"), q.at("C") / 4, q.at("K")}, DType::i32(), "W");
                   return with_output({x, w}, conv2d_nhwc_u8s8_pairs(x, w, q.at("stride"), q.at("pad"),
                                                                     q.at("dilation"), q.at("pad_value")));
                 }});
  ops.push_back({{"depthwise_conv2d_nhwc_u8s8",
                  "depthwise convolution in int32, X: N x H x W x C uint8, W: R x S x 1 x C*multiplier int8",
                  {size("N", "batch"), size("C", "input channels"), size("H", "input height"), size("W", "input width"),
                   size("R", "kernel height"), size("S", "kernel width"),
                   size_or("multiplier", 1, 1, "output channels per input channel"),
                   size_or("stride", 1, 1, "stride of both spatial axes"),
                   size_or("pad", 0, 0, "padding of all four sides (by the pad value)"),
                   size_or("dilation", 1, 1, "dilation of both spatial axes"),
                   OpParam{"pad_value", 0, 0, 255, "the uint8 read outside the input (its zero point)"}}},
                 [](const Params& q) {
                   Tensor x = placeholder({q.at("N"), q.at("H"), q.at("W"), q.at("C")}, DType::u8(), "X");
                   Tensor w = placeholder({q.at("R"), q.at("S"), 1, q.at("C") * q.at("multiplier")}, DType::i8(), "W");
                   return with_output({x, w}, depthwise_conv2d_nhwc_u8s8(x, w, q.at("stride"), q.at("pad"),
                                                                         q.at("dilation"), q.at("pad_value")));
                 }});
  ops.push_back(
      {{"conv2d_nhwc_bf16",
        "2-D convolution in float32 of bfloat16 X: N x H x W x C and W: R x S x C/2 x K x 2, packed in "
        "pairs of input channels",
        {size("N", "batch"), pairs("C", "input channels"), size("H", "input height"), size("W", "input width"),
         size("K", "output channels"), size("R", "kernel height"), size("S", "kernel width"),
         size_or("stride", 1, 1, "stride of both spatial axes"), size_or("pad", 0, 0, "zero padding of all four sides"),
         size_or("dilation", 1, 1, "dilation of both spatial axes")}},
       [](const Params& q) {
         Tensor x = placeholder({q.at("N"), q.at("H"), q.at("W"), q.at("C")}, DType::bf16(), "X");
         Tensor w = placeholder({q.at("R"), q.at("S"), q.at("C") / 2, q.at("K"), 2}, DType::bf16(), "W");
         return with_output({x, w}, conv2d_nhwc_bf16(x, w, q.at("stride"), q.at("pad"), q.at("dilation")));
       }});
  ops.push_back({{"conv2d_winograd_nhwc",
                  "3x3 stride-1 convolution by Winograd F(2x2, 3x3), X: N x H x W x C, U: 4 x 4 x C x K "
                  "(the transformed weights)",
                  {size("N", "batch"), size("C", "input channels"), size("H", "input height"), size("W", "input width"),
                   size("K", "output channels"), size_or("pad", 0, 0, "zero padding of all four sides")}},
                 [](const Params& q) {
                   Tensor x = input({q.at("N"), q.at("H"), q.at("W"), q.at("C")}, "X");
                   Tensor u = input({4, 4, q.at("C"), q.at("K")}, "U");
                   return with_output({x, u}, conv2d_winograd_nhwc(x, u, q.at("pad")));
                 }});
  for (bool nhwc : {false, true}) {
    ops.push_back({{nhwc ? "depthwise_conv2d_nhwc" : "depthwise_conv2d",
                    nhwc ? "depthwise convolution, X: N x H x W x C, W: R x S x 1 x C*multiplier (HWIO)"
                         : "depthwise convolution, X: N x C x H x W, W: C x multiplier x R x S",
                    conv_params(true)},
                   [nhwc](const Params& q) -> Result<std::vector<Tensor>> {
                     const int64_t k = q.at("C") * q.at("multiplier");
                     Tensor x = nhwc ? input({q.at("N"), q.at("H"), q.at("W"), q.at("C")}, "X")
                                     : input({q.at("N"), q.at("C"), q.at("H"), q.at("W")}, "X");
                     Tensor w = nhwc ? input({q.at("R"), q.at("S"), 1, k}, "W")
                                     : input({q.at("C"), q.at("multiplier"), q.at("R"), q.at("S")}, "W");
                     const Size2 stride(q.at("stride"), q.at("stride_w") ? q.at("stride_w") : q.at("stride"));
                     auto conv = nhwc ? depthwise_conv2d_nhwc : depthwise_conv2d_nchw;
                     TESSERA_ASSIGN_OR_RETURN(Tensor y, conv(x, w, stride, q.at("pad"), q.at("dilation"),
                                                             nhwc ? "depthwise_conv2d_nhwc" : "depthwise_conv2d"));
                     std::vector<Tensor> args = {x, w};
                     if (q.at("bias")) {
                       Tensor b = input({k}, "bias");
                       args.push_back(b);
                       const Tensor conv_out = y;
                       const size_t channel = nhwc ? 3 : 1;
                       y = compute(
                           conv_out->shape,
                           [&](const Vars& i) -> Expr {
                             std::vector<Expr> idx;
                             for (const Var& v : i) idx.push_back(static_cast<const Expr&>(v));
                             return read(conv_out, idx) + read(b, {i[channel]});
                           },
                           nhwc ? "depthwise_conv2d_nhwc.bias" : "depthwise_conv2d.bias", OpPattern::kBroadcast);
                     }
                     return with_output(args, q.at("relu") ? relu(y) : Result<Tensor>(y));
                   }});
  }
  for (bool avg : {false, true}) {
    ops.push_back({{avg ? "avg_pool2d" : "max_pool2d",
                    avg ? "average pooling of X: N x C x H x W over R x S windows"
                        : "max pooling of X: N x C x H x W over R x S windows",
                    pool_params(avg)},
                   [avg](const Params& q) -> Result<std::vector<Tensor>> {
                     Tensor x = input({q.at("N"), q.at("C"), q.at("H"), q.at("W")}, "X");
                     Size2 window(q.at("R"), q.at("S"));
                     if (avg)
                       return with_output(
                           {x}, avg_pool2d(x, window, q.at("stride"), q.at("pad"), q.at("count_include_pad") != 0));
                     return with_output({x}, max_pool2d(x, window, q.at("stride"), q.at("pad")));
                   }});
  }
  ops.push_back({{"global_avg_pool2d",
                  "mean of each channel of X: N x C x H x W",
                  {size("N", "batch"), size("C", "channels"), size("H", "height"), size("W", "width")}},
                 [](const Params& q) {
                   Tensor x = input({q.at("N"), q.at("C"), q.at("H"), q.at("W")}, "X");
                   return with_output({x}, global_avg_pool2d(x));
                 }});
  ops.push_back({{"softmax", "softmax of each row of X: M x N", mn("columns (the softmax axis)")}, [](const Params& q) {
                   Tensor x = input({q.at("M"), q.at("N")}, "X");
                   return with_output({x}, softmax(x, -1));
                 }});
  ops.push_back({{"layer_norm", "layer normalisation of each row of X: M x N, gamma and beta of N",
                  mn("columns (the normalised axis)")},
                 [](const Params& q) {
                   Tensor x = input({q.at("M"), q.at("N")}, "X");
                   Tensor gamma = input({q.at("N")}, "gamma"), beta = input({q.at("N")}, "beta");
                   return with_output({x, gamma, beta}, layer_norm(x, gamma, beta));
                 }});
  for (const char* name : {"reduce_sum", "reduce_mean", "reduce_max"}) {
    ops.push_back(
        {{name, std::string(name) + " of each row of X: M x N", mn("columns (reduced)")}, [name](const Params& q) {
           Tensor x = input({q.at("M"), q.at("N")}, "X");
           const std::string n = name;
           auto f = n == "reduce_sum" ? reduce_sum : n == "reduce_mean" ? reduce_mean : reduce_max;
           return with_output({x}, f(x, {1}, false, n));
         }});
  }
  add_binary(ops, "add", add);
  add_binary(ops, "sub", sub);
  add_binary(ops, "mul", mul);
  add_binary(ops, "div", div);
  add_binary(ops, "maximum", maximum);
  add_binary(ops, "minimum", minimum);
  add_binary(ops, "power", power);
  add_unary(ops, "relu", "max(x, 0) of X: M x N", [](const Tensor& x) { return relu(x); });
  add_unary(ops, "sigmoid", "sigmoid of X: M x N", [](const Tensor& x) { return sigmoid(x); });
  add_unary(ops, "tanh", "tanh of X: M x N", [](const Tensor& x) { return tanh(x); });
  add_unary(ops, "exp", "exp of X: M x N", [](const Tensor& x) { return exp(x); });
  add_unary(ops, "hardswish", "hardswish of X: M x N", [](const Tensor& x) { return hardswish(x); });
  add_unary(ops, "gelu", "gelu (erf form) of X: M x N", [](const Tensor& x) { return gelu(x); });
  add_unary(ops, "leaky_relu", "leaky ReLU (alpha 0.01) of X: M x N", [](const Tensor& x) { return leaky_relu(x); });
  add_unary(ops, "clip", "clip to [0, 6] (ReLU6) of X: M x N", [](const Tensor& x) { return clip(x, 0.0, 6.0); });
  return ops;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

Status spec_error(const std::string& what) {
  return Status(ErrorCode::kInvalidArgument, "operator spec: " + what);
}

std::string op_names(const std::vector<OpEntry>& ops) {
  std::string s;
  for (const OpEntry& e : ops) s += (s.empty() ? "" : ", ") + e.info.name;
  return s;
}

Result<Params> parse_params(const OpInfo& info, const std::string& body) {
  Params given;
  size_t start = 0;
  while (start <= body.size() && !trim(body).empty()) {
    size_t comma = body.find(',', start);
    std::string item = trim(body.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    start = comma == std::string::npos ? body.size() + 1 : comma + 1;
    size_t eq = item.find('=');
    if (eq == std::string::npos)
      return spec_error(info.name + ": expected key=value, got '" + item + "'; usage: " + info.usage());
    const std::string key = trim(item.substr(0, eq)), text = trim(item.substr(eq + 1));
    const OpParam* param = nullptr;
    for (const OpParam& p : info.params)
      if (p.name == key) param = &p;
    if (param == nullptr) return spec_error(info.name + ": unknown parameter '" + key + "'; usage: " + info.usage());
    if (given.count(key)) return spec_error(info.name + ": parameter " + key + " is given twice");
    int64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size())
      return spec_error(info.name + ": " + key + " must be an integer, got '" + text + "'");
    if (value < param->min_value || value > param->max_value) {
      std::string range = param->max_value == 1   ? "0 or 1"
                          : param->min_value == 1 ? "a positive integer"
                                                  : "a non-negative integer";
      return spec_error(info.name + ": " + key + " must be " + range + ", got " + std::to_string(value));
    }
    if (value % param->multiple_of != 0)
      return spec_error(info.name + ": " + key + " must be a multiple of " + std::to_string(param->multiple_of) +
                        ", got " + std::to_string(value));
    given[key] = value;
  }
  std::string missing;
  for (const OpParam& p : info.params) {
    if (given.count(p.name)) continue;
    if (p.default_value)
      given[p.name] = *p.default_value;
    else
      missing += (missing.empty() ? "" : ", ") + p.name;
  }
  if (!missing.empty()) return spec_error(info.name + ": missing " + missing + "; usage: " + info.usage());
  return given;
}

}  // namespace

std::string OpInfo::usage() const {
  std::string s = name + ":", optional;
  bool first = true;
  for (const OpParam& p : params) {
    if (p.default_value) {
      optional += "," + p.name + "=" + std::to_string(*p.default_value);
      continue;
    }
    s += (first ? "" : ",") + p.name + "=..";
    first = false;
  }
  return optional.empty() ? s : s + "[" + optional + "]";
}

std::vector<OpInfo> list_ops() {
  std::vector<OpInfo> out;
  for (OpEntry& e : op_table()) out.push_back(std::move(e.info));
  return out;
}

Result<OpInstance> parse_op_spec(const std::string& text) {
  const std::vector<OpEntry> ops = op_table();
  const std::string spec = trim(text);
  const size_t colon = spec.find(':');
  const std::string name = trim(spec.substr(0, colon));
  const OpEntry* entry = nullptr;
  for (const OpEntry& e : ops)
    if (e.info.name == name) entry = &e;
  if (entry == nullptr)
    return spec_error("unknown operator '" + name + "' in '" + spec + "'; accepted: " + op_names(ops));
  TESSERA_ASSIGN_OR_RETURN(Params params,
                           parse_params(entry->info, colon == std::string::npos ? "" : spec.substr(colon + 1)));
  OpInstance inst;
  inst.op = name;
  inst.spec = name + ":";
  for (size_t i = 0; i < entry->info.params.size(); ++i) {
    const std::string& key = entry->info.params[i].name;
    inst.spec += (i ? "," : "") + key + "=" + std::to_string(params.at(key));
  }
  auto args = entry->build(params);
  if (!args.is_ok()) return args.status().with_context("operator spec '" + inst.spec + "'");
  auto dag = ComputeDAG::make(*args);
  if (!dag.is_ok()) return dag.status().with_context("operator spec '" + inst.spec + "'");
  inst.dag = std::make_shared<const ComputeDAG>(std::move(dag).value());
  inst.flops = inst.dag->flop_count();
  return inst;
}

}  // namespace tessera::ops
