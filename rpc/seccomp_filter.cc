#include "rpc/seccomp_filter.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

namespace tessera::rpc {
namespace {

// A filter compiled to BPF, ready to install. The rules that name the job's
// own process were compiled with kSelfPid in its place: install() patches
// the caller's pid into the comparisons at `self_at`.
struct Program {
  std::vector<sock_filter> code;
  std::vector<size_t> self_at;
};

// Stands for the child's pid while the filters compile, in the parent: above
// any pid the kernel hands out (PID_MAX_LIMIT is 2^22).
constexpr uint32_t kSelfPid = 0x7e1f5e1fu;

// Owns a libseccomp context while its rules are added and it compiles.
class Filter {
 public:
  explicit Filter(uint32_t default_action) : ctx_(seccomp_init(default_action)), default_(default_action) {}
  ~Filter() {
    if (ctx_) seccomp_release(ctx_);
  }
  Filter(const Filter&) = delete;
  Filter& operator=(const Filter&) = delete;

  // A negative number is a system call this architecture does not have
  // (fork on aarch64): nothing to filter. libseccomp refuses a rule whose
  // action is the default: it would change nothing.
  void rule(uint32_t action, int nr) {
    if (nr >= 0 && action != default_ && rc_ == 0) rc_ = seccomp_rule_add(ctx_, action, nr, 0);
  }
  void rule(uint32_t action, int nr, scmp_arg_cmp cmp) {
    if (nr >= 0 && action != default_ && rc_ == 0) rc_ = seccomp_rule_add(ctx_, action, nr, 1, cmp);
  }
  // Both comparisons must hold.
  void rule(uint32_t action, int nr, scmp_arg_cmp first, scmp_arg_cmp second) {
    if (nr >= 0 && action != default_ && rc_ == 0) rc_ = seccomp_rule_add(ctx_, action, nr, 2, first, second);
  }
  void rules(uint32_t action, std::initializer_list<int> nrs) {
    for (int nr : nrs) rule(action, nr);
  }

  // The BPF program libseccomp generates, read back through a memory file.
  Result<Program> compile(const char* which) {
    auto fail = [&](const std::string& what, int error) {
      return Status(ErrorCode::kIOError, "cannot " + what + " the " + which + " filter: " + std::strerror(error));
    };
    if (!ctx_) return fail("start", ENOMEM);
    if (rc_ != 0) return fail("build", -rc_);
    const int fd = ::memfd_create("tessera-filter", MFD_CLOEXEC);
    if (fd < 0) return fail("compile", errno);
    const int rc = seccomp_export_bpf(ctx_, fd);
    const off_t bytes = ::lseek(fd, 0, SEEK_END);
    Program p;
    p.code.resize(bytes > 0 ? static_cast<size_t>(bytes) / sizeof(sock_filter) : 0);
    const size_t want = p.code.size() * sizeof(sock_filter);
    const bool read = rc == 0 && bytes > 0 && static_cast<size_t>(bytes) == want &&
                      ::pread(fd, p.code.data(), want, 0) == static_cast<ssize_t>(want);
    ::close(fd);
    if (!read) return fail("compile", rc != 0 ? -rc : EIO);
    // kSelfPid may only be a comparison's constant: anything else means
    // this libseccomp compiles in a way install() does not know to patch.
    for (size_t i = 0; i < p.code.size(); ++i) {
      if (p.code[i].k != kSelfPid) continue;
      if (p.code[i].code != (BPF_JMP | BPF_JEQ | BPF_K))
        return Status(ErrorCode::kIOError, std::string("the ") + which +
                                               " filter compiled the job's pid into instruction " + std::to_string(i) +
                                               ", not a comparison");
      p.self_at.push_back(i);
    }
    return p;
  }

 private:
  scmp_filter_ctx ctx_;
  uint32_t default_;
  int rc_ = 0;
};

// Installs `p` on every thread of the calling process (TSYNC), with the
// caller's pid in place of kSelfPid. No new privileges first: an
// unprivileged process may install a filter only so.
Status install(const Result<Program>& p, const char* which) {
  if (!p.is_ok()) return p.status();
  std::vector<sock_filter> code = p->code;
  const auto self = static_cast<uint32_t>(::getpid());
  for (size_t i : p->self_at) code[i].k = self;
  sock_fprog program{static_cast<unsigned short>(code.size()), code.data()};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return Status(ErrorCode::kIOError, std::string("cannot install the ") + which + " filter: " + std::strerror(errno));
  const long rc = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program);
  if (rc == 0) return Status::ok();
  return Status(ErrorCode::kIOError, std::string("cannot install the ") + which + " filter: " +
                                         (rc > 0 ? "thread " + std::to_string(rc) + " would not take it"
                                                 : std::string(std::strerror(errno))));
}

// Threads only: a clone without CLONE_THREAD makes a process. clone3 passes
// its flags in memory a filter cannot read, so it fails with ENOSYS and the
// C library falls back to clone.
void allow_threads_only(Filter& f, uint32_t thread_action) {
  f.rule(thread_action, SCMP_SYS(clone), SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
  f.rule(SCMP_ACT_KILL_PROCESS, SCMP_SYS(clone), SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
  f.rule(SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3));
}

// The signals a running job may raise on itself: abort(), and a fault
// re-raised by a handler.
constexpr int kOwnSignals[] = {SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP};

// Terminal requests that act on a terminal other than the job's own: typing
// into it (TIOCSTI, a shell's input once the job stops its reader) and the
// console's selection and keyboard hooks (TIOCLINUX). The kernel reads the
// request as 32 bits, so only those are compared.
void kill_terminal_injection(Filter& f) {
  for (unsigned long request : {TIOCSTI, TIOCLINUX})
    f.rule(SCMP_ACT_KILL_PROCESS, SCMP_SYS(ioctl), SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, request));
}

// Another process's CPUs, scheduling, priority and memory placement (where
// jobs share a uid, a neighbour's job slowed to a crawl or moved to one
// core): refused with EPERM rather than killed, since a library may set its
// own threads' affinity by their ids, which a filter cannot tell from
// another process's. Pid 0, the caller itself, stays allowed.
void refuse_other_processes_scheduling(Filter& f) {
  const uint32_t refuse = SCMP_ACT_ERRNO(EPERM);
  for (int call : {SCMP_SYS(sched_setaffinity), SCMP_SYS(sched_setparam), SCMP_SYS(sched_setscheduler),
                   SCMP_SYS(sched_setattr), SCMP_SYS(migrate_pages), SCMP_SYS(move_pages)})
    f.rule(refuse, call, SCMP_A0(SCMP_CMP_NE, 0));
  constexpr scmp_datum_t kIoprioWhoProcess = 1;  // linux/ioprio.h
  f.rule(refuse, SCMP_SYS(setpriority), SCMP_A0(SCMP_CMP_NE, PRIO_PROCESS));
  f.rule(refuse, SCMP_SYS(setpriority), SCMP_A1(SCMP_CMP_NE, 0));
  f.rule(refuse, SCMP_SYS(ioprio_set), SCMP_A0(SCMP_CMP_NE, kIoprioWhoProcess));
  f.rule(refuse, SCMP_SYS(ioprio_set), SCMP_A1(SCMP_CMP_NE, 0));
}

// Loading needs no ioctl: the standard streams are /dev/null and the report
// a pipe, so "not a terminal" is the true answer to any request. A filter of
// its own, since libseccomp lets a rule without arguments replace the
// argument rules of the same call; stacked, the kernel takes the stricter.
Result<Program> compile_ioctl_filter() {
  Filter f(SCMP_ACT_ALLOW);
  f.rule(SCMP_ACT_ERRNO(ENOTTY), SCMP_SYS(ioctl));
  return f.compile("loader's ioctl");
}

Result<Program> compile_loader_filter() {
  Filter f(SCMP_ACT_ALLOW);
  const uint32_t kill = SCMP_ACT_KILL_PROCESS;
  allow_threads_only(f, SCMP_ACT_ALLOW);
  f.rules(kill, {SCMP_SYS(fork), SCMP_SYS(vfork), SCMP_SYS(execve), SCMP_SYS(execveat)});
  f.rules(kill, {SCMP_SYS(socket), SCMP_SYS(socketpair), SCMP_SYS(connect), SCMP_SYS(bind), SCMP_SYS(listen),
                 SCMP_SYS(accept), SCMP_SYS(accept4), SCMP_SYS(sendto), SCMP_SYS(sendmsg), SCMP_SYS(sendmmsg)});
  // Signals to itself only: abort() raises SIGABRT with tgkill on its own pid.
  // Nothing else that names another process: queued signals, its limits
  // (prlimit64 of pid 0 is the caller's own, as setrlimit calls it), a
  // comparison of its resources.
  const auto self = static_cast<scmp_datum_t>(kSelfPid);
  f.rules(kill, {SCMP_SYS(kill), SCMP_SYS(tkill), SCMP_SYS(pidfd_open), SCMP_SYS(pidfd_send_signal),
                 SCMP_SYS(pidfd_getfd), SCMP_SYS(kcmp), SCMP_SYS(process_madvise), SCMP_SYS(process_mrelease)});
  f.rule(kill, SCMP_SYS(tgkill), SCMP_A0(SCMP_CMP_NE, self));
  f.rule(kill, SCMP_SYS(rt_sigqueueinfo), SCMP_A0(SCMP_CMP_NE, self));
  f.rule(kill, SCMP_SYS(rt_tgsigqueueinfo), SCMP_A0(SCMP_CMP_NE, self));
  f.rule(kill, SCMP_SYS(prlimit64), SCMP_A0(SCMP_CMP_NE, 0));
  for (int signal : kOutsideSignals) {
    const auto sig = static_cast<scmp_datum_t>(signal);
    f.rule(kill, SCMP_SYS(tgkill), SCMP_A2(SCMP_CMP_EQ, sig));
    f.rule(kill, SCMP_SYS(rt_sigqueueinfo), SCMP_A1(SCMP_CMP_EQ, sig));
    f.rule(kill, SCMP_SYS(rt_tgsigqueueinfo), SCMP_A2(SCMP_CMP_EQ, sig));
  }
  // The death signal stays: a job must die with its worker. Nor may it let
  // others trace it, stay dumpable for them, adopt orphans, or keep or
  // gain capabilities (the options a job never needs; naming a thread and
  // the rest stay).
  for (int option : {PR_SET_PDEATHSIG, PR_SET_PTRACER, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_MM,
                     PR_SET_KEEPCAPS, PR_SET_SECUREBITS, PR_CAP_AMBIENT})
    f.rule(kill, SCMP_SYS(prctl), SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, static_cast<scmp_datum_t>(option)));
  refuse_other_processes_scheduling(f);
  f.rules(kill, {SCMP_SYS(ptrace),
                 SCMP_SYS(process_vm_readv),
                 SCMP_SYS(process_vm_writev),
                 SCMP_SYS(setsid),
                 SCMP_SYS(setpgid),
                 SCMP_SYS(unshare),
                 SCMP_SYS(setns),
                 SCMP_SYS(mount),
                 SCMP_SYS(umount2),
                 SCMP_SYS(chroot),
                 SCMP_SYS(pivot_root),
                 SCMP_SYS(reboot),
                 SCMP_SYS(kexec_load),
                 SCMP_SYS(init_module),
                 SCMP_SYS(finit_module),
                 SCMP_SYS(delete_module),
                 SCMP_SYS(bpf),
                 SCMP_SYS(perf_event_open),
                 SCMP_SYS(keyctl),
                 SCMP_SYS(add_key),
                 SCMP_SYS(request_key),
                 SCMP_SYS(personality),
                 SCMP_SYS(io_uring_setup),
                 SCMP_SYS(userfaultfd),
                 SCMP_SYS(setuid),
                 SCMP_SYS(setgid),
                 SCMP_SYS(setreuid),
                 SCMP_SYS(setregid),
                 SCMP_SYS(setresuid),
                 SCMP_SYS(setresgid),
                 SCMP_SYS(setgroups),
                 SCMP_SYS(capset)});
  kill_terminal_injection(f);
  return f.compile("loader");
}

Result<Program> compile_no_new_threads_filter() {
  Filter f(SCMP_ACT_ALLOW);
  f.rule(SCMP_ACT_KILL_PROCESS, SCMP_SYS(clone));
  f.rule(SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3));  // the C library falls back to clone
  return f.compile("no new threads");
}

Result<Program> compile_kernel_filter() {
  Filter f(SCMP_ACT_KILL_PROCESS);
  const uint32_t allow = SCMP_ACT_ALLOW;
  // Memory: the kernel's buffers, the allocator, thread stacks.
  f.rules(allow,
          {SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mprotect), SCMP_SYS(mremap), SCMP_SYS(brk), SCMP_SYS(madvise)});
  // The pool's synchronisation, the timing loop's clocks and cool-down sleeps.
  f.rules(allow, {SCMP_SYS(futex), SCMP_SYS(sched_yield), SCMP_SYS(clock_gettime), SCMP_SYS(clock_getres),
                  SCMP_SYS(gettimeofday), SCMP_SYS(nanosleep), SCMP_SYS(clock_nanosleep), SCMP_SYS(sched_getaffinity),
                  SCMP_SYS(getrandom)});
  // Threads (their start and end), signals to itself, exit.
  allow_threads_only(f, allow);
  f.rules(allow, {SCMP_SYS(set_robust_list), SCMP_SYS(rseq), SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigreturn),
                  SCMP_SYS(restart_syscall), SCMP_SYS(getpid), SCMP_SYS(gettid), SCMP_SYS(exit), SCMP_SYS(exit_group)});
  for (int signal : kOwnSignals)
    f.rule(allow, SCMP_SYS(tgkill), SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(kSelfPid)),
           SCMP_A2(SCMP_CMP_EQ, static_cast<scmp_datum_t>(signal)));
  // A thread's own alternate signal stack (the sanitizers' runtime sets one
  // for every thread it sees end).
  f.rule(allow, SCMP_SYS(sigaltstack));
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // A sanitizer build's runtime probes whether memory is readable by writing
  // it to a pipe of its own: allowed in those (test) builds only.
  f.rules(allow, {SCMP_SYS(pipe2), SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(close)});
#else
  // The report, on its pipe and nowhere else.
  f.rule(allow, SCMP_SYS(write), SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(kReportFd)));
#endif
  return f.compile("kernel");
}

// Every filter, compiled once per process: building one with libseccomp
// took 0.1-0.5 ms, installing it microseconds.
struct Programs {
  Result<Program> loader = compile_loader_filter();
  Result<Program> ioctls = compile_ioctl_filter();
  Result<Program> no_new_threads = compile_no_new_threads_filter();
  Result<Program> kernel = compile_kernel_filter();
};

const Programs& programs() {
  static const Programs compiled;
  return compiled;
}

}  // namespace

void prepare_filters() {
  (void)programs();
}

Status install_loader_filter() {
  TESSERA_RETURN_IF_ERROR(install(programs().loader, "loader"));
  return install(programs().ioctls, "loader's ioctl");
}

Status install_no_new_threads_filter() {
  return install(programs().no_new_threads, "no new threads");
}

Status install_kernel_filter() {
  return install(programs().kernel, "kernel");
}

}  // namespace tessera::rpc
