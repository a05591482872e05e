#include "rpc/launcher.h"

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace tessera::rpc {
namespace {

// How long the worker waits for the launcher's reply before it gives the
// launcher up: a fork takes well under a millisecond.
constexpr int kReplyTimeoutMs = 5000;

// A child of the launcher's parent, as fork() would make one of the
// launcher's own. The exit signal is the launcher's (SIGCHLD) with
// CLONE_PARENT, whatever the low byte says.
pid_t clone_sibling() {
  return static_cast<pid_t>(::syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, nullptr, nullptr, 0));
}

bool send_reply(int socket, int32_t value) {
  return ::send(socket, &value, sizeof value, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof value);
}

// One launch request: a byte and the descriptors; false at end of file or
// on an error (the worker is gone).
bool receive_request(int socket, std::vector<int>* fds, bool* truncated) {
  char byte;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * Launcher::kMaxDescriptors)];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  while ((n = ::recvmsg(socket, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  if (n <= 0) return false;
  fds->clear();
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds->push_back(fd);
    }
  }
  *truncated = (msg.msg_flags & MSG_CTRUNC) != 0;
  return true;
}

// The launcher's life: say whether this kernel clones a sibling (an
// emulator may refuse the flag), then fork one child a request until the
// worker closes its end.
[[noreturn]] void serve(int socket, Launcher::ChildMain child_main) {
  const pid_t probe = clone_sibling();
  if (probe == 0) ::_exit(0);
  if (!send_reply(socket, probe < 0 ? -errno : probe) || probe < 0) ::_exit(0);
  std::vector<int> fds;
  bool truncated = false;
  while (receive_request(socket, &fds, &truncated)) {
    pid_t pid = -EINVAL;
    if (!truncated) {
      pid = clone_sibling();
      if (pid == 0) {
        ::close(socket);
        child_main(fds);
        ::_exit(127);
      }
      if (pid < 0) pid = -errno;
    }
    for (int fd : fds) ::close(fd);
    if (!send_reply(socket, pid)) break;
  }
  ::_exit(0);
}

// The reply to the last request, or nothing within the timeout.
bool read_reply(int socket, int32_t* value) {
  pollfd p{socket, POLLIN, 0};
  int ready;
  while ((ready = ::poll(&p, 1, kReplyTimeoutMs)) < 0 && errno == EINTR) {
  }
  if (ready <= 0) return false;
  ssize_t n;
  while ((n = ::recv(socket, value, sizeof *value, 0)) < 0 && errno == EINTR) {
  }
  return n == static_cast<ssize_t>(sizeof *value);
}

void reap(pid_t pid) {
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

Result<std::unique_ptr<Launcher>> Launcher::start(ChildMain child_main) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    return Status(ErrorCode::kIOError, std::string("launcher socket: ") + std::strerror(errno));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    ::close(sv[0]);
    ::close(sv[1]);
    return Status(ErrorCode::kIOError, std::string("cannot fork the launcher: ") + std::strerror(error));
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // it serves one worker and dies with it
    if (::getppid() != parent) ::_exit(0);
    ::prctl(PR_SET_NAME, "tessera-launch");
    // Its socket alone: the worker's sockets, log and namespaces stay the
    // worker's (a job's namespace comes with its launch).
    const unsigned keep = static_cast<unsigned>(sv[1]);
    if (keep > 3) ::close_range(3, keep - 1, 0);
    ::close_range(keep + 1, ~0U, 0);
    serve(sv[1], child_main);
  }
  ::close(sv[1]);
  std::unique_ptr<Launcher> launcher(new Launcher(pid, sv[0], parent));
  int32_t probe = 0;
  if (!read_reply(sv[0], &probe) || probe < 0) {
    launcher->lose();
    return Status(ErrorCode::kUnavailable, std::string("the launcher cannot fork for this process: ") +
                                               (probe < 0 ? std::strerror(-probe) : "it did not answer"));
  }
  reap(probe);  // the probe's child, this process's like every launched one
  return launcher;
}

Launcher::~Launcher() {
  lose();
}

void Launcher::lose() {
  if (socket_ >= 0) ::close(socket_);
  socket_ = -1;
  if (pid_ > 0 && ::getpid() == owner_) {
    ::kill(pid_, SIGKILL);
    reap(pid_);
  }
  pid_ = -1;
}

Result<pid_t> Launcher::launch(const std::vector<int>& fds) {
  if (socket_ < 0) return Status(ErrorCode::kUnavailable, "the launcher is gone");
  if (::getpid() != owner_) return Status(ErrorCode::kUnavailable, "the launcher serves the process that started it");
  if (fds.size() > static_cast<size_t>(kMaxDescriptors))
    return Status(ErrorCode::kInvalidArgument, "too many descriptors for one launch");
  char byte = 0;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxDescriptors)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  ssize_t sent;
  while ((sent = ::sendmsg(socket_, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  int32_t reply = 0;
  if (sent != 1 || !read_reply(socket_, &reply)) {
    lose();
    return Status(ErrorCode::kUnavailable, "the launcher is gone");
  }
  if (reply < 0) return Status(ErrorCode::kIOError, std::string("cannot fork: ") + std::strerror(-reply));
  return static_cast<pid_t>(reply);
}

}  // namespace tessera::rpc
