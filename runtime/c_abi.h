/* The kernel ABI: the contract between the LLVM code generator and the runtime.
 *
 * A plain C header so that generated code, C test kernels and the runtime all
 * read the same declarations. The functions below are defined in
 * libtessera_runtime.so with default visibility; a kernel library leaves them
 * undefined and they resolve at dlopen time from the process, whose executable
 * links libtessera_runtime.so. */
#ifndef TESSERA_RUNTIME_C_ABI_H_
#define TESSERA_RUNTIME_C_ABI_H_

#include <stdint.h>

#if defined(__GNUC__)
#define TESSERA_RUNTIME_EXPORT __attribute__((visibility("default")))
#else
#define TESSERA_RUNTIME_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** A built kernel: int32_t <symbol>(void** args); args[i] is the data pointer of
 *  the i-th buffer, in the kernel's parameter order. Returns 0 on success.
 *  Shapes are static (compiled in). */
typedef int32_t (*TesseraKernelFn)(void** args);

/** What a kernel reads and writes, for the loader to check a package's calls
 *  against: a kernel library exports, beside each kernel `S`, the array
 *  `const int64_t S__tessera_args[]` = {the number of arguments, then each
 *  argument's bytes}. A call with another number of arguments, or a buffer
 *  smaller than its argument, is refused at load. (A kernel without the
 *  array is not checked.) */
#define TESSERA_KERNEL_ARGS_SUFFIX "__tessera_args"

/** A module whose kernels run products on x86's AMX tiles exports an int32
 *  of this name. Linux lets a process use the tile registers only after it
 *  asks (arch_prctl ARCH_REQ_XCOMP_PERM): the loader asks before it hands out
 *  such a module's kernels, and refuses the module when the kernel says no. */
#define TESSERA_TILE_MODULE_SYMBOL "tessera_module_uses_tiles"

/** The body of a parallel loop: runs the share of iterations of task `task_id`
 *  out of `num_tasks`. Returns 0 on success. */
typedef int32_t (*TesseraParallelBody)(int32_t task_id, int32_t num_tasks, void* closure);

/** Runs body(t, n, closure) for t in [0, n) on the thread pool installed for the
 *  calling thread (tessera::runtime::ParallelScope) and waits for all of them;
 *  n = num_tasks if > 0, else the pool's thread count. With no pool installed,
 *  or when called from inside a task (a nested launch), the tasks run serially
 *  in the caller (and n = 1 when num_tasks <= 0). Every task runs even when
 *  one fails. Returns the non-zero status of the lowest-numbered failing task,
 *  else 0. Called from generated code. */
TESSERA_RUNTIME_EXPORT int32_t tessera_parallel_launch(TesseraParallelBody body, void* closure, int32_t num_tasks);

/** Scratch memory for large intermediate buffers of a kernel, 64-byte aligned.
 *  Returns NULL when nbytes < 0 or memory is exhausted; nbytes == 0 gives a
 *  valid, freeable pointer. Generated code pairs every alloc with a free. */
TESSERA_RUNTIME_EXPORT void* tessera_workspace_alloc(int64_t nbytes);

/** Releases memory from tessera_workspace_alloc; NULL is a no-op. */
TESSERA_RUNTIME_EXPORT void tessera_workspace_free(void* ptr);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_RUNTIME_C_ABI_H_ */
