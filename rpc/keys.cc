#include "rpc/keys.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

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
    if (errno == EEXIST) return Status(ErrorCode::kInvalidArgument, path + " exists; refusing to overwrite a key");
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

// The fields of a key file: "public-key", "secret-key" and "role" lines.
struct KeyLines {
  std::string pub, sec, role;
  int role_line = 0;
};

Result<KeyLines> read_key_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status(ErrorCode::kNotFound, "key file " + quoted(path) + ": cannot open");
  std::string line;
  KeyLines out;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    auto eq = line.find('=');
    const std::string where = quoted(path) + ":" + std::to_string(number);
    if (eq == std::string::npos) return Status(ErrorCode::kParseError, where + ": expected 'name = key'");
    std::string name = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (name == "role") {
      if (!parse_key_role(value).is_ok())
        return Status(ErrorCode::kParseError, where + ": role must be 'worker' or 'client', not '" + value + "'");
      out.role = value;
      out.role_line = number;
      continue;
    }
    if (!is_z85_key(value)) return Status(ErrorCode::kParseError, where + ": not a 40-character Z85 key");
    if (name == "public-key")
      out.pub = value;
    else if (name == "secret-key")
      out.sec = value;
    else
      return Status(ErrorCode::kParseError, where + ": unknown field '" + name + "'");
  }
  return out;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Adds `key` with `role`; a key already listed under another role is an error.
Status add_key(AuthorizedKeys& keys, const std::string& key, KeyRole role, const std::string& where) {
  auto [it, fresh] = keys.emplace(key, role);
  if (!fresh && it->second != role)
    return Status(ErrorCode::kInvalidArgument, where + ": key " + key + " is authorized both as " +
                                                   key_role_name(it->second) + " and as " + key_role_name(role));
  return Status::ok();
}

// Every *.pub file of `dir`. `folder_role` is the role of the folder
// (workers/, clients/), or kAny for the top folder, where each file's own
// "role =" line decides.
Status load_key_folder(const std::string& dir, KeyRole folder_role, AuthorizedKeys& keys) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return Status(ErrorCode::kIOError, "cannot read " + dir + ": " + std::strerror(errno));
  std::vector<std::string> names;
  while (dirent* entry = ::readdir(d))
    if (ends_with(entry->d_name, ".pub")) names.push_back(entry->d_name);
  ::closedir(d);
  for (const auto& name : names) {
    const std::string path = dir + "/" + name;
    TESSERA_ASSIGN_OR_RETURN(KeyLines lines, read_key_lines(path));
    if (lines.pub.empty()) return Status(ErrorCode::kParseError, "key file " + quoted(path) + ": no public-key line");
    KeyRole role = folder_role;
    if (!lines.role.empty()) {
      KeyRole declared = parse_key_role(lines.role).value();
      if (folder_role != KeyRole::kAny && declared != folder_role)
        return Status(ErrorCode::kInvalidArgument, path + ":" + std::to_string(lines.role_line) + ": a " + lines.role +
                                                       " key in the " + key_role_name(folder_role) + "s' folder");
      role = declared;
    }
    TESSERA_RETURN_IF_ERROR(add_key(keys, lines.pub, role, path));
  }
  return Status::ok();
}

bool is_directory(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

}  // namespace

const char* key_role_name(KeyRole role) {
  switch (role) {
    case KeyRole::kWorker: return "worker";
    case KeyRole::kClient: return "client";
    case KeyRole::kAny: break;
  }
  return "any";
}

Result<KeyRole> parse_key_role(const std::string& name) {
  if (name == "worker") return KeyRole::kWorker;
  if (name == "client") return KeyRole::kClient;
  return Status(ErrorCode::kInvalidArgument, "unknown key role '" + name + "' (worker or client)");
}

PeerIdentity parse_peer_identity(const std::string& user_id) {
  PeerIdentity id;
  auto colon = user_id.find(':');
  if (colon == std::string::npos) return id;
  auto role = parse_key_role(user_id.substr(0, colon));
  if (role.is_ok()) id.role = *role;
  id.public_key = user_id.substr(colon + 1);
  return id;
}

void warn_insecure(const char* program, const std::string& endpoint) {
  // An endpoint refused for plaintext, or malformed, gets its error instead.
  if (!is_well_formed_endpoint(endpoint) || !check_insecure_endpoint(endpoint).is_ok()) return;
  // An ipc socket in a directory only this user can enter (LocalRunner's) is
  // protected by the file system: nothing to warn about.
  if (endpoint.rfind("ipc://", 0) == 0) {
    const std::string path = endpoint.substr(6);
    const std::string dir = path.substr(0, path.rfind('/') == std::string::npos ? 0 : path.rfind('/'));
    struct stat info;
    if (!dir.empty() && ::stat(dir.c_str(), &info) == 0 && S_ISDIR(info.st_mode) && info.st_uid == ::getuid() &&
        (info.st_mode & 0077) == 0)
      return;
  }
  std::fprintf(stderr,
               "%s: warning: --insecure: plaintext without keys on %s; any local process may connect, "
               "and no key roles are checked\n",
               program, endpoint.c_str());
}

Result<CurveKeyPair> generate_keypair() {
  char pub[41], sec[41];
  if (zmq_curve_keypair(pub, sec) != 0)
    return Status(ErrorCode::kIOError, std::string("cannot generate a CURVE keypair: ") + zmq_strerror(zmq_errno()));
  return CurveKeyPair{pub, sec};
}

Status write_keypair(const std::string& dir, const std::string& name, const CurveKeyPair& keys, KeyRole role) {
  if (!is_valid_name(name) || name.find('/') != std::string::npos)
    return Status(ErrorCode::kInvalidArgument, "bad key name '" + name + "'");
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return Status(ErrorCode::kIOError, "cannot create " + dir + ": " + std::strerror(errno));
  const std::string base = dir + "/" + name;
  const std::string role_line = role == KeyRole::kAny ? "" : std::string("role = ") + key_role_name(role) + "\n";
  TESSERA_RETURN_IF_ERROR(write_private_file(
      base + ".key", "# tessera CURVE keypair '" + name + "': keep this file private\n" + role_line +
                         "public-key = " + keys.public_z85 + "\nsecret-key = " + keys.secret_z85 + "\n"));
  return write_private_file(base + ".pub", "# tessera CURVE public key '" + name + "'\n" + role_line +
                                               "public-key = " + keys.public_z85 + "\n");
}

Result<KeyRole> load_key_role(const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(KeyLines lines, read_key_lines(path));
  if (lines.role.empty()) return KeyRole::kAny;
  return parse_key_role(lines.role);
}

Result<CurveKeyPair> load_keypair(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) return Status(ErrorCode::kNotFound, "key file " + quoted(path) + ": not found");
  if (info.st_mode & 0077)
    return Status(ErrorCode::kInvalidArgument, "key file " + quoted(path) + " is readable by others (chmod 600 it)");
  TESSERA_ASSIGN_OR_RETURN(KeyLines lines, read_key_lines(path));
  if (lines.pub.empty() || lines.sec.empty())
    return Status(ErrorCode::kParseError, "key file " + quoted(path) + ": needs public-key and secret-key lines");
  return CurveKeyPair{lines.pub, lines.sec};
}

Result<std::string> load_public_key(const std::string& path_or_key) {
  if (is_z85_key(path_or_key) && ::access(path_or_key.c_str(), F_OK) != 0) return path_or_key;
  TESSERA_ASSIGN_OR_RETURN(KeyLines lines, read_key_lines(path_or_key));
  if (lines.pub.empty())
    return Status(ErrorCode::kParseError, "key file " + quoted(path_or_key) + ": no public-key line");
  return lines.pub;
}

Result<AuthorizedKeys> load_authorized_keys(const std::string& path) {
  AuthorizedKeys keys;
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) return Status(ErrorCode::kNotFound, "authorized keys " + path + ": not found");
  if (S_ISDIR(info.st_mode)) {
    TESSERA_RETURN_IF_ERROR(load_key_folder(path, KeyRole::kAny, keys));
    if (is_directory(path + "/workers"))
      TESSERA_RETURN_IF_ERROR(load_key_folder(path + "/workers", KeyRole::kWorker, keys));
    if (is_directory(path + "/clients"))
      TESSERA_RETURN_IF_ERROR(load_key_folder(path + "/clients", KeyRole::kClient, keys));
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
    const std::string where = quoted(path) + ":" + std::to_string(number);
    KeyRole role = KeyRole::kAny;
    // A bare key may itself hold '=' (a Z85 character): only a line that is
    // not one whole key is "name = key".
    if (auto eq = line.find('='); eq != std::string::npos && !is_z85_key(line)) {
      const std::string name = trim(line.substr(0, eq));
      if (name != "public-key") {
        auto parsed = parse_key_role(name);
        if (!parsed.is_ok())
          return Status(ErrorCode::kParseError, where + ": expected 'worker = KEY', 'client = KEY' or a key");
        role = *parsed;
      }
      line = trim(line.substr(eq + 1));
    }
    if (!is_z85_key(line)) return Status(ErrorCode::kParseError, where + ": not a 40-character Z85 key");
    TESSERA_RETURN_IF_ERROR(add_key(keys, line, role, where));
  }
  return keys;
}

ZapHandler::ZapHandler(void* ctx, AuthorizedKeys authorized, Log* log)
    : ctx_(ctx), authorized_(std::move(authorized)), log_(log) {
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
    std::string user_id;  // "ROLE:KEY": the tracker reads it from each message (parse_peer_identity)
    if (f.size() >= 7 && f[0] == "1.0" && f[5] == "CURVE" && f[6].size() == 32) {
      if (zmq_z85_encode(z85, reinterpret_cast<const uint8_t*>(f[6].data()), 32)) {
        auto it = authorized_.find(z85);
        allowed = it != authorized_.end();
        if (allowed) user_id = std::string(key_role_name(it->second)) + ":" + z85;
      }
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
    zmq_send(socket_.get(), user_id.data(), user_id.size(), ZMQ_SNDMORE);
    zmq_send(socket_.get(), "", 0, 0);  // metadata
  }
}

}  // namespace tessera::rpc
