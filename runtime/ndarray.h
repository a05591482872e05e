// NDArray: the owning, dense, C-ordered tensor the runtime hands to kernels,
// and its .npy file format (the model runner's inputs and outputs).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/check.h"
#include "base/dtype.h"
#include "base/status.h"

namespace tessera::runtime {

/// An owning, 64-byte aligned, dense C-order (row-major) tensor of scalar
/// elements. Move-only: copies are explicit (copy()). A default-constructed
/// NDArray is empty: float32, shape {0}, no storage.
class NDArray {
 public:
  /// Byte alignment of the data, enough for any vector load the code generator emits.
  static constexpr int64_t kAlignment = 64;

  NDArray() = default;
  NDArray(NDArray&&) noexcept = default;
  NDArray& operator=(NDArray&&) noexcept = default;
  NDArray(const NDArray&) = delete;
  NDArray& operator=(const NDArray&) = delete;

  /// A zero-filled array. Errors (kInvalidArgument): a negative dimension, a
  /// byte size that overflows int64, a vector or handle dtype. Out of memory is
  /// kIOError.
  static Result<NDArray> create(std::vector<int64_t> shape, DType dtype);

  /// A deep copy with its own storage; kIOError when memory is exhausted.
  Result<NDArray> copy() const;
  /// Copies `other`'s contents into this array; kInvalidArgument unless the
  /// dtypes and shapes are equal.
  Status copy_from(const NDArray& other);

  /// The element type (always scalar).
  DType dtype() const { return dtype_; }
  /// Extent of each dimension, outermost first; empty for a 0-d array.
  const std::vector<int64_t>& shape() const { return shape_; }
  /// Number of dimensions.
  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  /// Number of elements: the product of the shape (1 for a 0-d array).
  int64_t numel() const { return numel_; }
  /// Bytes of data: numel() * dtype().storage_bytes() (bool takes one byte).
  int64_t nbytes() const { return numel_ * dtype_.storage_bytes(); }

  /// The data, 64-byte aligned; never null once created, even with no elements.
  void* raw_data() { return data_.get(); }
  const void* raw_data() const { return data_.get(); }
  /// The data as T; T's size must match the dtype's storage size.
  template <typename T>
  T* data() {
    TESSERA_CHECK(sizeof(T) == static_cast<size_t>(dtype_.storage_bytes())) << "data<T>: size mismatch";
    return static_cast<T*>(raw_data());
  }
  template <typename T>
  const T* data() const {
    TESSERA_CHECK(sizeof(T) == static_cast<size_t>(dtype_.storage_bytes())) << "data<T>: size mismatch";
    return static_cast<const T*>(raw_data());
  }

  /// Fills with deterministic pseudo-random values from `seed`, the same on
  /// every platform: floats uniform in [-1, 1]; signed integers uniform in
  /// [-64, 63], unsigned in [0, 127] (small, so sums do not overflow); bools 0 or 1.
  void fill_random(uint64_t seed);
  /// Fills with zeros.
  void fill_zero();

  /// "float32[2, 3]".
  std::string describe() const;
  /// The elements of a float32, float16 or bfloat16 array as float32
  /// (float16 and bfloat16 widened exactly); empty for other types.
  std::vector<float> to_float32() const;

 private:
  struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
  };

  DType dtype_ = DType::f32();
  std::vector<int64_t> shape_{0};
  int64_t numel_ = 0;
  std::unique_ptr<uint8_t, FreeDeleter> data_;
};

/// Reads a .npy file (format 1.0, 2.0 or 3.0, little-endian, C order) of
/// float32, float64, float16, int8, int16, int32, int64, uint8 or bool.
/// Errors: kNotFound (no file), kIOError (cannot read), kParseError (not .npy,
/// malformed header, truncated or over-long data), kInvalidArgument (a dtype
/// Tessera does not support, big-endian data or Fortran order). Messages name the file.
Result<NDArray> load_npy(const std::string& path);

/// Parses the bytes of a .npy file; `source` names them in error messages.
Result<NDArray> parse_npy(std::string_view bytes, const std::string& source = "<npy bytes>");

/// Writes `array` as a .npy file (format 1.0, the header numpy itself writes).
/// Errors: kInvalidArgument (a dtype .npy cannot hold, e.g. bfloat16), kIOError.
Status save_npy(const NDArray& array, const std::string& path);

/// The bytes save_npy would write.
Result<std::string> to_npy_bytes(const NDArray& array);

}  // namespace tessera::runtime
