#include "rpc/keys.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tessera::rpc {
namespace {

bool is_z85_key(const std::string& s) {
  if (s.size() != 40) return false;
  uint8_t raw[32];
  return zmq_z85_decode(raw, s.c_str()) != nullptr;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

Status write_private_file(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST)
      return Status(ErrorCode::kInvalidArgument, path + " exists; refusing to overwrite a key");
    return Status(ErrorCode::kIOError, "cannot create " + path + ": " + std::strerror(errno));
  }
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return Status(ErrorCode::kIOError, "cannot write " + path + ": " + std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  ::fchmod(fd, 0600);  // in case the umask narrowed nothing but O_CREAT's mode did not apply
  ::close(fd);
  return Status::ok();
}

// "name = value" lines of a key file.
Result<std::pair<std::string, std::string>> read_key_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status(ErrorCode::kNotFound, "key file " + path + ": cannot open");
  std::string line, pub, sec;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    auto eq = line.find('=');
    if (eq == std::string::npos)
      return Status(ErrorCode::kParseError, path + ":" + std::to_string(number) + ": expected 'name = key'");
    std::string name = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (!is_z85_key(value))
      return Status(ErrorCode::kParseError, path + ":" + std::to_string(number) + ": not a 40-character Z85 key");
    if (name == "public-key") pub = value;
    else if (name == "secret-key") sec = value;
    else return Status(ErrorCode::kParseError, path + ":" + std::to_string(number) + ": unknown field '" + name + "'");
  }
  return std::make_pair(pub, sec);
}

}  // namespace

Result<CurveKeyPair> generate_keypair() {
  char pub[41], sec[41];
  if (zmq_curve_keypair(pub, sec) != 0)
    return Status(ErrorCode::kIOError, std::string("cannot generate a CURVE keypair: ") + zmq_strerror(zmq_errno()));
  return CurveKeyPair{pub, sec};
}

Status write_keypair(const std::string& dir, const std::string& name, const CurveKeyPair& keys) {
  if (!is_valid_name(name) || name.find('/') != std::string::npos)
    return Status(ErrorCode::kInvalidArgument, "bad key name '" + name + "'");
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return Status(ErrorCode::kIOError, "cannot create " + dir + ": " + std::strerror(errno));
  const std::string base = dir + "/" + name;
  TESSERA_RETURN_IF_ERROR(write_private_file(
      base + ".key", "# tessera CURVE keypair '" + name + "': keep this file private\npublic-key = " +
                         keys.public_z85 + "\nsecret-key = " + keys.secret_z85 + "\n"));
  return write_private_file(base + ".pub", "# tessera CURVE public key '" + name + "'\npublic-key = " +
                                               keys.public_z85 + "\n");
}

Result<CurveKeyPair> load_keypair(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) return Status(ErrorCode::kNotFound, "key file " + path + ": not found");
  if (info.st_mode & 0077)
    return Status(ErrorCode::kInvalidArgument, "key file " + path + " is readable by others (chmod 600 it)");
  TESSERA_ASSIGN_OR_RETURN(auto lines, read_key_lines(path));
  if (lines.first.empty() || lines.second.empty())
    return Status(ErrorCode::kParseError, "key file " + path + ": needs public-key and secret-key lines");
  return CurveKeyPair{lines.first, lines.second};
}

Result<std::string> load_public_key(const std::string& path_or_key) {
  if (is_z85_key(path_or_key) && ::access(path_or_key.c_str(), F_OK) != 0) return path_or_key;
  TESSERA_ASSIGN_OR_RETURN(auto lines, read_key_lines(path_or_key));
  if (lines.first.empty()) return Status(ErrorCode::kParseError, "key file " + path_or_key + ": no public-key line");
  return lines.first;
}

Result<std::set<std::string>> load_authorized_keys(const std::string& path) {
  std::set<std::string> keys;
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    return Status(ErrorCode::kNotFound, "authorized keys " + path + ": not found");
  if (S_ISDIR(info.st_mode)) {
    DIR* dir = ::opendir(path.c_str());
    if (!dir) return Status(ErrorCode::kIOError, "cannot read " + path + ": " + std::strerror(errno));
    Status status;
    while (dirent* entry = ::readdir(dir)) {
      std::string name = entry->d_name;
      if (name.size() < 5 || name.compare(name.size() - 4, 4, ".pub") != 0) continue;
      auto key = load_public_key(path + "/" + name);
      if (!key.is_ok()) {
        status = key.status();
        break;
      }
      keys.insert(*key);
    }
    ::closedir(dir);
    if (!status.is_ok()) return status;
    return keys;
  }
  std::ifstream in(path);
  if (!in) return Status(ErrorCode::kIOError, "cannot read " + path);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    if (auto eq = line.find('='); eq != std::string::npos) line = trim(line.substr(eq + 1));
    if (!is_z85_key(line))
      return Status(ErrorCode::kParseError, path + ":" + std::to_string(number) + ": not a 40-character Z85 key");
    keys.insert(line);
  }
  return keys;
}

ZapHandler::ZapHandler(void* ctx, std::set<std::string> authorized_z85, Log* log)
    : ctx_(ctx), authorized_(std::move(authorized_z85)), log_(log) {
  auto socket = Socket::create(ctx_, ZMQ_REP, 1 << 16);
  if (!socket.is_ok()) {
    status_ = socket.status();
    return;
  }
  socket_ = std::move(socket).value();
  status_ = socket_.bind("inproc://zeromq.zap.01");
  if (status_.is_ok()) thread_ = std::thread([this] { loop(); });
}

ZapHandler::~ZapHandler() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void ZapHandler::loop() {
  while (!stop_) {
    zmq_pollitem_t item = {socket_.get(), 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, 100) <= 0) continue;
    auto request = recv_message(socket_, 8);
    if (!request.is_ok()) continue;
    // Frames: version, request id, domain, address, identity, mechanism, credentials...
    const auto& f = request->frames;
    bool allowed = false;
    char z85[41] = "";
    if (f.size() >= 7 && f[0] == "1.0" && f[5] == "CURVE" && f[6].size() == 32) {
      if (zmq_z85_encode(z85, reinterpret_cast<const uint8_t*>(f[6].data()), 32))
        allowed = authorized_.count(z85) > 0;
    }
    if (!allowed) refused_.fetch_add(1);
    if (!allowed && log_)
      log_->warn("refused a connection from %s: public key %s is not authorized", f.size() >= 4 ? f[3].c_str() : "?",
                 z85[0] ? z85 : "(none)");
    const std::string id = f.size() >= 2 ? f[1] : "";
    const char* code = allowed ? "200" : "400";
    const char* text = allowed ? "OK" : "unknown CURVE public key";
    zmq_send(socket_.get(), "1.0", 3, ZMQ_SNDMORE);
    zmq_send(socket_.get(), id.data(), id.size(), ZMQ_SNDMORE);
    zmq_send(socket_.get(), code, 3, ZMQ_SNDMORE);
    zmq_send(socket_.get(), text, std::strlen(text), ZMQ_SNDMORE);
    zmq_send(socket_.get(), "", 0, ZMQ_SNDMORE);  // user id
    zmq_send(socket_.get(), "", 0, 0);            // metadata
  }
}

}  // namespace tessera::rpc
