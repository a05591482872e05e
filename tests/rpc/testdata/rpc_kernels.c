/* Kernels with the Tessera ABI that misbehave on purpose, for the rpc tests
 * and benchmarks. Every kernel takes float32[256] buffers. */
#include <stdint.h>
#include <time.h>

#define N 256

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* out = in + 1: the reference every test compares with. */
int32_t add_one(void** args) {
  const float* in = (const float*)args[0];
  float* out = (float*)args[1];
  for (int i = 0; i < N; ++i) out[i] = in[i] + 1.0f;
  return 0;
}

/* out = in + 2: a wrong answer against add_one's reference. */
int32_t add_two(void** args) {
  const float* in = (const float*)args[0];
  float* out = (float*)args[1];
  for (int i = 0; i < N; ++i) out[i] = in[i] + 2.0f;
  return 0;
}

int32_t trivial(void** args) { return 0; }

int32_t fail_status(void** args) { return 7; }

int32_t segfault(void** args) {
  volatile uintptr_t address = 8; /* unmapped: SIGSEGV */
  volatile int* p = (volatile int*)address;
  *p = 1;
  return 0;
}

int32_t loop_forever(void** args) {
  volatile uint64_t x = 0;
  for (;;) ++x;
  return 0;
}

int32_t sleep_10ms(void** args) { sleep_ms(10); return 0; }
int32_t sleep_50ms(void** args) { sleep_ms(50); return 0; }
int32_t sleep_200ms(void** args) { sleep_ms(200); return 0; }
