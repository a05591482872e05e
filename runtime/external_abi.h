/* The ABI between the runtime and an external backend's runtime module (bring
 * your own codegen, graph-payload kind): a shared library such as
 * libtessera_dnnl.so that runs the regions a package carries as payloads.
 *
 * The runtime dlopens the module when a package that needs it loads, checks
 * tessera_external_abi_version(), creates one region per payload (the module
 * builds its primitives then, and may copy or reorder the weights, whose
 * bytes are in place when create is called) and calls run for each call of
 * the region. The args are those of the kernel ABI (c_abi.h): the region's
 * inputs then its outputs, the same pointers at create and at every run.
 * A payload is data the module must not trust: create gets the number of
 * buffers and each one's size, and refuses a payload that does not fit
 * them (version 2; version 1 passed the pointers alone). */
#ifndef TESSERA_RUNTIME_EXTERNAL_ABI_H_
#define TESSERA_RUNTIME_EXTERNAL_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The version of this ABI; a module reporting another one is refused. */
#define TESSERA_EXTERNAL_ABI_VERSION 2

/** A region the module built. */
typedef struct TesseraExternalRegion TesseraExternalRegion;

/** tessera_external_abi_version: the TESSERA_EXTERNAL_ABI_VERSION the module was built with. */
typedef int32_t (*TesseraExternalAbiVersionFn)(void);

/** tessera_external_create: builds the region serialised in payload[0, size)
 *  (format `version`) over the `num_args` buffers `args`, args[i] being
 *  arg_bytes[i] bytes long. On failure (a payload that is malformed, of
 *  another version, or does not fit the buffers) returns NULL and writes a
 *  NUL-terminated reason into error[0, error_size). */
typedef TesseraExternalRegion* (*TesseraExternalCreateFn)(const char* payload, int64_t size, const char* version,
                                                          void** args, const int64_t* arg_bytes, int64_t num_args,
                                                          char* error, int64_t error_size);

/** tessera_external_run: runs the region once; 0 on success. */
typedef int32_t (*TesseraExternalRunFn)(TesseraExternalRegion* region, void** args);

/** tessera_external_destroy: releases the region; NULL is a no-op. */
typedef void (*TesseraExternalDestroyFn)(TesseraExternalRegion* region);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_RUNTIME_EXTERNAL_ABI_H_ */
