// The launcher: a small helper process that forks each measuring child on
// the worker's behalf, as the worker's own child.
//
// Why: a fork copies the forking process's page tables, and until the child
// exits every page either of them writes is a copy-on-write fault, which in
// a process with several threads also interrupts every CPU they ran on to
// flush its TLB. The worker is large and has ZeroMQ's threads; on a guest
// whose page faults and interrupts go through a paravirtualized hypervisor,
// forking it cost about 1.8 ms of a job's 10.8 ms round trip (the median
// of five pairs with and without the launcher). The launcher is forked
// once, while the worker is young (one thread, little memory written), and
// forks the children from there.
//
// The children are the worker's (clone with CLONE_PARENT): it waits for
// them, kills their process groups and opens their pidfds as before, with
// the same guarantee against pid reuse (a pid is freed by the worker's
// reap, and only then). glibc's fork takes no flags, so the child comes
// from a raw clone: glibc's thread descriptor keeps the launcher's thread
// id, which glibc does not use where it would matter (raise and abort ask
// the kernel); the launcher has one thread, so no lock is held across the
// clone. A child must not rely on atfork handlers either.
#pragma once

#include <sys/types.h>

#include <memory>
#include <vector>

#include "base/status.h"

namespace tessera::rpc {

class Launcher {
 public:
  /// What a launched child runs, given the descriptors sent with its
  /// launch (in order, now its own); it must end with _exit.
  using ChildMain = void (*)(const std::vector<int>& fds);
  /// The most descriptors one launch sends.
  static constexpr int kMaxDescriptors = 4;

  /// Forks the launcher from this process as it is now: call it early, from
  /// the thread that outlives the children (their parent-death signal
  /// follows that thread). kIOError when the socket or the fork fails.
  static Result<std::unique_ptr<Launcher>> start(ChildMain child_main);

  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;
  /// Stops the launcher and reaps it; the children it launched are this
  /// process's and are not touched. In a forked copy, closes its socket only.
  ~Launcher();

  /// Has the launcher fork a child of this process that runs child_main
  /// with copies of `fds` (at most kMaxDescriptors; the caller keeps and
  /// closes its own). The child's pid, which this process waits for.
  /// kUnavailable once the launcher is gone (killed, or a failed exchange:
  /// alive() is then false for good) and in a process forked from this one
  /// (the launcher's children could not be its children), kIOError when
  /// the launcher's fork failed. One caller at a time.
  Result<pid_t> launch(const std::vector<int>& fds);

  /// False once an exchange with the launcher failed.
  bool alive() const { return socket_ >= 0; }
  pid_t pid() const { return pid_; }

 private:
  Launcher(pid_t pid, int socket, pid_t owner) : pid_(pid), socket_(socket), owner_(owner) {}
  void lose();  // closes the socket, kills and reaps the launcher

  pid_t pid_ = -1;
  int socket_ = -1;   // SOCK_SEQPACKET: one launch a message, one pid a reply
  pid_t owner_ = -1;  // the process that started it, whose children it forks
};

}  // namespace tessera::rpc
