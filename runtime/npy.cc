// The .npy format (numpy's NEP 1): magic "\x93NUMPY", version, header length,
// a Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded so the data starts on a 64-byte boundary, then the raw elements.
#include <sys/stat.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "runtime/ndarray.h"

namespace tessera::runtime {
namespace {

static_assert(std::endian::native == std::endian::little,
              ".npy data is read in place: the runtime supports little-endian hosts only");

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr size_t kHeaderAlignment = 64;

struct NpyHeader {
  DType dtype;
  std::vector<int64_t> shape;
  size_t data_offset = 0;  // bytes before the first element
};

Status parse_error(const std::string& source, const std::string& what) {
  return Status(ErrorCode::kParseError, source + ": " + what);
}

// The header dict, as numpy writes it (any key order, either quote style, an
// optional trailing comma, Python 2's "3L" integers).
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  Result<NpyHeader> parse() {
    NpyHeader header;
    bool have_descr = false, have_order = false, have_shape = false;
    std::string descr;
    bool fortran_order = false;
    TESSERA_RETURN_IF_ERROR(expect('{'));
    while (!peek_is('}')) {
      TESSERA_ASSIGN_OR_RETURN(std::string key, parse_string());
      TESSERA_RETURN_IF_ERROR(expect(':'));
      if (key == "descr" && !have_descr) {
        TESSERA_ASSIGN_OR_RETURN(descr, parse_string());
        have_descr = true;
      } else if (key == "fortran_order" && !have_order) {
        TESSERA_ASSIGN_OR_RETURN(fortran_order, parse_bool());
        have_order = true;
      } else if (key == "shape" && !have_shape) {
        TESSERA_ASSIGN_OR_RETURN(header.shape, parse_shape());
        have_shape = true;
      } else {
        return error("unexpected or repeated key '" + key + "' in the header");
      }
      if (!peek_is('}')) TESSERA_RETURN_IF_ERROR(expect(','));
    }
    TESSERA_RETURN_IF_ERROR(expect('}'));
    if (!have_descr || !have_order || !have_shape) {
      return error("header lacks one of 'descr', 'fortran_order', 'shape'");
    }
    if (fortran_order) {
      return Status(ErrorCode::kInvalidArgument, source_ + ": Fortran-order arrays are not supported; save in C order");
    }
    TESSERA_ASSIGN_OR_RETURN(header.dtype, dtype_of_descr(descr));
    return header;
  }

 private:
  Status error(const std::string& what) const {
    return parse_error(source_, what + " (header offset " + std::to_string(pos_) + ")");
  }
  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool peek_is(char c) {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  Status expect(char c) {
    if (!peek_is(c)) return error(std::string("expected '") + c + "'");
    ++pos_;
    return Status::ok();
  }
  Result<std::string> parse_string() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) {
      return error("expected a quoted string");
    }
    const char quote = text_[pos_++];
    const size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) return error("unterminated string");
    std::string s(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  Result<bool> parse_bool() {
    skip_space();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      const size_t n = std::strlen(word);
      if (text_.substr(pos_, n) == word) {
        pos_ += n;
        return value;
      }
    }
    return error("expected True or False");
  }
  Result<std::vector<int64_t>> parse_shape() {
    std::vector<int64_t> shape;
    TESSERA_RETURN_IF_ERROR(expect('('));
    while (!peek_is(')')) {
      if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') {
        return error("expected a non-negative dimension in 'shape'");
      }
      int64_t dim = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        if (__builtin_mul_overflow(dim, 10, &dim) || __builtin_add_overflow(dim, text_[pos_] - '0', &dim)) {
          return error("dimension in 'shape' overflows int64");
        }
        ++pos_;
      }
      if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;
      shape.push_back(dim);
      if (!peek_is(')')) TESSERA_RETURN_IF_ERROR(expect(','));
    }
    TESSERA_RETURN_IF_ERROR(expect(')'));
    return shape;
  }
  Result<DType> dtype_of_descr(const std::string& descr) const {
    static const struct {
      const char* kind_size;
      DType dtype;
    } kTypes[] = {
        {"f2", DType::f16()},
        {"f4", DType::f32()},
        {"f8", DType::f64()},
        {"i1", DType::i8()},
        {"i2", DType(TypeCode::kInt, 16)},
        {"i4", DType::i32()},
        {"i8", DType::i64()},
        {"u1", DType::u8()},
        {"u2", DType(TypeCode::kUInt, 16)},
        {"u4", DType(TypeCode::kUInt, 32)},
        {"u8", DType(TypeCode::kUInt, 64)},
        {"b1", DType::boolean()},
    };
    const std::string unsupported = source_ + ": unsupported dtype '" + descr + "'";
    if (descr.size() != 3 || std::strchr("<>|=", descr[0]) == nullptr) {
      return Status(ErrorCode::kInvalidArgument,
                    unsupported + " (supported: float16/32/64, int8/16/32/64, uint8/16/32/64, bool)");
    }
    for (const auto& type : kTypes) {
      if (descr.compare(1, 2, type.kind_size) != 0) continue;
      if (descr[0] == '>' && type.dtype.storage_bytes() > 1) {
        return Status(ErrorCode::kInvalidArgument, unsupported + " (big-endian)");
      }
      return type.dtype;
    }
    return Status(ErrorCode::kInvalidArgument,
                  unsupported + " (supported: float16/32/64, int8/16/32/64, uint8/16/32/64, bool)");
  }

  std::string_view text_;
  const std::string& source_;
  size_t pos_ = 0;
};

// How long the header is: needs the first 12 bytes (or fewer for version 1).
Result<size_t> npy_data_offset(std::string_view prefix, const std::string& source) {
  if (prefix.size() < kMagicSize || prefix.substr(0, kMagicSize) != std::string_view(kMagic)) {
    return parse_error(source, "not a .npy file (bad magic)");
  }
  if (prefix.size() < 10) return parse_error(source, "truncated .npy preamble");
  const auto byte = [&](size_t i) { return static_cast<size_t>(static_cast<uint8_t>(prefix[i])); };
  const int major = static_cast<int>(byte(6));
  if (major == 1) return 10 + (byte(8) | byte(9) << 8);
  if (major == 2 || major == 3) {
    if (prefix.size() < 12) return parse_error(source, "truncated .npy preamble");
    return 12 + (byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24);
  }
  return parse_error(source,
                     "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(byte(7)));
}

// `bytes` holds at least the whole header (npy_data_offset bytes).
Result<NpyHeader> parse_npy_header(std::string_view bytes, const std::string& source) {
  TESSERA_ASSIGN_OR_RETURN(size_t data_offset, npy_data_offset(bytes, source));
  if (bytes.size() < data_offset) return parse_error(source, "truncated .npy header");
  const size_t header_start = bytes[6] == 1 ? 10 : 12;
  HeaderParser parser(bytes.substr(header_start, data_offset - header_start), source);
  TESSERA_ASSIGN_OR_RETURN(NpyHeader header, parser.parse());
  header.data_offset = data_offset;
  return header;
}

Status check_data_size(size_t have, int64_t want, const std::string& source) {
  if (have == static_cast<size_t>(want) || have == SIZE_MAX) return Status::ok();  // MAX: unknown
  return parse_error(source, std::string(have < static_cast<size_t>(want) ? "truncated" : "over-long") +
                                 " data: expected " + std::to_string(want) + " bytes, found " + std::to_string(have));
}

// Checks the data size the header declares against what is there before
// allocating, so a corrupt shape cannot ask for terabytes.
Result<NDArray> create_for(const NpyHeader& header, size_t data_available, const std::string& source) {
  int64_t want = header.dtype.storage_bytes();
  for (int64_t dim : header.shape) {
    if (__builtin_mul_overflow(want, dim, &want)) return parse_error(source, "shape too large");
  }
  TESSERA_RETURN_IF_ERROR(check_data_size(data_available, want, source));
  auto array = NDArray::create(header.shape, header.dtype);
  if (!array.is_ok()) return array.status().with_context(source);
  return array;
}

Result<std::string> descr_of(DType dtype) {
  if (dtype.lanes == 1) {
    const char* kind = nullptr;
    switch (dtype.code) {
      case TypeCode::kFloat: kind = "f"; break;
      case TypeCode::kInt: kind = "i"; break;
      case TypeCode::kUInt: kind = dtype.bits == 1 ? "b" : "u"; break;
      default: break;
    }
    if (kind != nullptr) {
      const int size = dtype.storage_bytes();
      return std::string(size == 1 ? "|" : "<") + kind + std::to_string(size);
    }
  }
  return Status(ErrorCode::kInvalidArgument, "cannot save " + dtype.to_string() + " as .npy: numpy has no such dtype");
}

// The preamble and header numpy writes: version 1.0 unless the header is too long.
Result<std::string> npy_header_bytes(const NDArray& array) {
  TESSERA_ASSIGN_OR_RETURN(std::string descr, descr_of(array.dtype()));
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < array.shape().size(); ++i) {
    if (i > 0) dict += ", ";
    dict += std::to_string(array.shape()[i]);
  }
  dict += array.shape().size() == 1 ? ",), }" : "), }";
  size_t preamble = 10;
  size_t total = (preamble + dict.size() + 1 + kHeaderAlignment - 1) / kHeaderAlignment * kHeaderAlignment;
  if (total - preamble > 0xffff) {
    preamble = 12;
    total = (preamble + dict.size() + 1 + kHeaderAlignment - 1) / kHeaderAlignment * kHeaderAlignment;
  }
  const size_t header_len = total - preamble;
  std::string out(kMagic, kMagicSize);
  out += static_cast<char>(preamble == 10 ? 1 : 2);
  out += '\0';
  for (size_t i = 0; i < preamble - 8; ++i) out += static_cast<char>((header_len >> (8 * i)) & 0xff);
  out += dict;
  out.append(total - out.size() - 1, ' ');
  out += '\n';
  return out;
}

}  // namespace

Result<NDArray> parse_npy(std::string_view bytes, const std::string& source) {
  TESSERA_ASSIGN_OR_RETURN(NpyHeader header, parse_npy_header(bytes, source));
  TESSERA_ASSIGN_OR_RETURN(NDArray array, create_for(header, bytes.size() - header.data_offset, source));
  if (array.nbytes() > 0) {
    std::memcpy(array.raw_data(), bytes.data() + header.data_offset, static_cast<size_t>(array.nbytes()));
  }
  return array;
}

Result<NDArray> load_npy(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    const int err = errno;
    return Status(err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIOError,
                  path + ": cannot open: " + std::strerror(err));
  }
  struct Closer {
    std::FILE* f;
    ~Closer() { std::fclose(f); }
  } closer{file};

  // Read the preamble, then the rest of the header, then the data in place.
  std::string header(12, '\0');
  header.resize(std::fread(header.data(), 1, header.size(), file));
  TESSERA_ASSIGN_OR_RETURN(size_t data_offset, npy_data_offset(header, path));
  if (data_offset > header.size()) {
    const size_t have = header.size();
    header.resize(data_offset);
    header.resize(have + std::fread(header.data() + have, 1, data_offset - have, file));
  }
  TESSERA_ASSIGN_OR_RETURN(NpyHeader parsed, parse_npy_header(header, path));
  struct stat info;
  const bool sized = fstat(fileno(file), &info) == 0 && S_ISREG(info.st_mode) &&
                     static_cast<size_t>(info.st_size) >= parsed.data_offset;
  TESSERA_ASSIGN_OR_RETURN(
      NDArray array,
      create_for(parsed, sized ? static_cast<size_t>(info.st_size) - parsed.data_offset : static_cast<size_t>(SIZE_MAX),
                 path));
  // The 12-byte preamble read takes data bytes too when the header is tiny.
  size_t have = header.size() - parsed.data_offset;
  const size_t want = static_cast<size_t>(array.nbytes());
  auto* data = static_cast<char*>(array.raw_data());
  std::memcpy(data, header.data() + parsed.data_offset, std::min(have, want));
  if (have < want) have += std::fread(data + have, 1, want - have, file);
  if (have == want) {
    char extra;
    have += std::fread(&extra, 1, 1, file);
  }
  if (std::ferror(file)) return Status(ErrorCode::kIOError, path + ": read failed");
  TESSERA_RETURN_IF_ERROR(check_data_size(have, array.nbytes(), path));
  return array;
}

Result<std::string> to_npy_bytes(const NDArray& array) {
  TESSERA_ASSIGN_OR_RETURN(std::string bytes, npy_header_bytes(array));
  bytes.append(static_cast<const char*>(array.raw_data()), static_cast<size_t>(array.nbytes()));
  return bytes;
}

Status save_npy(const NDArray& array, const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(std::string header, npy_header_bytes(array));
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    return Status(ErrorCode::kIOError, path + ": cannot create: " + std::strerror(errno));
  }
  const size_t n = static_cast<size_t>(array.nbytes());
  bool ok = std::fwrite(header.data(), 1, header.size(), file) == header.size() &&
            (n == 0 || std::fwrite(array.raw_data(), 1, n, file) == n);
  ok = (std::fclose(file) == 0) && ok;
  if (!ok) return Status(ErrorCode::kIOError, path + ": write failed: " + std::strerror(errno));
  return Status::ok();
}

}  // namespace tessera::runtime
