#include "bench/peers.h"

#include <cpuid.h>
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "runtime/module.h"

#ifdef TESSERA_HAVE_DNNL
#include <omp.h>

#include <dnnl.hpp>
#endif

extern "C" {
#include <cblas.h>
void openblas_set_num_threads(int num_threads);
}

namespace tessera::bench {

double median_seconds(const std::function<void()>& fn, int repeats, double min_ms) {
  using clock = std::chrono::steady_clock;
  fn();
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    int n = 0;
    auto start = clock::now();
    double elapsed = 0;
    do {
      fn();
      ++n;
      elapsed = std::chrono::duration<double>(clock::now() - start).count();
    } while (elapsed * 1e3 < min_ms);
    times.push_back(elapsed / n);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void let_peer_threads_idle() {
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
}

void openblas_sgemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c, int threads) {
  openblas_set_num_threads(threads);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
}

void openblas_sgemv(int64_t n, int64_t k, const float* w, const float* x, float* y, int threads) {
  openblas_set_num_threads(threads);
  cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0f, w, k, x, 1, 0.0f, y, 1);
}

void openblas_dense(int64_t m, int64_t n, int64_t k, const float* x, const float* w, const float* bias, float* y,
                    int threads) {
  openblas_set_num_threads(threads);
  for (int64_t i = 0; i < m; ++i) std::copy(bias, bias + n, y + i * n);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x, k, w, k, 1.0f, y, n);
}

Im2colConv::Im2colConv(int64_t c, int64_t h, int64_t w, int64_t k, int64_t r, int64_t s, int64_t stride, int64_t pad)
    : c_(c), h_(h), w_(w), k_(k), r_(r), s_(s), stride_(stride), pad_(pad) {
  oh_ = (h + 2 * pad - r) / stride + 1;
  ow_ = (w + 2 * pad - s) / stride + 1;
  columns_ = static_cast<float*>(std::aligned_alloc(64, ((c * r * s * oh_ * ow_ * 4 + 63) / 64) * 64));
}

Im2colConv::~Im2colConv() {
  std::free(columns_);
}

void Im2colConv::run(const float* in, const float* weights, float* out, int threads) {
  // columns[(c, r, s), (oh, ow)]
  for (int64_t ci = 0; ci < c_; ++ci)
    for (int64_t ri = 0; ri < r_; ++ri)
      for (int64_t si = 0; si < s_; ++si) {
        float* row = columns_ + ((ci * r_ + ri) * s_ + si) * oh_ * ow_;
        for (int64_t y = 0; y < oh_; ++y) {
          int64_t iy = y * stride_ + ri - pad_;
          for (int64_t x = 0; x < ow_; ++x) {
            int64_t ix = x * stride_ + si - pad_;
            row[y * ow_ + x] = (iy >= 0 && iy < h_ && ix >= 0 && ix < w_) ? in[(ci * h_ + iy) * w_ + ix] : 0.0f;
          }
        }
      }
  openblas_sgemm(k_, oh_ * ow_, c_ * r_ * s_, weights, columns_, out, threads);
}

#ifdef TESSERA_HAVE_DNNL
struct DnnlConv::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward conv;
  dnnl::memory user_src, user_wei, user_dst, src, wei, dst;
};

DnnlConv::DnnlConv(int64_t c, int64_t h, int64_t w, int64_t k, int64_t r, int64_t s, int64_t stride, int64_t pad,
                   int64_t groups)
    : impl_(new Impl) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const int64_t oh = (h + 2 * pad - r) / stride + 1, ow = (w + 2 * pad - s) / stride + 1;
  // Grouped weights are G x K/G x C/G x R x S (goihw), the same bytes as OIHW.
  const dnnl::memory::dims wei_dims =
      groups == 1 ? dnnl::memory::dims{k, c, r, s} : dnnl::memory::dims{groups, k / groups, c / groups, r, s};
  dnnl::memory::desc src_any({1, c, h, w}, dt::f32, tag::any), wei_any(wei_dims, dt::f32, tag::any),
      dst_any({1, k, oh, ow}, dt::f32, tag::any);
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_any,
                                       wei_any, dst_any, {stride, stride}, {pad, pad}, {pad, pad});
  impl_->pd = dnnl::convolution_forward::primitive_desc(desc, impl_->engine);
  impl_->conv = dnnl::convolution_forward(impl_->pd);
  impl_->user_src = dnnl::memory({{1, c, h, w}, dt::f32, tag::nchw}, impl_->engine);
  impl_->user_wei = dnnl::memory({wei_dims, dt::f32, groups == 1 ? tag::oihw : tag::goihw}, impl_->engine);
  impl_->user_dst = dnnl::memory({{1, k, oh, ow}, dt::f32, tag::nchw}, impl_->engine);
  impl_->src = dnnl::memory(impl_->pd.src_desc(), impl_->engine);
  impl_->wei = dnnl::memory(impl_->pd.weights_desc(), impl_->engine);
  impl_->dst = dnnl::memory(impl_->pd.dst_desc(), impl_->engine);
}

DnnlConv::~DnnlConv() {
  delete impl_;
}

void DnnlConv::prepare(const float* input, const float* weights) {
  std::memcpy(impl_->user_src.get_data_handle(), input, impl_->user_src.get_desc().get_size());
  std::memcpy(impl_->user_wei.get_data_handle(), weights, impl_->user_wei.get_desc().get_size());
  dnnl::reorder(impl_->user_src, impl_->src).execute(impl_->stream, impl_->user_src, impl_->src);
  dnnl::reorder(impl_->user_wei, impl_->wei).execute(impl_->stream, impl_->user_wei, impl_->wei);
  impl_->stream.wait();
}

void DnnlConv::run() {
  impl_->conv.execute(impl_->stream,
                      {{DNNL_ARG_SRC, impl_->src}, {DNNL_ARG_WEIGHTS, impl_->wei}, {DNNL_ARG_DST, impl_->dst}});
  impl_->stream.wait();
}

void DnnlConv::output(float* out) {
  dnnl::reorder(impl_->dst, impl_->user_dst).execute(impl_->stream, impl_->dst, impl_->user_dst);
  impl_->stream.wait();
  std::memcpy(out, impl_->user_dst.get_data_handle(), impl_->user_dst.get_desc().get_size());
}

struct DnnlMatmulU8S8::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul matmul;
  dnnl::memory src, user_wei, wei, dst;
};

DnnlMatmulU8S8::DnnlMatmulU8S8(int64_t m, int64_t n, int64_t k) : impl_(new Impl) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  dnnl::memory::desc src({m, k}, dt::u8, tag::ab), wei_any({k, n}, dt::s8, tag::any), dst({m, n}, dt::s32, tag::ab);
  impl_->pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei_any, dst), impl_->engine);
  impl_->matmul = dnnl::matmul(impl_->pd);
  impl_->src = dnnl::memory(src, impl_->engine);
  impl_->user_wei = dnnl::memory({{k, n}, dt::s8, tag::ab}, impl_->engine);
  impl_->wei = dnnl::memory(impl_->pd.weights_desc(), impl_->engine);
  impl_->dst = dnnl::memory(dst, impl_->engine);
}

DnnlMatmulU8S8::~DnnlMatmulU8S8() {
  delete impl_;
}

void DnnlMatmulU8S8::prepare(const uint8_t* a, const int8_t* b) {
  std::memcpy(impl_->src.get_data_handle(), a, impl_->src.get_desc().get_size());
  std::memcpy(impl_->user_wei.get_data_handle(), b, impl_->user_wei.get_desc().get_size());
  dnnl::reorder(impl_->user_wei, impl_->wei).execute(impl_->stream, impl_->user_wei, impl_->wei);
  impl_->stream.wait();
}

void DnnlMatmulU8S8::run() {
  impl_->matmul.execute(impl_->stream,
                        {{DNNL_ARG_SRC, impl_->src}, {DNNL_ARG_WEIGHTS, impl_->wei}, {DNNL_ARG_DST, impl_->dst}});
  impl_->stream.wait();
}

const int32_t* DnnlMatmulU8S8::output() const {
  return static_cast<const int32_t*>(impl_->dst.get_data_handle());
}

struct DnnlMatmulBf16::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul matmul;
  dnnl::memory src, user_wei, wei, dst;
};

DnnlMatmulBf16::DnnlMatmulBf16(int64_t m, int64_t n, int64_t k) : impl_(new Impl) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  dnnl::memory::desc src({m, k}, dt::bf16, tag::ab), wei_any({k, n}, dt::bf16, tag::any), dst({m, n}, dt::f32, tag::ab);
  impl_->pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei_any, dst), impl_->engine);
  impl_->matmul = dnnl::matmul(impl_->pd);
  impl_->src = dnnl::memory(src, impl_->engine);
  impl_->user_wei = dnnl::memory({{k, n}, dt::bf16, tag::ab}, impl_->engine);
  impl_->wei = dnnl::memory(impl_->pd.weights_desc(), impl_->engine);
  impl_->dst = dnnl::memory(dst, impl_->engine);
}

DnnlMatmulBf16::~DnnlMatmulBf16() {
  delete impl_;
}

void DnnlMatmulBf16::prepare(const uint16_t* a, const uint16_t* b) {
  std::memcpy(impl_->src.get_data_handle(), a, impl_->src.get_desc().get_size());
  std::memcpy(impl_->user_wei.get_data_handle(), b, impl_->user_wei.get_desc().get_size());
  dnnl::reorder(impl_->user_wei, impl_->wei).execute(impl_->stream, impl_->user_wei, impl_->wei);
  impl_->stream.wait();
}

void DnnlMatmulBf16::run() {
  impl_->matmul.execute(impl_->stream,
                        {{DNNL_ARG_SRC, impl_->src}, {DNNL_ARG_WEIGHTS, impl_->wei}, {DNNL_ARG_DST, impl_->dst}});
  impl_->stream.wait();
}

const float* DnnlMatmulBf16::output() const {
  return static_cast<const float*>(impl_->dst.get_data_handle());
}

void set_dnnl_threads(int threads) {
  omp_set_num_threads(threads);
}
#endif

namespace {
__attribute__((target("avx512f"))) double fma_loop(int64_t iterations) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  alignas(64) float lanes[16];
  float sink = 0;
  for (int i = 0; i < 12; ++i) {
    _mm512_store_ps(lanes, acc[i]);
    for (float v : lanes) sink += v;
  }
  return sink;
}
// 12 independent chains of vpdpbusd: each instruction is 64 u8 x s8
// multiply-adds into 16 int32 lanes. Written in assembly: GCC compiles the
// intrinsic's loop with two register copies a product (24 moves to 12
// vpdpbusd), which ran at half the instruction's rate and put the peak below
// what oneDNN reached.
__attribute__((target("avx512f,avx512vnni"))) int64_t vnni_loop(int64_t iterations) {
  __m512i c0 = _mm512_set1_epi32(0), c1 = _mm512_set1_epi32(1), c2 = _mm512_set1_epi32(2), c3 = _mm512_set1_epi32(3),
          c4 = _mm512_set1_epi32(4), c5 = _mm512_set1_epi32(5), c6 = _mm512_set1_epi32(6), c7 = _mm512_set1_epi32(7),
          c8 = _mm512_set1_epi32(8), c9 = _mm512_set1_epi32(9), c10 = _mm512_set1_epi32(10),
          c11 = _mm512_set1_epi32(11);
  const __m512i a = _mm512_set1_epi32(0x01020304), b = _mm512_set1_epi32(0x01fe01fe);
  for (int64_t it = 0; it < iterations; ++it)
    asm volatile(
        "vpdpbusd %[b], %[a], %[c0]\n\tvpdpbusd %[b], %[a], %[c1]\n\tvpdpbusd %[b], %[a], %[c2]\n\t"
        "vpdpbusd %[b], %[a], %[c3]\n\tvpdpbusd %[b], %[a], %[c4]\n\tvpdpbusd %[b], %[a], %[c5]\n\t"
        "vpdpbusd %[b], %[a], %[c6]\n\tvpdpbusd %[b], %[a], %[c7]\n\tvpdpbusd %[b], %[a], %[c8]\n\t"
        "vpdpbusd %[b], %[a], %[c9]\n\tvpdpbusd %[b], %[a], %[c10]\n\tvpdpbusd %[b], %[a], %[c11]"
        : [c0] "+v"(c0), [c1] "+v"(c1), [c2] "+v"(c2), [c3] "+v"(c3), [c4] "+v"(c4), [c5] "+v"(c5), [c6] "+v"(c6),
          [c7] "+v"(c7), [c8] "+v"(c8), [c9] "+v"(c9), [c10] "+v"(c10), [c11] "+v"(c11)
        : [a] "v"(a), [b] "v"(b));
  const __m512i sum =
      _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(c0, c1), _mm512_add_epi32(c2, c3)),
                                        _mm512_add_epi32(_mm512_add_epi32(c4, c5), _mm512_add_epi32(c6, c7))),
                       _mm512_add_epi32(_mm512_add_epi32(c8, c9), _mm512_add_epi32(c10, c11)));
  return _mm512_reduce_add_epi32(sum);
}

// 12 independent chains of vdpbf16ps: each instruction is 32 bfloat16
// multiply-adds into 16 float32 lanes. In assembly, for the reason the
// vpdpbusd loop is: the intrinsic's loop ran up to 30% below the
// instruction's rate (an array of accumulators GCC kept in memory).
__attribute__((target("avx512f,avx512bf16"))) float bf16_loop(int64_t iterations) {
  __m512 c0 = _mm512_set1_ps(0), c1 = _mm512_set1_ps(1), c2 = _mm512_set1_ps(2), c3 = _mm512_set1_ps(3),
         c4 = _mm512_set1_ps(4), c5 = _mm512_set1_ps(5), c6 = _mm512_set1_ps(6), c7 = _mm512_set1_ps(7),
         c8 = _mm512_set1_ps(8), c9 = _mm512_set1_ps(9), c10 = _mm512_set1_ps(10), c11 = _mm512_set1_ps(11);
  const __m512 a = _mm512_castsi512_ps(_mm512_set1_epi32(0x3f803f80));
  const __m512 b = _mm512_castsi512_ps(_mm512_set1_epi32(0x33d633d6));
  for (int64_t it = 0; it < iterations; ++it)
    asm volatile(
        "vdpbf16ps %[b], %[a], %[c0]\n\tvdpbf16ps %[b], %[a], %[c1]\n\tvdpbf16ps %[b], %[a], %[c2]\n\t"
        "vdpbf16ps %[b], %[a], %[c3]\n\tvdpbf16ps %[b], %[a], %[c4]\n\tvdpbf16ps %[b], %[a], %[c5]\n\t"
        "vdpbf16ps %[b], %[a], %[c6]\n\tvdpbf16ps %[b], %[a], %[c7]\n\tvdpbf16ps %[b], %[a], %[c8]\n\t"
        "vdpbf16ps %[b], %[a], %[c9]\n\tvdpbf16ps %[b], %[a], %[c10]\n\tvdpbf16ps %[b], %[a], %[c11]"
        : [c0] "+v"(c0), [c1] "+v"(c1), [c2] "+v"(c2), [c3] "+v"(c3), [c4] "+v"(c4), [c5] "+v"(c5), [c6] "+v"(c6),
          [c7] "+v"(c7), [c8] "+v"(c8), [c9] "+v"(c9), [c10] "+v"(c10), [c11] "+v"(c11)
        : [a] "v"(a), [b] "v"(b));
  const __m512 sum = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)),
                                                 _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7))),
                                   _mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11)));
  return _mm512_reduce_add_ps(sum);
}

// Whether CPUID reports AMX-TILE (leaf 7, EDX bit 24) and the unit of EDX
// bit `unit_bit` (25: AMX-INT8, 22: AMX-BF16).
bool cpu_has_amx(int unit_bit) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (edx >> 24 & 1) && (edx >> unit_bit & 1);
}

// Palette 1; tiles 0-7 of 16 rows x 64 bytes. A constant in memory: GCC 12
// drops the stores of a local configuration that only ldtilecfg reads.
alignas(64) constexpr uint8_t kAmxConfig[64] = {
    1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 64, 0,  64, 0,  64, 0,  64, 0,  64, 0, 64, 0, 64, 0, 64, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16, 16, 16, 16, 16, 16, 16, 16, 0,  0, 0,  0, 0,  0, 0,  0};

// Six independent chains of tile products (tiles 0-5 of C, A in 6, B in 7):
// TDPBUSD, 16 x 16 x 64 int8 multiply-adds each, or TDPBF16PS, 16 x 16 x 32
// bfloat16 ones. The tiles' contents do not matter.
template <bool kBf16>
__attribute__((target("amx-tile,amx-int8,amx-bf16"))) void amx_loop(int64_t iterations) {
  _tile_loadconfig(kAmxConfig);
  _tile_zero(6);
  _tile_zero(7);
  for (int64_t it = 0; it < iterations; ++it) {
    if constexpr (kBf16) {
      _tile_dpbf16ps(0, 6, 7);
      _tile_dpbf16ps(1, 6, 7);
      _tile_dpbf16ps(2, 6, 7);
      _tile_dpbf16ps(3, 6, 7);
      _tile_dpbf16ps(4, 6, 7);
      _tile_dpbf16ps(5, 6, 7);
    } else {
      _tile_dpbusd(0, 6, 7);
      _tile_dpbusd(1, 6, 7);
      _tile_dpbusd(2, 6, 7);
      _tile_dpbusd(3, 6, 7);
      _tile_dpbusd(4, 6, 7);
      _tile_dpbusd(5, 6, 7);
    }
  }
  _tile_release();
}

// `threads` threads running `body` at once, the median time of three runs.
double median_parallel_seconds(int threads, const std::function<void()>& body) {
  return median_seconds(
      [&] {
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t) pool.emplace_back(body);
        for (auto& th : pool) th.join();
      },
      3, 0);
}

// The tile-product peak: six products of 16 x 16 x `depth` multiply-adds an
// iteration of amx_loop<kBf16>; 0 without the unit or the registers.
template <bool kBf16>
double measure_amx_peak(int threads, int unit_bit, int depth) {
  if (!cpu_has_amx(unit_bit) || !runtime::request_tile_registers().is_ok()) return 0;
  const int64_t iterations = 2'000'000;
  const double seconds = median_parallel_seconds(threads, [&] { amx_loop<kBf16>(iterations); });
  return threads * iterations * 6.0 * 16 * 16 * depth * 2 / seconds / 1e9;
}
}  // namespace

double measure_vnni_peak_gops(int threads) {
  if (!__builtin_cpu_supports("avx512vnni")) return 0;
  const int64_t iterations = 20'000'000;
  const double seconds = median_parallel_seconds(threads, [&] {
    volatile int64_t s = vnni_loop(iterations);
    (void)s;
  });
  return threads * iterations * 12.0 * 64 * 2 / seconds / 1e9;
}

double measure_amx_int8_peak_gops(int threads) {
  return measure_amx_peak<false>(threads, 25, 64);
}

double measure_int8_peak_gops(int threads) {
  const double amx = measure_amx_int8_peak_gops(threads);
  return amx > 0 ? amx : measure_vnni_peak_gops(threads);
}

double measure_amx_bf16_peak_gflops(int threads) {
  return measure_amx_peak<true>(threads, 22, 32);
}

double measure_bf16_peak_gflops(int threads) {
  if (const double amx = measure_amx_bf16_peak_gflops(threads); amx > 0) return amx;
  if (!__builtin_cpu_supports("avx512bf16")) return 0;
  const int64_t iterations = 20'000'000;
  const double seconds = median_parallel_seconds(threads, [&] {
    volatile float s = bf16_loop(iterations);
    (void)s;
  });
  return threads * iterations * 12.0 * 32 * 2 / seconds / 1e9;
}

double measure_fma_peak_gflops(int threads) {
  if (!__builtin_cpu_supports("avx512f")) return 0;
  const int64_t iterations = 20'000'000;
  const double seconds = median_parallel_seconds(threads, [&] {
    volatile double s = fma_loop(iterations);
    (void)s;
  });
  return threads * iterations * 12.0 * 16 * 2 / seconds / 1e9;
}

}  // namespace tessera::bench
