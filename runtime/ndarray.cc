#include "runtime/ndarray.h"

#include <cstring>

#include "base/half.h"

namespace tessera::runtime {
namespace {

// splitmix64: tiny, fast, and the same sequence everywhere (std::*_distribution
// are not specified bit-for-bit across standard libraries).
uint64_t next_random(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Uniform in [-1, 1], both ends included.
float random_float(uint64_t& state) {
  const uint64_t bits = next_random(state) >> 40;  // 24 bits: exact in a float
  return static_cast<float>(bits) / static_cast<float>((1u << 24) - 1) * 2.0f - 1.0f;
}

double random_double(uint64_t& state) {
  const uint64_t bits = next_random(state) >> 11;  // 53 bits: exact in a double
  return static_cast<double>(bits) / static_cast<double>((1ULL << 53) - 1) * 2.0 - 1.0;
}

template <typename T>
void fill_integers(void* data, int64_t n, uint64_t& state, int64_t low, int64_t span) {
  T* out = static_cast<T*>(data);
  for (int64_t i = 0; i < n; ++i) {
    out[i] = static_cast<T>(low + static_cast<int64_t>(next_random(state) % span));
  }
}

Status check_dtype(DType dtype) {
  const bool ok = dtype.lanes == 1 &&
                  ((dtype.code == TypeCode::kFloat && (dtype.bits == 16 || dtype.bits == 32 || dtype.bits == 64)) ||
                   (dtype.code == TypeCode::kBFloat && dtype.bits == 16) ||
                   (dtype.is_integral() &&
                    (dtype.bits == 1 || dtype.bits == 8 || dtype.bits == 16 || dtype.bits == 32 || dtype.bits == 64)));
  if (ok) return Status::ok();
  return Status(ErrorCode::kInvalidArgument, "an NDArray cannot hold elements of type " + dtype.to_string());
}

}  // namespace

Result<NDArray> NDArray::create(std::vector<int64_t> shape, DType dtype) {
  TESSERA_RETURN_IF_ERROR(check_dtype(dtype));
  int64_t numel = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      return Status(ErrorCode::kInvalidArgument,
                    "dimension " + std::to_string(i) + " of an NDArray is negative (" + std::to_string(shape[i]) + ")");
    }
    if (__builtin_mul_overflow(numel, shape[i], &numel)) {
      return Status(ErrorCode::kInvalidArgument, "NDArray shape has too many elements");
    }
  }
  int64_t nbytes = 0;
  if (__builtin_mul_overflow(numel, static_cast<int64_t>(dtype.storage_bytes()), &nbytes) ||
      nbytes > INT64_MAX - kAlignment) {
    return Status(ErrorCode::kInvalidArgument,
                  "NDArray of " + std::to_string(numel) + " elements does not fit in memory");
  }
  // Whole cache lines, at least one: vector code may touch the last line's tail.
  const int64_t allocated = nbytes == 0 ? kAlignment : (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  void* memory = nullptr;
  if (posix_memalign(&memory, kAlignment, static_cast<size_t>(allocated)) != 0) {
    return Status(ErrorCode::kIOError, "cannot allocate " + std::to_string(allocated) + " bytes for an NDArray");
  }
  std::memset(memory, 0, static_cast<size_t>(allocated));
  NDArray array;
  array.dtype_ = dtype;
  array.shape_ = std::move(shape);
  array.numel_ = numel;
  array.data_.reset(static_cast<uint8_t*>(memory));
  return array;
}

Result<NDArray> NDArray::copy() const {
  TESSERA_ASSIGN_OR_RETURN(NDArray out, create(shape_, dtype_));
  if (nbytes() > 0) std::memcpy(out.raw_data(), raw_data(), static_cast<size_t>(nbytes()));
  return out;
}

Status NDArray::copy_from(const NDArray& other) {
  if (other.dtype_ != dtype_ || other.shape_ != shape_) {
    return Status(ErrorCode::kInvalidArgument, "cannot copy " + other.describe() + " into " + describe());
  }
  if (nbytes() > 0) std::memcpy(raw_data(), other.raw_data(), static_cast<size_t>(nbytes()));
  return Status::ok();
}

void NDArray::fill_zero() {
  if (nbytes() > 0) std::memset(raw_data(), 0, static_cast<size_t>(nbytes()));
}

void NDArray::fill_random(uint64_t seed) {
  uint64_t state = seed;
  void* out = raw_data();
  const int64_t n = numel_;
  if (n == 0) return;
  switch (dtype_.code) {
    case TypeCode::kFloat:
      if (dtype_.bits == 32) {
        for (int64_t i = 0; i < n; ++i) static_cast<float*>(out)[i] = random_float(state);
      } else if (dtype_.bits == 64) {
        for (int64_t i = 0; i < n; ++i) static_cast<double*>(out)[i] = random_double(state);
      } else {
        for (int64_t i = 0; i < n; ++i) {
          static_cast<uint16_t*>(out)[i] = float_to_half(random_float(state));
        }
      }
      return;
    case TypeCode::kBFloat:
      for (int64_t i = 0; i < n; ++i) {
        static_cast<uint16_t*>(out)[i] = float_to_bfloat16(random_float(state));
      }
      return;
    case TypeCode::kInt:
    case TypeCode::kUInt: {
      const bool is_signed = dtype_.code == TypeCode::kInt;
      const int64_t low = dtype_.bits == 1 ? 0 : (is_signed ? -64 : 0);
      const int64_t span = dtype_.bits == 1 ? 2 : 128;
      switch (dtype_.storage_bytes()) {
        case 1: fill_integers<uint8_t>(out, n, state, low, span); return;
        case 2: fill_integers<uint16_t>(out, n, state, low, span); return;
        case 4: fill_integers<uint32_t>(out, n, state, low, span); return;
        case 8: fill_integers<uint64_t>(out, n, state, low, span); return;
      }
      return;
    }
    case TypeCode::kHandle: return;  // create() refuses handles
  }
}

std::string NDArray::describe() const {
  std::string s = dtype_.to_string() + "[";
  for (size_t i = 0; i < shape_.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape_[i]);
  }
  return s + "]";
}

std::vector<float> NDArray::to_float32() const {
  std::vector<float> out;
  if (dtype_ == DType::f32()) {
    const float* v = data<float>();
    out.assign(v, v + numel_);
  } else if (dtype_ == DType::f16() || dtype_ == DType::bf16()) {
    const uint16_t* v = data<uint16_t>();
    out.resize(static_cast<size_t>(numel_));
    for (int64_t i = 0; i < numel_; ++i)
      out[i] = dtype_ == DType::f16() ? half_to_float(v[i]) : bfloat16_to_float(v[i]);
  }
  return out;
}

}  // namespace tessera::runtime
