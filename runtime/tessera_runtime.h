/* tessera_runtime.h: the C interface for running a compiled model (a .tsr
 * package) from C, Rust, Go or anything else that calls C.
 *
 *   TesseraModel* m = NULL;
 *   if (tessera_model_load("model.tsr", 0, &m) != TESSERA_OK) {
 *     fprintf(stderr, "%s\n", tessera_last_error());
 *     return 1;
 *   }
 *   tessera_model_set_input(m, "x", x, sizeof x);   // size checked
 *   tessera_model_run(m);
 *   tessera_model_copy_output(m, "y", y, sizeof y);  // or tessera_model_get_output
 *   tessera_model_free(m);
 *
 * A C99 header: opaque handles, plain types, and every call that can fail
 * returns a TesseraStatus. On failure, tessera_last_error() gives Tessera's
 * message (the same text `tessera run` prints). Link with -ltessera_runtime
 * (pkg-config tessera-runtime). A model is not thread-safe: one call at a
 * time per model; different models may be used from different threads. */
#ifndef TESSERA_RUNTIME_TESSERA_RUNTIME_H_
#define TESSERA_RUNTIME_TESSERA_RUNTIME_H_

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define TESSERA_C_API __attribute__((visibility("default")))
#else
#define TESSERA_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** What a call returned. Values are stable; new codes may be added. */
typedef enum TesseraStatus {
  TESSERA_OK = 0,
  TESSERA_ERROR_INVALID_ARGUMENT = 1, /**< a null pointer, a wrong size, an input never set,
                                          a package built for another architecture */
  TESSERA_ERROR_NOT_FOUND = 2,        /**< no such file, input or output */
  TESSERA_ERROR_PARSE = 3,            /**< not a package, or a corrupt one */
  TESSERA_ERROR_IO = 4,               /**< the operating system said no (memory, dlopen) */
  TESSERA_ERROR_RUNTIME = 5,          /**< a kernel failed during a run */
  TESSERA_ERROR_INTERNAL = 6          /**< anything else */
} TesseraStatus;

/** A loaded model (opaque): its kernels, parameters and buffers. */
typedef struct TesseraModel TesseraModel;

/** Name, element type and shape of an input or output. The pointers stay
 *  valid until the model is freed. */
typedef struct TesseraTensorInfo {
  const char* name;      /**< the graph's name for it */
  const char* dtype;     /**< "float32", "int64", "uint8", "bool", ... */
  int32_t element_bytes; /**< bytes of one element */
  int32_t ndim;          /**< number of dimensions (0 for a scalar) */
  const int64_t* shape;  /**< ndim extents, outermost first, dense C order */
  size_t nbytes;         /**< bytes of the whole tensor */
} TesseraTensorInfo;

/** The message of the last failed call on this thread ("" if none). Valid
 *  until the next call on this thread. */
TESSERA_C_API const char* tessera_last_error(void);

/** A short name of `status`: "ok", "not found", ... */
TESSERA_C_API const char* tessera_status_name(TesseraStatus status);

/** Loads the package at `path` and prepares it to run with `num_threads`
 *  threads (the caller included; 0: one per CPU). On success *out is a model
 *  to free with tessera_model_free; on failure *out is NULL. */
TESSERA_C_API TesseraStatus tessera_model_load(const char* path, int32_t num_threads, TesseraModel** out);

/** Frees a model and everything it owns; NULL is a no-op. */
TESSERA_C_API void tessera_model_free(TesseraModel* model);

/** Number of graph inputs (outputs). */
TESSERA_C_API TesseraStatus tessera_model_num_inputs(const TesseraModel* model, int32_t* out);
TESSERA_C_API TesseraStatus tessera_model_num_outputs(const TesseraModel* model, int32_t* out);

/** Name, dtype and shape of input (output) `index`, in the package's order. */
TESSERA_C_API TesseraStatus tessera_model_input_info(const TesseraModel* model, int32_t index, TesseraTensorInfo* out);
TESSERA_C_API TesseraStatus tessera_model_output_info(const TesseraModel* model, int32_t index, TesseraTensorInfo* out);

/** Copies `nbytes` bytes from `data` into the input `name`; nbytes must be
 *  exactly the input's size (TesseraTensorInfo.nbytes). */
TESSERA_C_API TesseraStatus tessera_model_set_input(TesseraModel* model, const char* name, const void* data,
                                                    size_t nbytes);

/** Runs the model once; every input must have been set. */
TESSERA_C_API TesseraStatus tessera_model_run(TesseraModel* model);

/** Carries a state from run to run (a streaming model's): the output
 *  `output` of each run is the input `input` of the next, without a copy
 *  (their buffers trade places as the next run starts). Set the input once
 *  before the first run; tessera_model_set_input replaces the state. The
 *  two must have the same dtype and shape. */
TESSERA_C_API TesseraStatus tessera_model_carry(TesseraModel* model, const char* output, const char* input);

/** The output `name` of the last run: *data points to its bytes (valid until
 *  the next run or free), and `info` (may be NULL) gets its shape. */
TESSERA_C_API TesseraStatus tessera_model_get_output(TesseraModel* model, const char* name, const void** data,
                                                     TesseraTensorInfo* info);

/** Copies the output `name` of the last run into `buffer`, whose size
 *  `nbytes` must be exactly the output's size. */
TESSERA_C_API TesseraStatus tessera_model_copy_output(TesseraModel* model, const char* name, void* buffer,
                                                      size_t nbytes);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_RUNTIME_TESSERA_RUNTIME_H_ */
