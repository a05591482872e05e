#include "rpc/handshake.h"

#include <zmq.h>

#include <cstdio>
#include <cstring>

namespace tessera::rpc {

Result<HandshakeWatch> HandshakeWatch::attach(void* ctx, Socket& socket, const std::string& endpoint,
                                              const SecurityOptions& security, const std::string& who) {
  HandshakeWatch watch;
  const std::string address = "inproc://handshake-" + random_hex(8);
  if (zmq_socket_monitor(socket.get(), address.c_str(),
                         ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                             ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                             ZMQ_EVENT_HANDSHAKE_SUCCEEDED) != 0)
    return Status(ErrorCode::kIOError, "cannot monitor the tracker connection");
  TESSERA_ASSIGN_OR_RETURN(watch.monitor_, Socket::create(ctx, ZMQ_PAIR, 1 << 16));
  TESSERA_RETURN_IF_ERROR(watch.monitor_.connect(address));
  watch.watched_ = socket.get();
  watch.endpoint_ = endpoint;
  watch.security_ = security;
  watch.who_ = who;
  return watch;
}

HandshakeWatch::~HandshakeWatch() {
  if (watched_ && monitor_) zmq_socket_monitor(watched_, nullptr, 0);
}

void HandshakeWatch::read() {
  if (!monitor_) return;
  while (auto msg = recv_message(monitor_)) {
    if (msg->frames.empty() || msg->frames[0].size() < 6) continue;
    uint16_t event = 0;
    uint32_t value = 0;
    std::memcpy(&event, msg->frames[0].data(), 2);
    std::memcpy(&value, msg->frames[0].data() + 2, 4);
    switch (event) {
      case ZMQ_EVENT_CONNECTED: handshaking_ = true; break;
      case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
        handshaking_ = false;
        failures_ = 0;
        status_ = Status::ok();
        break;
      case ZMQ_EVENT_DISCONNECTED:
        // Closed before the handshake ended: under CURVE, the tracker could
        // not read our HELLO (it was sealed for another key); a tracker that
        // goes away after the handshake is no key problem.
        if (!handshaking_) break;
        handshaking_ = false;
        [[fallthrough]];
      default:
        handshaking_ = false;
        if (failures_++ == 0) first_failure_ = std::chrono::steady_clock::now();
        status_ = explain(event, value);
    }
  }
}

Status HandshakeWatch::explain(int event, uint32_t value) const {
  const std::string at = "the tracker at " + endpoint_;
  if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
    return Status(ErrorCode::kUnavailable,
                  at + " refused this " + who_ + "'s key " + security_.own.public_z85 +
                      " (CURVE authentication failed, ZAP status " + std::to_string(value) +
                      "): this side's key is not among the tracker's --authorized keys; add its .pub file there "
                      "(under " +
                      who_ + "s/)");
  if (security_.insecure)
    return Status(ErrorCode::kUnavailable,
                  at + " requires CURVE keys, but this " + who_ +
                      " runs --insecure (plaintext, no key): give --keyfile and --tracker-key");
  if (event == ZMQ_EVENT_DISCONNECTED || event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)
    return Status(ErrorCode::kUnavailable,
                  at + " closed the connection during the CURVE handshake: the tracker key this " + who_ +
                      " was given (--tracker-key " + security_.server_public_z85 +
                      ") is not the tracker's public key; this side holds the wrong tracker key");
  if (value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH)
    return Status(ErrorCode::kUnavailable, at + " runs --insecure (plaintext), but this " + who_ +
                                               " uses CURVE keys: run both with keys, or both --insecure");
  char code[16];
  std::snprintf(code, sizeof code, "0x%08x", value);
  return Status(ErrorCode::kUnavailable, at + " failed the CURVE handshake (ZMTP error " + code +
                                             "): the tracker runs --insecure "
                                             "(plaintext), or the --tracker-key this " +
                                             who_ + " was given is not the tracker's");
}

}  // namespace tessera::rpc
