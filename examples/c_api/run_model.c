/* run_model: runs a compiled Tessera model (.tsr) through the C API alone.
 *
 *   run_model MODEL.tsr OUTDIR [NAME=FILE ...] [--threads N]
 *
 * Each input is read from a raw file (its bytes in C order, exactly the
 * input's size); each output is written raw to OUTDIR/NAME.bin. Build it with
 *   cc run_model.c $(pkg-config --cflags --libs tessera-runtime) -o run_model */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tessera_runtime.h>

static int fail(const char* what) {
  fprintf(stderr, "run_model: %s: %s\n", what, tessera_last_error());
  return 1;
}

/* Reads the whole file at `path` into a malloc'ed buffer. */
static void* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void* data = malloc(n > 0 ? (size_t)n : 1);
  if (data && n > 0 && fread(data, 1, (size_t)n, f) != (size_t)n) {
    free(data);
    data = NULL;
  }
  fclose(f);
  *size = n > 0 ? (size_t)n : 0;
  return data;
}

/* Sets the input given as NAME=FILE. */
static int set_input(TesseraModel* model, const char* spec) {
  char name[256];
  const char* eq = strchr(spec, '=');
  if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof name) {
    fprintf(stderr, "run_model: '%s': expected NAME=FILE\n", spec);
    return 1;
  }
  memcpy(name, spec, (size_t)(eq - spec));
  name[eq - spec] = '\0';
  size_t size = 0;
  void* data = read_file(eq + 1, &size);
  if (!data) {
    fprintf(stderr, "run_model: cannot read %s\n", eq + 1);
    return 1;
  }
  TesseraStatus st = tessera_model_set_input(model, name, data, size);
  free(data);
  return st == TESSERA_OK ? 0 : fail("set_input");
}

/* Writes every output to OUTDIR/NAME.bin and prints its shape. */
static int write_outputs(TesseraModel* model, const char* dir) {
  int32_t n = 0;
  if (tessera_model_num_outputs(model, &n) != TESSERA_OK) return fail("num_outputs");
  for (int32_t i = 0; i < n; ++i) {
    TesseraTensorInfo info;
    if (tessera_model_output_info(model, i, &info) != TESSERA_OK) return fail("output_info");
    const void* data = NULL;
    if (tessera_model_get_output(model, info.name, &data, &info) != TESSERA_OK) return fail("get_output");
    printf("%s: %s[", info.name, info.dtype);
    for (int32_t d = 0; d < info.ndim; ++d) printf(d ? ", %lld" : "%lld", (long long)info.shape[d]);
    printf("]\n");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.bin", dir, info.name);
    FILE* f = fopen(path, "wb");
    if (!f || fwrite(data, 1, info.nbytes, f) != info.nbytes) {
      fprintf(stderr, "run_model: cannot write %s\n", path);
      if (f) fclose(f);
      return 1;
    }
    fclose(f);
  }
  return 0;
}

int main(int argc, char** argv) {
  const char* positional[2] = {NULL, NULL};
  int n_positional = 0, threads = 0, first_input = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
    else if (n_positional < 2) positional[n_positional++] = argv[i];
    else if (!first_input) first_input = i;
  }
  if (n_positional < 2) {
    fprintf(stderr, "usage: run_model MODEL.tsr OUTDIR [NAME=FILE ...] [--threads N]\n");
    return 2;
  }
  TesseraModel* model = NULL;
  if (tessera_model_load(positional[0], threads, &model) != TESSERA_OK) return fail("load");
  int rc = 0;
  for (int i = first_input; i > 0 && i < argc && rc == 0; ++i) {
    if (strcmp(argv[i], "--threads") == 0) ++i;
    else rc = set_input(model, argv[i]);
  }
  if (rc == 0 && tessera_model_run(model) != TESSERA_OK) rc = fail("run");
  if (rc == 0) rc = write_outputs(model, positional[1]);
  tessera_model_free(model);
  return rc;
}
