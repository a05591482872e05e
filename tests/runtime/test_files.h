// Test helper: a file's bytes (the kernel libraries tests/runtime/CMakeLists.txt
// builds from testdata/, a trace written by a test).
#pragma once

#include <fstream>
#include <iterator>
#include <string>

namespace tessera::runtime::test {

/// The whole file at `path`; empty when it cannot be read.
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace tessera::runtime::test
