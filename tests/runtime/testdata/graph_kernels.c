/* The kernels of a tiny model for the graph executor's end-to-end test, with
 * the Tessera ABI (runtime/c_abi.h) and static shapes, as generated ones are:
 *   h1 = x[4,8] @ w1[8,16];  h2 = h1 + b1[16];  h3 = relu(h2);  y = h3 @ w2[16,4]. */
#include <stdint.h>

#include "runtime/c_abi.h"

/* C[M,N] = A[M,K] @ B[K,N]. */
static void matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int p = 0; p < k; ++p) acc += a[i * k + p] * b[p * n + j];
      c[i * n + j] = acc;
    }
  }
}

int32_t matmul_4x8x16(void** args) {
  matmul((const float*)args[0], (const float*)args[1], (float*)args[2], 4, 16, 8);
  return 0;
}

int32_t matmul_4x16x4(void** args) {
  matmul((const float*)args[0], (const float*)args[1], (float*)args[2], 4, 4, 16);
  return 0;
}

/* out[4,16] = in[4,16] + bias[16], broadcast over rows. */
int32_t add_bias_4x16(void** args) {
  const float* in = (const float*)args[0];
  const float* bias = (const float*)args[1];
  float* out = (float*)args[2];
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 16; ++j) out[i * 16 + j] = in[i * 16 + j] + bias[j];
  }
  return 0;
}

struct ReluClosure {
  const float* in;
  float* out;
};

static int32_t relu_task(int32_t task, int32_t num_tasks, void* closure) {
  const struct ReluClosure* c = (const struct ReluClosure*)closure;
  const int begin = 64 * task / num_tasks, end = 64 * (task + 1) / num_tasks;
  for (int i = begin; i < end; ++i) c->out[i] = c->in[i] > 0.0f ? c->in[i] : 0.0f;
  return 0;
}

/* out[64] = max(in[64], 0), its loop split over the thread pool. */
int32_t relu_64_parallel(void** args) {
  struct ReluClosure closure = {(const float*)args[0], (float*)args[1]};
  return tessera_parallel_launch(relu_task, &closure, 0);
}

/* A kernel that fails, as one does on a bad argument. */
int32_t graph_fail_with_5(void** args) {
  (void)args;
  return 5;
}

/* The kernels of the control-step tests: a loop's counter and test, and a
 * body that doubles or negates four floats. */
int32_t double_4(void** args) {
  const float* in = (const float*)args[0];
  float* out = (float*)args[1];
  for (int i = 0; i < 4; ++i) out[i] = 2.0f * in[i];
  return 0;
}

int32_t negate_4(void** args) {
  const float* in = (const float*)args[0];
  float* out = (float*)args[1];
  for (int i = 0; i < 4; ++i) out[i] = -in[i];
  return 0;
}

/* out = in + 1, int64 scalars. */
int32_t add_one_i64(void** args) {
  *(int64_t*)args[1] = *(const int64_t*)args[0] + 1;
  return 0;
}

/* out = a < b, int64 scalars to a bool byte. */
int32_t less_i64(void** args) {
  *(uint8_t*)args[2] = *(const int64_t*)args[0] < *(const int64_t*)args[1];
  return 0;
}

/* Each kernel's arguments, as a generated library exports them
 * (TESSERA_KERNEL_ARGS_SUFFIX): the count, then each one's bytes. */
const int64_t matmul_4x8x16__tessera_args[] = {3, 4 * 8 * 4, 8 * 16 * 4, 4 * 16 * 4};
const int64_t matmul_4x16x4__tessera_args[] = {3, 4 * 16 * 4, 16 * 4 * 4, 4 * 4 * 4};
const int64_t add_bias_4x16__tessera_args[] = {3, 4 * 16 * 4, 16 * 4, 4 * 16 * 4};
const int64_t relu_64_parallel__tessera_args[] = {2, 64 * 4, 64 * 4};
