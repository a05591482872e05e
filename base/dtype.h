// Element types of tensors, shared by the runtime and the compiler.
//
// Header-only and dependency-free so that runtime/ cross-builds for boards.
#pragma once

#include <cstdint>
#include <string>

namespace tessera {

/// The kind of a scalar: signed/unsigned integer, IEEE float, bfloat16, or a
/// pointer (handle). Bool is an unsigned integer of one bit.
enum class TypeCode : uint8_t { kInt = 0, kUInt = 1, kFloat = 2, kBFloat = 4, kHandle = 3 };

/// A scalar or vector element type: code, bits per lane and lanes.
/// Storage size of a bool is one byte.
struct DType {
  TypeCode code = TypeCode::kFloat;
  uint8_t bits = 32;
  uint16_t lanes = 1;

  constexpr DType() = default;
  constexpr DType(TypeCode c, int b, int l = 1)
      : code(c), bits(static_cast<uint8_t>(b)), lanes(static_cast<uint16_t>(l)) {}

  static constexpr DType f32(int lanes = 1) { return DType(TypeCode::kFloat, 32, lanes); }
  static constexpr DType f16(int lanes = 1) { return DType(TypeCode::kFloat, 16, lanes); }
  static constexpr DType bf16(int lanes = 1) { return DType(TypeCode::kBFloat, 16, lanes); }
  static constexpr DType f64(int lanes = 1) { return DType(TypeCode::kFloat, 64, lanes); }
  static constexpr DType i8(int lanes = 1) { return DType(TypeCode::kInt, 8, lanes); }
  static constexpr DType i32(int lanes = 1) { return DType(TypeCode::kInt, 32, lanes); }
  static constexpr DType i64(int lanes = 1) { return DType(TypeCode::kInt, 64, lanes); }
  static constexpr DType u8(int lanes = 1) { return DType(TypeCode::kUInt, 8, lanes); }
  static constexpr DType boolean(int lanes = 1) { return DType(TypeCode::kUInt, 1, lanes); }
  static constexpr DType handle() { return DType(TypeCode::kHandle, 64, 1); }

  constexpr bool is_float() const { return code == TypeCode::kFloat || code == TypeCode::kBFloat; }
  constexpr bool is_int() const { return code == TypeCode::kInt; }
  constexpr bool is_uint() const { return code == TypeCode::kUInt; }
  constexpr bool is_bool() const { return code == TypeCode::kUInt && bits == 1; }
  constexpr bool is_integral() const { return is_int() || is_uint(); }
  constexpr bool is_handle() const { return code == TypeCode::kHandle; }
  constexpr bool is_scalar() const { return lanes == 1; }
  constexpr bool is_vector() const { return lanes > 1; }
  constexpr DType element_of() const { return DType(code, bits, 1); }
  constexpr DType with_lanes(int l) const { return DType(code, bits, l); }
  /// Bytes one lane occupies in memory (bool: one byte).
  constexpr int storage_bytes() const { return bits < 8 ? 1 : bits / 8; }

  constexpr bool operator==(const DType& o) const { return code == o.code && bits == o.bits && lanes == o.lanes; }
  constexpr bool operator!=(const DType& o) const { return !(*this == o); }

  /// "float32", "int8", "bool", "float32x16".
  std::string to_string() const {
    // Built by appending: GCC 12 warns (-Wrestrict, falsely) on "lit" + string.
    std::string s;
    switch (code) {
      case TypeCode::kInt: s.append("int").append(std::to_string(bits)); break;
      case TypeCode::kUInt:
        if (bits == 1)
          s.append("bool");
        else
          s.append("uint").append(std::to_string(bits));
        break;
      case TypeCode::kFloat: s.append("float").append(std::to_string(bits)); break;
      case TypeCode::kBFloat: s.append("bfloat").append(std::to_string(bits)); break;
      case TypeCode::kHandle: s.append("handle"); break;
    }
    if (lanes > 1) s.append("x").append(std::to_string(lanes));
    return s;
  }

  /// Parses the names to_string prints for scalars; false when unknown.
  static bool parse(const std::string& name, DType* out) {
    static const struct {
      const char* name;
      DType type;
    } kNames[] = {
        {"float32", f32()},   {"float16", f16()},
        {"bfloat16", bf16()}, {"float64", f64()},
        {"int8", i8()},       {"int32", i32()},
        {"int64", i64()},     {"uint8", u8()},
        {"bool", boolean()},  {"int16", DType(TypeCode::kInt, 16)},
    };
    for (const auto& entry : kNames) {
      if (name == entry.name) {
        *out = entry.type;
        return true;
      }
    }
    return false;
  }
};

}  // namespace tessera
