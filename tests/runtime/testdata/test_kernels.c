/* Tiny kernels with the Tessera ABI (runtime/c_abi.h), built into a real
 * shared library at test time. Like generated code, they leave the runtime's
 * symbols undefined: those resolve from the test process at dlopen time. */
#include <stdint.h>

#include "runtime/c_abi.h"

#define TEST_N 1024

/* C = A + B over TEST_N floats. */
int32_t vector_add(void** args) {
  const float* a = (const float*)args[0];
  const float* b = (const float*)args[1];
  float* c = (float*)args[2];
  for (int i = 0; i < TEST_N; ++i) c[i] = a[i] + b[i];
  return 0;
}

struct AddClosure {
  void** args;
};

static int32_t add_task(int32_t task, int32_t num_tasks, void* closure) {
  void** args = ((struct AddClosure*)closure)->args;
  const float* a = (const float*)args[0];
  const float* b = (const float*)args[1];
  float* c = (float*)args[2];
  const int begin = TEST_N * task / num_tasks, end = TEST_N * (task + 1) / num_tasks;
  for (int i = begin; i < end; ++i) c[i] = a[i] + b[i];
  return 0;
}

/* vector_add with its loop split over the thread pool, as a parallel loop is. */
int32_t vector_add_parallel(void** args) {
  struct AddClosure closure = {args};
  return tessera_parallel_launch(add_task, &closure, 0);
}

static int32_t record_task(int32_t task, int32_t num_tasks, void* closure) {
  ((int32_t*)closure)[task] = num_tasks;
  return 0;
}

/* out[t] = n for every task t of a launch with the pool's task count. */
int32_t record_num_tasks(void** args) {
  return tessera_parallel_launch(record_task, args[0], 0);
}

/* C = 2 * A through a scratch buffer from the runtime's workspace. */
int32_t double_via_workspace(void** args) {
  float* scratch = (float*)tessera_workspace_alloc(TEST_N * sizeof(float));
  if (scratch == 0) return 3;
  if (((uintptr_t)scratch & 63u) != 0) {
    tessera_workspace_free(scratch);
    return 4;
  }
  const float* a = (const float*)args[0];
  float* c = (float*)args[1];
  for (int i = 0; i < TEST_N; ++i) scratch[i] = a[i] + a[i];
  for (int i = 0; i < TEST_N; ++i) c[i] = scratch[i];
  tessera_workspace_free(scratch);
  return 0;
}

/* A kernel that fails, as one does on a bad argument. */
int32_t fail_with_7(void** args) {
  (void)args;
  return 7;
}
