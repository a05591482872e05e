/* Kernels with the Tessera ABI that try to reach outside their job, for the
 * sandbox tests (tests/rpc/sandbox_test.cc). Each returns 0 if what it tried
 * worked, so a sandbox that lets it through reports OK and the test fails.
 * The paths and the port are the tests' to watch. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROBE_PORT 47311
#define FORKED_MARKER "/tmp/tessera-sandbox-probe-forked"
#define WRITTEN_MARKER "/tmp/tessera-sandbox-probe-written"

int32_t probe_read_passwd(void** args) {
  char buf[64];
  const int fd = open("/etc/passwd", O_RDONLY);
  if (fd < 0) return 3;
  const ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  return n > 0 ? 0 : 4;
}

int32_t probe_write_file(void** args) {
  const int fd = open(WRITTEN_MARKER, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (fd < 0) return 3;
  const ssize_t n = write(fd, "x", 1);
  close(fd);
  return n == 1 ? 0 : 4;
}

int32_t probe_open_socket(void** args) {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) return 3;
  struct sockaddr_in addr = {0};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(PROBE_PORT);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int rc = connect(s, (struct sockaddr*)&addr, sizeof addr);
  close(s);
  return rc == 0 ? 0 : 4;
}

int32_t probe_fork(void** args) {
  const pid_t pid = fork();
  if (pid < 0) return 3;
  if (pid == 0) {
    const int fd = open(FORKED_MARKER, O_CREAT | O_WRONLY, 0644);
    if (fd >= 0) close(fd);
    sleep(30); /* a grandchild that would outlive its job */
    _exit(0);
  }
  return 0;
}

/* 64 GiB of address space, reserved but never touched: only a limit on the
 * address space refuses it. */
int32_t probe_allocate_past_limit(void** args) {
  const size_t bytes = (size_t)64 << 30;
  void* p = mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return 12;
  munmap(p, bytes);
  return 0;
}

int32_t probe_exit_without_result(void** args) { _exit(0); }

int32_t probe_kill_parent(void** args) { return kill(getppid(), SIGKILL) == 0 ? 0 : 3; }

/* Asleep for good: no CPU time, so no CPU limit. */
int32_t probe_sleep_forever(void** args) {
  for (;;) sleep(1);
}

/* SIGKILL on itself, as if from outside (the kernel filter refuses it). */
int32_t probe_kill_self(void** args) {
  return syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), SIGKILL) == 0 ? 0 : 3;
}

/* abort(): a signal the job raises on itself, which the kernel filter lets
 * through (tgkill of its own pid), so it dies by SIGABRT. */
int32_t probe_abort(void** args) { abort(); }

int32_t probe_loop_forever(void** args) {
  volatile uint64_t x = 0;
  for (;;) ++x;
  return 0;
}

/* out = in + 1, as rpc_kernels.c's add_one: a sandboxed kernel that behaves. */
int32_t probe_add_one(void** args) {
  const float* in = (const float*)args[0];
  float* out = (float*)args[1];
  for (int i = 0; i < 256; ++i) out[i] = in[i] + 1.0f;
  return 0;
}
