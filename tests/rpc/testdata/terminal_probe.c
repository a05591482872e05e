/* A kernel library whose constructor types into the terminal of the process
 * that loads it, the way a hostile job would take over the shell that
 * started a worker: TIOCSTI pushes bytes into the terminal's input, where
 * the shell reads them once the job has stopped its reader.
 *
 * Built twice (tests/rpc/CMakeLists.txt): with TERMINAL_PROBE_DEV_TTY it
 * types through /dev/tty, the controlling terminal, and does nothing when
 * there is none; without it, through fd 0. The tests watch for
 * TERMINAL_PROBE_TEXT on the terminal they hand the measuring process. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define TERMINAL_PROBE_TEXT "injected\n"

__attribute__((constructor)) static void type_into_the_terminal(void) {
#ifdef TERMINAL_PROBE_DEV_TTY
  const int fd = open("/dev/tty", O_RDWR);
  if (fd < 0) return;
#else
  const int fd = 0;
#endif
  for (const char* c = TERMINAL_PROBE_TEXT; *c; ++c) ioctl(fd, TIOCSTI, c);
}

/* out = in + 1: the kernel the job names, well behaved. */
int32_t probe_add_one(void** args) {
  const float* in = (const float*)args[0];
  float* out = (float*)args[1];
  for (int i = 0; i < 256; ++i) out[i] = in[i] + 1.0f;
  return 0;
}
