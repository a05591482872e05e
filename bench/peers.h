// Peers measured in the same run as Tessera's kernels, and the timing helper
// every benchmark uses: the median of repeated runs, never a single time.
#pragma once

#include <cstdint>
#include <functional>

namespace tessera::bench {

/// Median seconds of `repeats` timed runs of `fn`, after one warm-up; each
/// run repeats `fn` until at least `min_ms` have passed and reports the mean.
double median_seconds(const std::function<void()>& fn, int repeats = 7, double min_ms = 50);

/// Waits 0.25 s, until a peer's idle threads have stopped spinning.
/// OpenBLAS's spin for 2^28 cycles (~0.1 s) after a call, OpenMP's (oneDNN)
/// for its spin count: a kernel timed right after a peer shares the cores
/// with them (dense 1x1000x2048 measured 0.47 of cblas_sgemv so, 1.05 with
/// OpenBLAS's spin cut to 16 cycles). Call it before each timing of a pair
/// that alternates.
void let_peer_threads_idle();

/// OpenBLAS's single-precision GEMM C = A B (row-major, no transposes) with
/// `threads` threads.
void openblas_sgemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c, int threads);

/// OpenBLAS sgemv y = W x (W row-major N x K).
void openblas_sgemv(int64_t n, int64_t k, const float* w, const float* x, float* y, int threads);

/// Y = X W^T + bias (X: m x k, W: n x k, bias: n): a dense layer, the bias
/// copied into Y first and sgemm accumulating onto it.
void openblas_dense(int64_t m, int64_t n, int64_t k, const float* x, const float* w, const float* bias, float* y,
                    int threads);

/// Conv2d NCHW through im2col + OpenBLAS sgemm (the classic baseline).
/// Input C x H x W, weights K x C x R x S, output K x OH x OW; batch 1.
class Im2colConv {
 public:
  Im2colConv(int64_t c, int64_t h, int64_t w, int64_t k, int64_t r, int64_t s, int64_t stride, int64_t pad);
  ~Im2colConv();
  void run(const float* input, const float* weights, float* output, int threads);
  int64_t out_h() const { return oh_; }
  int64_t out_w() const { return ow_; }

 private:
  int64_t c_, h_, w_, k_, r_, s_, stride_, pad_, oh_, ow_;
  float* columns_;
};

/// oneDNN's convolution (NCHW in and out, its own blocked formats inside,
/// reorders done once at construction and not timed). Batch 1. With
/// `groups` > 1 a grouped conv (groups = c = k: depthwise), weights
/// K x C/groups x R x S as ONNX gives them.
class DnnlConv {
 public:
  DnnlConv(int64_t c, int64_t h, int64_t w, int64_t k, int64_t r, int64_t s, int64_t stride, int64_t pad,
           int64_t groups = 1);
  ~DnnlConv();
  /// Reorders `input` and `weights` into oneDNN's formats (untimed).
  void prepare(const float* input, const float* weights);
  /// The convolution alone.
  void run();
  /// The output in NCHW.
  void output(float* out);

 private:
  struct Impl;
  Impl* impl_;
};

/// oneDNN's int8 matrix product C = A B, A: M x K uint8, B: K x N int8 (both
/// row-major), C: M x N int32; B reordered once into the layout oneDNN picks
/// (untimed), as a model's weights are.
class DnnlMatmulU8S8 {
 public:
  DnnlMatmulU8S8(int64_t m, int64_t n, int64_t k);
  ~DnnlMatmulU8S8();
  /// Copies `a` in and reorders `b` into oneDNN's format (untimed).
  void prepare(const uint8_t* a, const int8_t* b);
  /// The product alone.
  void run();
  /// C, row-major.
  const int32_t* output() const;

 private:
  struct Impl;
  Impl* impl_;
};

/// oneDNN's bfloat16 matrix product C = A B, A: M x K and B: K x N bfloat16
/// (both row-major, bit patterns), C: M x N float32; B reordered once into
/// the layout oneDNN picks (untimed), as a model's weights are.
class DnnlMatmulBf16 {
 public:
  DnnlMatmulBf16(int64_t m, int64_t n, int64_t k);
  ~DnnlMatmulBf16();
  /// Copies `a` in and reorders `b` into oneDNN's format (untimed).
  void prepare(const uint16_t* a, const uint16_t* b);
  /// The product alone.
  void run();
  /// C, row-major.
  const float* output() const;

 private:
  struct Impl;
  Impl* impl_;
};

/// Sets the thread count of oneDNN's OpenMP runtime.
void set_dnnl_threads(int threads);

/// FMA peak of this machine in GFLOP/s with `threads` threads, measured by a
/// register-resident FMA loop (for "% of peak" figures).
double measure_fma_peak_gflops(int threads);

/// The u8 x s8 dot-product peak in GOP/s (a multiply-add counts 2) with
/// `threads` threads, measured by a register-resident vpdpbusd loop on
/// 512-bit registers; 0 where the CPU has no AVX512-VNNI.
double measure_vnni_peak_gops(int threads);

/// The u8 x s8 tile-product peak of x86's AMX in GOP/s with `threads`
/// threads, measured by a loop of TDPBUSD on six tiles of C held in the tile
/// registers; 0 where the CPU has no AMX-INT8 or the process may not use it.
double measure_amx_int8_peak_gops(int threads);

/// The integer dot-product peak a u8 x s8 product can reach here: AMX's
/// where the CPU has it, else VNNI's.
double measure_int8_peak_gops(int threads);

/// The bfloat16 tile-product peak of x86's AMX in GFLOP/s, as
/// measure_amx_int8_peak_gops with TDPBF16PS; 0 without AMX-BF16.
double measure_amx_bf16_peak_gflops(int threads);

/// The bfloat16 dot-product peak in GFLOP/s (a multiply-add counts 2) with
/// `threads` threads: AMX's where the CPU has AMX-BF16, else a
/// register-resident vdpbf16ps loop's on 512-bit registers; 0 where the CPU
/// has neither.
double measure_bf16_peak_gflops(int threads);

}  // namespace tessera::bench
