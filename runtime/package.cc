#include "runtime/package.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>

#include "base/half.h"

namespace tessera::runtime {
namespace {

constexpr int64_t kDataAlignment = 64;  // constants and the library start on 64-byte file offsets

Status parse_error(const std::string& source, const std::string& what) {
  return Status(ErrorCode::kParseError, source + ": " + what);
}

bool dtype_storable(DType t) {
  if (t.lanes != 1) return false;
  switch (t.code) {
    case TypeCode::kInt: return t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64;
    case TypeCode::kUInt: return t.bits == 1 || t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64;
    case TypeCode::kFloat: return t.bits == 16 || t.bits == 32 || t.bits == 64;
    case TypeCode::kBFloat: return t.bits == 16;
    case TypeCode::kHandle: return false;
  }
  return false;
}

std::string describe_value(const PackageContents& c, int64_t id) {
  const PackageValue& v = c.values[static_cast<size_t>(id)];
  std::string s = "value " + std::to_string(id);
  if (!v.name.empty()) s += " ('" + v.name + "')";
  return s;
}

// Checks an input or output list: ids in range, of the right kind, each such
// value listed exactly once.
Status validate_io_list(const PackageContents& c, const std::vector<int32_t>& ids, ValueKind kind,
                        std::set<std::string>* names) {
  const char* what = kind == ValueKind::kInput ? "input" : "output";
  std::set<int32_t> seen;
  for (int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= c.values.size()) {
      return Status(ErrorCode::kParseError, std::string(what) + " list names value " + std::to_string(id) +
                                                ", out of range [0, " + std::to_string(c.values.size()) + ")");
    }
    const PackageValue& v = c.values[static_cast<size_t>(id)];
    if (v.kind != kind) {
      return Status(ErrorCode::kParseError,
                    std::string(what) + " list names " + describe_value(c, id) + " of kind " + value_kind_name(v.kind));
    }
    if (!seen.insert(id).second) {
      return Status(ErrorCode::kParseError, std::string(what) + " list names " + describe_value(c, id) + " twice");
    }
    if (v.name.empty()) {
      return Status(ErrorCode::kParseError, std::string(what) + " value " + std::to_string(id) + " has no name");
    }
    if (!names->insert(v.name).second) {
      return Status(ErrorCode::kParseError, "graph input/output name '" + v.name + "' is not unique");
    }
  }
  for (size_t id = 0; id < c.values.size(); ++id) {
    if (c.values[id].kind == kind && seen.count(static_cast<int32_t>(id)) == 0) {
      return Status(ErrorCode::kParseError, describe_value(c, static_cast<int64_t>(id)) + " is an " + what +
                                                " but not in the " + what + " list");
    }
  }
  return Status::ok();
}

// ---- writing ----------------------------------------------------------------

class Writer {
 public:
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) u8(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) u8(static_cast<uint8_t>(v >> (8 * i)));
  }
  void i32(int32_t v) { u32(static_cast<uint32_t>(v)); }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void bytes(std::string_view b) { out_.append(b.data(), b.size()); }
  void str(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    bytes(s);
  }
  void pad_to_alignment() {
    while (out_.size() % kDataAlignment != 0) u8(0);
  }
  std::string& out() { return out_; }

 private:
  std::string out_;
};

// ---- reading ----------------------------------------------------------------

// Reads little-endian fields from the bytes; every read checks the bounds, and
// the first failure sticks (later reads return zeros), so the parser checks
// ok() at the points where a bad value could mislead it.
class Reader {
 public:
  Reader(std::string_view bytes, size_t pos) : b_(bytes), pos_(pos) {}

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  size_t pos() const { return pos_; }
  size_t remaining() const { return ok_ ? b_.size() - pos_ : 0; }

  void fail(const std::string& what) {
    if (ok_) error_ = what + " (at byte " + std::to_string(pos_) + ")";
    ok_ = false;
  }
  bool need(size_t n, const char* what) {
    if (!ok_) return false;
    if (b_.size() - pos_ < n) {
      fail(std::string("truncated: ") + what + " needs " + std::to_string(n) + " bytes, " +
           std::to_string(b_.size() - pos_) + " left");
      return false;
    }
    return true;
  }
  uint64_t uint(int n, const char* what) {
    if (!need(static_cast<size_t>(n), what)) return 0;
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(b_[pos_ + i])) << (8 * i);
    pos_ += static_cast<size_t>(n);
    return v;
  }
  uint8_t u8(const char* what) { return static_cast<uint8_t>(uint(1, what)); }
  uint32_t u32(const char* what) { return static_cast<uint32_t>(uint(4, what)); }
  uint64_t u64(const char* what) { return uint(8, what); }
  int32_t i32(const char* what) { return static_cast<int32_t>(u32(what)); }
  int64_t i64(const char* what) { return static_cast<int64_t>(u64(what)); }
  std::string_view bytes(uint64_t n, const char* what) {
    if (n > std::numeric_limits<size_t>::max() || !need(static_cast<size_t>(n), what)) return {};
    std::string_view v = b_.substr(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return v;
  }
  std::string str(const char* what) {
    const uint32_t n = u32(what);
    return std::string(bytes(n, what));
  }
  // A count of elements each at least `min_bytes` long must fit in what is left,
  // so a corrupted count cannot make the parser reserve gigabytes.
  uint32_t count(uint64_t min_bytes, const char* what) {
    const uint32_t n = u32(what);
    if (ok_ && n * min_bytes > remaining()) {
      fail(std::string("truncated: ") + std::to_string(n) + " " + what + " cannot fit in " +
           std::to_string(remaining()) + " bytes");
      return 0;
    }
    return n;
  }
  void skip_padding() {
    while (ok_ && pos_ % kDataAlignment != 0) {
      if (u8("padding") != 0) fail("non-zero padding byte");
    }
  }

 private:
  std::string_view b_;
  size_t pos_;
  bool ok_ = true;
  std::string error_;
};

void read_values(Reader& r, PackageContents* c) {
  // Smallest value: empty name (4) + kind/dtype (4) + ndim (4).
  const uint32_t n = r.count(12, "values");
  c->values.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    PackageValue v;
    v.name = r.str("value name");
    const uint8_t kind = r.u8("value kind");
    const uint8_t code = r.u8("dtype code");
    const uint8_t bits = r.u8("dtype bits");
    const uint8_t reserved = r.u8("reserved byte");
    const uint32_t ndim = r.u32("ndim");
    if (!r.ok()) return;
    if (kind > static_cast<uint8_t>(ValueKind::kIntermediate)) {
      return r.fail("value " + std::to_string(i) + ": unknown kind " + std::to_string(kind));
    }
    if (reserved != 0) return r.fail("value " + std::to_string(i) + ": reserved byte is not 0");
    if (ndim > static_cast<uint32_t>(kPackageMaxDims)) {
      return r.fail("value " + std::to_string(i) + ": " + std::to_string(ndim) + " dimensions, more than " +
                    std::to_string(kPackageMaxDims));
    }
    v.kind = static_cast<ValueKind>(kind);
    v.dtype = DType(static_cast<TypeCode>(code), bits);
    for (uint32_t d = 0; d < ndim; ++d) v.shape.push_back(r.i64("dimension"));
    c->values.push_back(std::move(v));
  }
}

void read_calls(Reader& r, PackageContents* c, uint32_t version) {
  const uint32_t n = r.count(8, "calls");  // empty symbol (4) + nargs (4)
  c->calls.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    KernelCall call;
    call.symbol = r.str("call symbol");
    const uint32_t nargs = r.count(4, "call arguments");
    call.args.reserve(nargs);
    for (uint32_t a = 0; a < nargs && r.ok(); ++a) call.args.push_back(r.i32("argument id"));
    if (version >= 5) {
      const uint8_t kind = r.u8("call kind");
      if (r.ok() && kind > static_cast<uint8_t>(CallKind::kJump))
        return r.fail("call " + std::to_string(i) + ": unknown kind " + std::to_string(kind));
      call.kind = static_cast<CallKind>(kind);
      call.target = r.i32("call target");
    }
    c->calls.push_back(std::move(call));
  }
}

std::vector<int32_t> read_id_list(Reader& r, const char* what) {
  std::vector<int32_t> ids(r.count(4, what));
  for (int32_t& id : ids) id = r.i32(what);
  return ids;
}

// Format 2: the external modules, three strings each.
void read_externals(Reader& r, PackageContents* c) {
  const uint32_t n = r.count(12, "external modules");
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    ExternalModule m;
    m.backend = r.str("external backend");
    m.kind = r.str("external kind");
    m.library = r.str("external library");
    c->externals.push_back(std::move(m));
  }
}

// Format 3: the graph payloads, four strings each.
void read_payloads(Reader& r, PackageContents* c) {
  const uint32_t n = r.count(16, "external payloads");
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    ExternalPayload p;
    p.backend = r.str("payload backend");
    p.version = r.str("payload version");
    p.symbol = r.str("payload symbol");
    p.data = r.str("payload data");
    c->payloads.push_back(std::move(p));
  }
}

// Header flag kPackageFlagCallInfo: one entry per call, each at least
// name (4) + node count (4) + key (4) + flops (8) + outputs (4) bytes.
void read_call_info(Reader& r, PackageContents* c) {
  const uint32_t n = r.count(24, "call metadata entries");
  if (r.ok() && n != c->calls.size()) {
    return r.fail("call metadata has " + std::to_string(n) + " entries for " + std::to_string(c->calls.size()) +
                  " calls");
  }
  c->call_info.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    CallInfo info;
    info.name = r.str("call name");
    const uint32_t nodes = r.count(4, "call nodes");
    for (uint32_t k = 0; k < nodes && r.ok(); ++k) info.nodes.push_back(r.str("node name"));
    info.workload_key = r.str("workload key");
    const uint64_t bits = r.u64("flops");
    std::memcpy(&info.flops, &bits, sizeof bits);
    info.num_outputs = r.u32("call outputs");
    c->call_info.push_back(std::move(info));
  }
}

// How a constant's bytes are stored (format 4 writes it): as its dtype, or
// a float32 constant whose every value is a float16 (a bfloat16) in half the
// bytes, widened as it is read. A float16 model's weights, widened to
// float32 at import, go back to the package at their own size.
enum class Storage : uint8_t { kAsIs = 0, kFloat16 = 1, kBfloat16 = 2 };

// The narrowest storage that holds `v` exactly.
Storage narrowest_storage(const PackageValue& v) {
  constexpr size_t kMinBytes = 64;  // a scalar or a bias is not worth a format 4
  if (v.kind != ValueKind::kConstant || v.dtype != DType::f32() || v.data.size() < kMinBytes) return Storage::kAsIs;
  bool half = true, bfloat = true;
  for (size_t at = 0; at + 4 <= v.data.size() && (half || bfloat); at += 4) {
    uint32_t bits = 0;
    float x = 0;
    std::memcpy(&bits, v.data.data() + at, 4);
    std::memcpy(&x, &bits, 4);
    const float back = half_to_float(float_to_half(x));
    half = half && std::memcmp(&back, &x, 4) == 0;
    bfloat = bfloat && (bits & 0xffffu) == 0;
  }
  return half ? Storage::kFloat16 : bfloat ? Storage::kBfloat16 : Storage::kAsIs;
}

// `data` (float32) as stored: two bytes a value.
std::string narrowed(const std::string& data, Storage storage) {
  std::string out(data.size() / 2, '\0');
  for (size_t i = 0; i < data.size() / 4; ++i) {
    float x = 0;
    std::memcpy(&x, data.data() + 4 * i, 4);
    const uint16_t h = storage == Storage::kFloat16 ? float_to_half(x) : float_to_bfloat16(x);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

// Stored halves widened back to float32.
std::string widened(std::string_view stored, Storage storage) {
  std::string out(stored.size() * 2, '\0');
  for (size_t i = 0; i < stored.size() / 2; ++i) {
    uint16_t h = 0;
    std::memcpy(&h, stored.data() + 2 * i, 2);
    const float x = storage == Storage::kFloat16 ? half_to_float(h) : bfloat16_to_float(h);
    std::memcpy(out.data() + 4 * i, &x, 4);
  }
  return out;
}

// Constants come as (id, [storage,] nbytes, padding, bytes), ids strictly
// increasing; the storage byte from format 4.
void read_constants(Reader& r, PackageContents* c, uint32_t version) {
  const uint32_t n = r.count(12, "constants");
  int64_t previous = -1;
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    const int32_t id = r.i32("constant id");
    const uint8_t storage_code = version >= 4 ? r.u8("constant storage") : 0;
    const uint64_t nbytes = r.u64("constant size");
    if (!r.ok()) return;
    if (id <= previous || static_cast<size_t>(id) >= c->values.size()) {
      return r.fail("constant " + std::to_string(i) + ": value id " + std::to_string(id) +
                    " out of range or out of order");
    }
    previous = id;
    PackageValue& v = c->values[static_cast<size_t>(id)];
    if (v.kind != ValueKind::kConstant) {
      return r.fail("constant " + std::to_string(i) + ": value " + std::to_string(id) + " is of kind " +
                    value_kind_name(v.kind));
    }
    if (storage_code > 2 || (storage_code != 0 && v.dtype != DType::f32())) {
      return r.fail("constant value " + std::to_string(id) + " has storage " + std::to_string(storage_code) +
                    (storage_code > 2 ? " (unknown)" : " for a " + v.dtype.to_string() + " value"));
    }
    const auto storage = static_cast<Storage>(storage_code);
    const int64_t want = storage == Storage::kAsIs || v.nbytes() < 0 ? v.nbytes() : v.nbytes() / 2;
    if (static_cast<int64_t>(nbytes) != want || nbytes > (uint64_t{1} << 62)) {
      return r.fail("constant value " + std::to_string(id) + " has " + std::to_string(nbytes) +
                    " bytes, its shape and dtype need " + std::to_string(want));
    }
    r.skip_padding();
    const std::string_view stored = r.bytes(nbytes, "constant bytes");
    v.data = storage == Storage::kAsIs ? std::string(stored) : widened(stored, storage);
  }
}

Status validate_call_info(const PackageContents& c) {
  if (c.call_info.empty()) return Status::ok();
  if (c.call_info.size() != c.calls.size()) {
    return Status(ErrorCode::kParseError, "call metadata has " + std::to_string(c.call_info.size()) + " entries for " +
                                              std::to_string(c.calls.size()) + " calls");
  }
  for (size_t i = 0; i < c.calls.size(); ++i) {
    const CallInfo& info = c.call_info[i];
    if (info.num_outputs > c.calls[i].args.size() || !(info.flops >= 0)) {
      return Status(ErrorCode::kParseError, "call " + std::to_string(i) + " ('" + c.calls[i].symbol +
                                                "'): metadata claims " + std::to_string(info.num_outputs) +
                                                " outputs of " + std::to_string(c.calls[i].args.size()) +
                                                " arguments, or negative flops");
    }
  }
  return Status::ok();
}

// A control step's arguments and target (its ids already in range).
Status validate_control_step(const PackageContents& c, size_t i, const std::string& what) {
  const KernelCall& call = c.calls[i];
  const auto bad = [&](const std::string& why) { return Status(ErrorCode::kParseError, what + ": " + why); };
  const auto value = [&](size_t a) -> const PackageValue& { return c.values[static_cast<size_t>(call.args[a])]; };
  const size_t want = call.kind == CallKind::kCopy         ? 2
                      : call.kind == CallKind::kCopySlice  ? 3
                      : call.kind == CallKind::kJumpUnless ? 1
                                                           : 0;
  if (call.args.size() != want)
    return bad("takes " + std::to_string(want) + " arguments, has " + std::to_string(call.args.size()));
  if (!call.symbol.empty()) return bad("a control step names no symbol");
  const bool jumps = call.kind == CallKind::kJumpUnless || call.kind == CallKind::kJump;
  if (!jumps && call.target != 0) return bad("only a jump has a target");
  if (jumps && (call.target < 0 || static_cast<size_t>(call.target) > c.calls.size()))
    return bad("target " + std::to_string(call.target) + " is out of range [0, " + std::to_string(c.calls.size()) +
               "]");
  if (call.kind == CallKind::kCopy && value(0).nbytes() != value(1).nbytes())
    return bad("copies " + std::to_string(value(0).nbytes()) + " bytes into " + std::to_string(value(1).nbytes()));
  if (call.kind == CallKind::kCopySlice) {
    const int64_t part = value(0).nbytes(), whole = value(1).nbytes();
    if (part <= 0 || whole % part != 0)
      return bad(std::to_string(whole) + " bytes do not hold whole slices of " + std::to_string(part));
    if (value(2).dtype != DType::i64() || !value(2).shape.empty()) return bad("its index is not an int64 scalar");
  }
  if (call.kind == CallKind::kJumpUnless && (value(0).dtype.storage_bytes() != 1 || value(0).nbytes() != 1))
    return bad("its condition is not a one-byte scalar");
  if ((call.kind == CallKind::kCopy || call.kind == CallKind::kCopySlice) &&
      (value(1).kind == ValueKind::kConstant || value(1).kind == ValueKind::kInput))
    return bad("it writes " + std::string(value_kind_name(value(1).kind)) + " value " + std::to_string(call.args[1]));
  return Status::ok();
}

}  // namespace

const char* value_kind_name(ValueKind kind) {
  switch (kind) {
    case ValueKind::kInput: return "input";
    case ValueKind::kOutput: return "output";
    case ValueKind::kConstant: return "constant";
    case ValueKind::kIntermediate: return "intermediate";
  }
  return "unknown";
}

const char* call_kind_name(CallKind kind) {
  switch (kind) {
    case CallKind::kKernel: return "kernel";
    case CallKind::kCopy: return "copy";
    case CallKind::kCopySlice: return "copy_slice";
    case CallKind::kJumpUnless: return "jump_unless";
    case CallKind::kJump: return "jump";
  }
  return "unknown";
}

int64_t PackageValue::nbytes() const {
  int64_t n = dtype.storage_bytes();
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

uint32_t package_crc32(std::string_view bytes) {
  static constexpr auto kTable = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xFFFFFFFFu;
  for (char ch : bytes) crc = kTable[(crc ^ static_cast<uint8_t>(ch)) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

Status validate_package(const PackageContents& c) {
  if (c.values.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return Status(ErrorCode::kParseError, "too many values");
  }
  for (size_t i = 0; i < c.values.size(); ++i) {
    const PackageValue& v = c.values[i];
    const std::string what = describe_value(c, static_cast<int64_t>(i));
    if (!dtype_storable(v.dtype)) {
      return Status(ErrorCode::kParseError, what + ": dtype " + v.dtype.to_string() + " cannot be stored (code " +
                                                std::to_string(static_cast<int>(v.dtype.code)) + ", " +
                                                std::to_string(v.dtype.bits) + " bits)");
    }
    if (v.shape.size() > static_cast<size_t>(kPackageMaxDims)) {
      return Status(ErrorCode::kParseError, what + ": more than " + std::to_string(kPackageMaxDims) + " dimensions");
    }
    if (v.nbytes() < 0) {
      return Status(ErrorCode::kParseError, what + ": negative dimension or size overflow");
    }
    if (v.kind == ValueKind::kConstant && static_cast<int64_t>(v.data.size()) != v.nbytes()) {
      return Status(ErrorCode::kParseError, what + ": constant has " + std::to_string(v.data.size()) + " bytes, " +
                                                v.dtype.to_string() + " of its shape needs " +
                                                std::to_string(v.nbytes()));
    }
    if (v.kind != ValueKind::kConstant && !v.data.empty()) {
      return Status(ErrorCode::kParseError, what + ": a " + value_kind_name(v.kind) + " value carries data");
    }
  }
  for (size_t i = 0; i < c.calls.size(); ++i) {
    const KernelCall& call = c.calls[i];
    const std::string what = "call " + std::to_string(i) + " ('" +
                             (call.kind == CallKind::kKernel ? call.symbol : call_kind_name(call.kind)) + "')";
    if (call.kind == CallKind::kKernel && (call.symbol.empty() || call.symbol.find('\0') != std::string::npos)) {
      return Status(ErrorCode::kParseError, "call " + std::to_string(i) + ": empty or invalid symbol");
    }
    for (size_t a = 0; a < call.args.size(); ++a) {
      const int32_t id = call.args[a];
      if (id < 0 || static_cast<size_t>(id) >= c.values.size()) {
        return Status(ErrorCode::kParseError, what + ": argument " + std::to_string(a) + " is value " +
                                                  std::to_string(id) + ", out of range [0, " +
                                                  std::to_string(c.values.size()) + ")");
      }
    }
    if (call.kind != CallKind::kKernel) TESSERA_RETURN_IF_ERROR(validate_control_step(c, i, what));
  }
  for (size_t i = 0; i < c.externals.size(); ++i) {
    const ExternalModule& m = c.externals[i];
    for (const std::string* field : {&m.backend, &m.kind, &m.library})
      if (field->empty() || field->find('\0') != std::string::npos)
        return Status(ErrorCode::kParseError, "external module " + std::to_string(i) + " ('" + m.backend +
                                                  "'): empty or invalid backend, kind or library");
    // A package names the libraries it needs, never where to load them from:
    // a path would make every loader run code from any file it names.
    if (m.library.find('/') != std::string::npos)
      return Status(ErrorCode::kParseError, "external module " + std::to_string(i) + " ('" + m.backend +
                                                "'): library '" + m.library +
                                                "' is a path; a package names a library by its file name (a "
                                                "backend's module is looked for next to the runtime only)");
  }
  TESSERA_RETURN_IF_ERROR(validate_call_info(c));
  std::set<std::string> payload_symbols;
  for (size_t i = 0; i < c.payloads.size(); ++i) {
    const ExternalPayload& p = c.payloads[i];
    const std::string what = "external payload " + std::to_string(i) + " ('" + p.symbol + "')";
    if (p.backend.empty() || p.symbol.empty() || p.symbol.find('\0') != std::string::npos)
      return Status(ErrorCode::kParseError, what + ": empty backend or invalid symbol");
    if (!payload_symbols.insert(p.symbol).second) return Status(ErrorCode::kParseError, what + ": symbol given twice");
    const bool listed = std::any_of(c.externals.begin(), c.externals.end(), [&](const ExternalModule& m) {
      return m.backend == p.backend && m.kind == "graph-payload";
    });
    if (!listed)
      return Status(ErrorCode::kParseError,
                    what + ": backend '" + p.backend + "' is not a listed graph-payload module");
  }
  const bool calls_library = std::any_of(c.calls.begin(), c.calls.end(), [&](const KernelCall& call) {
    return call.kind == CallKind::kKernel && payload_symbols.count(call.symbol) == 0;
  });
  if (calls_library && c.library.empty()) {
    return Status(ErrorCode::kParseError, "the graph calls kernels but the package has no library");
  }
  std::set<std::string> names;
  TESSERA_RETURN_IF_ERROR(validate_io_list(c, c.inputs, ValueKind::kInput, &names));
  TESSERA_RETURN_IF_ERROR(validate_io_list(c, c.outputs, ValueKind::kOutput, &names));
  return Status::ok();
}

Result<std::string> write_package_bytes(const PackageContents& c) {
  TESSERA_RETURN_IF_ERROR(validate_package(c).with_context("invalid package"));
  Writer w;
  w.bytes(std::string_view(kPackageMagic, sizeof(kPackageMagic)));
  std::vector<Storage> storage;
  bool narrowed_any = false;
  for (const PackageValue& v : c.values) {
    storage.push_back(narrowest_storage(v));
    narrowed_any = narrowed_any || storage.back() != Storage::kAsIs;
  }
  const bool control = std::any_of(c.calls.begin(), c.calls.end(),
                                   [](const KernelCall& call) { return call.kind != CallKind::kKernel; });
  const uint32_t version = control ? 5 : narrowed_any ? 4 : !c.payloads.empty() ? 3 : c.externals.empty() ? 1 : 2;
  w.u32(version);
  w.u32(c.call_info.empty() ? 0 : kPackageFlagCallInfo);
  w.u64(0);  // payload size, patched below
  w.u32(0);  // payload CRC-32, patched below
  w.u32(0);  // reserved
  w.str(c.target);
  w.u32(static_cast<uint32_t>(c.values.size()));
  for (const PackageValue& v : c.values) {
    w.str(v.name);
    w.u8(static_cast<uint8_t>(v.kind));
    w.u8(static_cast<uint8_t>(v.dtype.code));
    w.u8(v.dtype.bits);
    w.u8(0);
    w.u32(static_cast<uint32_t>(v.shape.size()));
    for (int64_t d : v.shape) w.i64(d);
  }
  w.u32(static_cast<uint32_t>(c.calls.size()));
  for (const KernelCall& call : c.calls) {
    w.str(call.symbol);
    w.u32(static_cast<uint32_t>(call.args.size()));
    for (int32_t id : call.args) w.i32(id);
    if (version >= 5) {
      w.u8(static_cast<uint8_t>(call.kind));
      w.i32(call.target);
    }
  }
  for (const auto* list : {&c.inputs, &c.outputs}) {
    w.u32(static_cast<uint32_t>(list->size()));
    for (int32_t id : *list) w.i32(id);
  }
  if (version >= 2) {
    w.u32(static_cast<uint32_t>(c.externals.size()));
    for (const ExternalModule& m : c.externals) {
      w.str(m.backend);
      w.str(m.kind);
      w.str(m.library);
    }
  }
  if (version >= 3) {
    w.u32(static_cast<uint32_t>(c.payloads.size()));
    for (const ExternalPayload& p : c.payloads) {
      w.str(p.backend);
      w.str(p.version);
      w.str(p.symbol);
      w.str(p.data);
    }
  }
  if (!c.call_info.empty()) {
    w.u32(static_cast<uint32_t>(c.call_info.size()));
    for (const CallInfo& info : c.call_info) {
      w.str(info.name);
      w.u32(static_cast<uint32_t>(info.nodes.size()));
      for (const std::string& node : info.nodes) w.str(node);
      w.str(info.workload_key);
      uint64_t bits = 0;
      std::memcpy(&bits, &info.flops, sizeof bits);
      w.u64(bits);
      w.u32(info.num_outputs);
    }
  }
  uint32_t num_constants = 0;
  for (const PackageValue& v : c.values) num_constants += v.kind == ValueKind::kConstant;
  w.u32(num_constants);
  for (size_t i = 0; i < c.values.size(); ++i) {
    const PackageValue& v = c.values[i];
    if (v.kind != ValueKind::kConstant) continue;
    w.i32(static_cast<int32_t>(i));
    if (version >= 4) w.u8(static_cast<uint8_t>(storage[i]));
    const std::string stored = storage[i] == Storage::kAsIs ? std::string() : narrowed(v.data, storage[i]);
    const std::string& bytes = storage[i] == Storage::kAsIs ? v.data : stored;
    w.u64(bytes.size());
    w.pad_to_alignment();
    w.bytes(bytes);
  }
  w.u64(c.library.size());
  w.pad_to_alignment();
  w.bytes(c.library);

  std::string& out = w.out();
  const std::string_view payload = std::string_view(out).substr(kPackageHeaderBytes);
  const uint64_t payload_size = payload.size();
  const uint32_t crc = package_crc32(payload);
  for (int i = 0; i < 8; ++i) out[16 + i] = static_cast<char>(payload_size >> (8 * i));
  for (int i = 0; i < 4; ++i) out[24 + i] = static_cast<char>(crc >> (8 * i));
  return std::move(out);
}

Status write_package(const PackageContents& contents, const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(std::string bytes, write_package_bytes(contents));
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) return Status(ErrorCode::kIOError, "cannot create " + temp + ": " + std::strerror(errno));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      std::remove(temp.c_str());
      return Status(ErrorCode::kIOError, "cannot write package " + temp);
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(temp.c_str());
    return Status(ErrorCode::kIOError, "cannot rename " + temp + " to " + path + ": " + reason);
  }
  return Status::ok();
}

Result<PackageContents> read_package_bytes(std::string_view bytes, const std::string& source) {
  if (bytes.size() < static_cast<size_t>(kPackageHeaderBytes)) {
    return parse_error(
        source, "truncated: " + std::to_string(bytes.size()) + " bytes, shorter than the 32-byte package header");
  }
  if (std::memcmp(bytes.data(), kPackageMagic, sizeof(kPackageMagic)) != 0) {
    // An ONNX model (a protobuf whose first field is ir_version, 0x08) given
    // where its compiled package belongs: say what to run.
    const bool onnx = bytes[0] == '\x08' || (source.size() > 5 && source.compare(source.size() - 5, 5, ".onnx") == 0);
    if (onnx)
      return parse_error(source, "an ONNX model, not a compiled package: compile it first (tessera compile " + source +
                                     " -o MODEL.tsr) and run the package");
    return parse_error(source, "not a Tessera package (bad magic; expected \"TSRPKG01\")");
  }
  Reader h(bytes, sizeof(kPackageMagic));
  const uint32_t version = h.u32("version");
  const uint32_t flags = h.u32("flags");
  const uint64_t payload_size = h.u64("payload size");
  const uint32_t crc = h.u32("checksum");
  const uint32_t reserved = h.u32("reserved");
  if (version > kPackageFormatVersion) {
    return parse_error(source, "format version " + std::to_string(version) + " is newer than this runtime reads (" +
                                   std::to_string(kPackageFormatVersion) + ")");
  }
  if (version == 0) return parse_error(source, "format version 0 is invalid");
  if ((flags & ~kPackageFlagCallInfo) != 0 || reserved != 0) return parse_error(source, "unknown header flags");
  const uint64_t actual = bytes.size() - kPackageHeaderBytes;
  if (payload_size != actual) {
    return parse_error(source, (payload_size > actual ? "truncated: " : "trailing bytes: ") +
                                   std::string("header announces ") + std::to_string(payload_size) +
                                   " payload bytes, file has " + std::to_string(actual));
  }
  if (package_crc32(bytes.substr(kPackageHeaderBytes)) != crc) {
    return parse_error(source, "checksum mismatch: the file is corrupted");
  }

  PackageContents c;
  Reader r(bytes, kPackageHeaderBytes);
  c.target = r.str("target");
  read_values(r, &c);
  read_calls(r, &c, version);
  c.inputs = read_id_list(r, "inputs");
  c.outputs = read_id_list(r, "outputs");
  if (version >= 2) read_externals(r, &c);
  if (version >= 3) read_payloads(r, &c);
  if (flags & kPackageFlagCallInfo) read_call_info(r, &c);
  read_constants(r, &c, version);
  const uint64_t library_size = r.u64("library size");
  r.skip_padding();
  c.library = std::string(r.bytes(library_size, "library bytes"));
  if (r.ok() && r.remaining() != 0) {
    r.fail(std::to_string(r.remaining()) + " unexpected bytes after the library");
  }
  if (!r.ok()) return parse_error(source, r.error());
  Status valid = validate_package(c);
  if (!valid.is_ok()) return valid.with_context(source);
  return c;
}

Result<PackageContents> read_package(const std::string& path) {
  if (::access(path.c_str(), F_OK) != 0) {
    return Status(ErrorCode::kNotFound, "no package file " + path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(ErrorCode::kIOError, "cannot open " + path + ": " + std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Status(ErrorCode::kIOError, "cannot read " + path);
  return read_package_bytes(bytes, path);
}

}  // namespace tessera::runtime
