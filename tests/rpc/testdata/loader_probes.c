/* Kernel libraries whose constructors, run while the library loads (under
 * the sandbox's loader filter, before the kernel filter), try to reach
 * another process, to outlive their worker, or to die as if killed from
 * outside. Built once per probe
 * (tests/rpc/CMakeLists.txt), each with one LOADER_PROBE_* defined; every
 * attempt is harmless if it gets through (signal 0, a read of a limit, a
 * death signal cleared, a death the worker stores as KILLED), so a sandbox
 * that lets it through reports OK or KILLED and the test fails. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static void* idle(void* arg) {
  return arg;
}

static int reached = 0; /* LOADER_PROBE_NEIGHBOUR: what got through */

#if defined(LOADER_PROBE_MANY_THREADS)
static int started = 0;
static void* stay(void* arg) {
  for (;;) sleep(1000);
  return arg;
}
#endif

__attribute__((constructor)) static void reach_outside(void) {
#if defined(LOADER_PROBE_PRLIMIT)
  /* Another process's limits: with a new limit, a neighbour's job killed. */
  struct rlimit old;
  syscall(SYS_prlimit64, getppid(), RLIMIT_CPU, (void*)0, &old);
#elif defined(LOADER_PROBE_SIGQUEUE)
  /* A queued signal to another process (0: only whether it may). */
  siginfo_t info;
  memset(&info, 0, sizeof info);
  info.si_code = SI_QUEUE;
  syscall(SYS_rt_sigqueueinfo, getppid(), 0, &info);
#elif defined(LOADER_PROBE_PDEATHSIG)
  /* No death signal: the job would outlive a killed worker. */
  prctl(PR_SET_PDEATHSIG, 0);
#elif defined(LOADER_PROBE_THREADS)
  /* A thread of its own, started while loading (500 of them before). */
  pthread_t thread;
  if (pthread_create(&thread, (void*)0, idle, (void*)0) == 0) pthread_join(thread, (void**)0);
#elif defined(LOADER_PROBE_MANY_THREADS)
  /* 500 threads that stay (small stacks: the thread limit, not the address
   * space's, must be what stops them). A package job's backend starts
   * threads as it loads, so its load is not sealed; its threads are
   * bounded. */
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 << 10);
  for (; started < 500; ++started) {
    pthread_t thread;
    if (pthread_create(&thread, &attr, stay, (void*)0) != 0) break;
  }
#elif defined(LOADER_PROBE_PTRACER)
  /* Any process of its uid may trace it: a neighbour's job could read it. */
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY);
#elif defined(LOADER_PROBE_NEIGHBOUR)
  /* A process of the same uid (TESSERA_PROBE_NEIGHBOUR: its pid), as another
   * job of a worker whose jobs share an identity: its CPUs set to what they
   * are, its niceness raised, its scheduling made idle. Each would slow the
   * neighbour's measurement; any that gets through is remembered. */
  const char* neighbour = getenv("TESSERA_PROBE_NEIGHBOUR");
  if (neighbour) {
    const pid_t n = (pid_t)atoi(neighbour);
    cpu_set_t set;
    if (sched_getaffinity(n, sizeof set, &set) == 0 && sched_setaffinity(n, sizeof set, &set) == 0) reached |= 1;
    if (setpriority(PRIO_PROCESS, (id_t)n, 19) == 0) reached |= 2;
    struct sched_param param;
    memset(&param, 0, sizeof param);
    if (sched_setscheduler(n, SCHED_IDLE, &param) == 0) reached |= 4;
  }
#elif defined(LOADER_PROBE_SELFKILL)
  /* SIGKILL on itself: it would pass for a job killed from outside, which
   * the worker stores as the machine's failure and measures again. */
  syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), SIGKILL);
#elif defined(LOADER_PROBE_SELFTERM)
  /* SIGTERM on itself, queued: the same disguise. */
  siginfo_t info;
  memset(&info, 0, sizeof info);
  info.si_code = SI_QUEUE;
  syscall(SYS_rt_sigqueueinfo, getpid(), SIGTERM, &info);
#endif
}

/* out = in + 1: the kernel the job names, well behaved. */
int32_t probe_add_one(void** args) {
#if defined(LOADER_PROBE_MANY_THREADS)
  if (started == 500) return 9; /* no limit stopped the constructor */
#endif
  if (reached) return 10 + reached; /* a neighbour was reached */
  const float* in = (const float*)args[0];
  float* out = (float*)args[1];
  for (int i = 0; i < 256; ++i) out[i] = in[i] + 1.0f;
  return 0;
}
