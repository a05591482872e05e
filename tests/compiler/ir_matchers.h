// EXPECT_IR_EQ: compares IR with expected IR text structurally.
//
//   EXPECT_IR_EQ(unroll_loops(before).value(), "A[0] = 0\nA[1] = 1");
//   EXPECT_IR_EQ(lowered_func, "func kernel(A: float32[4]) { ... }");
//   EXPECT_IR_EQ(actual_stmt, expected_stmt);
//
// The expected text is parsed (compiler/ir/parser.h) with the free variables,
// buffers and tensors of the actual IR under the names the printer gives them,
// then compared with structural_equal, so spacing, redundant parentheses and
// loop variable names do not matter. On failure the message shows both sides
// printed and a line diff (- expected, + actual).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/structural.h"

namespace tessera::testing {

/// Lines of `a` and `b` with a longest-common-subsequence diff: "  " kept,
/// "- " only in a, "+ " only in b.
inline std::string line_diff(const std::string& a, const std::string& b) {
  auto split = [](const std::string& s) {
    std::vector<std::string> lines;
    size_t start = 0;
    while (start < s.size()) {
      size_t end = s.find('\n', start);
      if (end == std::string::npos) end = s.size();
      lines.push_back(s.substr(start, end - start));
      start = end + 1;
    }
    return lines;
  };
  const std::vector<std::string> x = split(a), y = split(b);
  std::vector<std::vector<int>> lcs(x.size() + 1, std::vector<int>(y.size() + 1, 0));
  for (size_t i = x.size(); i-- > 0;)
    for (size_t j = y.size(); j-- > 0;)
      lcs[i][j] = x[i] == y[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  std::string out;
  size_t i = 0, j = 0;
  while (i < x.size() || j < y.size()) {
    if (i < x.size() && j < y.size() && x[i] == y[j]) {
      out += "  " + x[i++] + "\n";
      ++j;
    } else if (j == y.size() || (i < x.size() && lcs[i + 1][j] >= lcs[i][j + 1])) {
      out += "- " + x[i++] + "\n";
    } else {
      out += "+ " + y[j++] + "\n";
    }
  }
  return out;
}

namespace detail {

template <typename Node>
::testing::AssertionResult ir_mismatch(const char* actual_text, const Node& expected, const Node& actual) {
  const std::string want = to_string(expected), got = to_string(actual);
  return ::testing::AssertionFailure() << actual_text << " differs from the expected IR\nexpected:\n"
                                       << want << "actual:\n"
                                       << got << "diff (- expected, + actual):\n"
                                       << line_diff(want, got);
}

template <typename Node>
::testing::AssertionResult ir_parse_failure(const char* actual_text, const Status& error, const Node& actual) {
  return ::testing::AssertionFailure() << "the expected IR text does not parse: " << error.to_string() << "\nactual "
                                       << actual_text << ":\n"
                                       << to_string(actual);
}

}  // namespace detail

/// Predicate formatter behind EXPECT_IR_EQ for a statement and expected text.
inline ::testing::AssertionResult ir_equal(const char* actual_text, const char*, const Stmt& actual,
                                           const std::string& expected) {
  Result<Stmt> want = parse_stmt(expected, ParseContext::of(actual));
  if (!want.is_ok()) return detail::ir_parse_failure(actual_text, want.status(), actual);
  if (structural_equal(actual, *want)) return ::testing::AssertionSuccess();
  return detail::ir_mismatch(actual_text, *want, actual);
}

/// For an expression and expected text.
inline ::testing::AssertionResult ir_equal(const char* actual_text, const char*, const Expr& actual,
                                           const std::string& expected) {
  Result<Expr> want = parse_expr(expected, ParseContext::of(actual));
  if (!want.is_ok()) return detail::ir_parse_failure(actual_text, want.status(), actual);
  if (structural_equal(actual, *want)) return ::testing::AssertionSuccess();
  return detail::ir_mismatch(actual_text, *want, actual);
}

/// For a function and expected "func name(params) { body }" text: parameters
/// are matched by position (type and shape), names are not compared.
inline ::testing::AssertionResult ir_equal(const char* actual_text, const char*, const PrimFunc& actual,
                                           const std::string& expected) {
  Result<PrimFunc> want = parse_func(expected);
  if (!want.is_ok()) return detail::ir_parse_failure(actual_text, want.status(), actual);
  if (structural_equal(actual, *want)) return ::testing::AssertionSuccess();
  return detail::ir_mismatch(actual_text, *want, actual);
}

/// For two trees.
inline ::testing::AssertionResult ir_equal(const char* actual_text, const char*, const Stmt& actual,
                                           const Stmt& expected) {
  if (structural_equal(actual, expected)) return ::testing::AssertionSuccess();
  return detail::ir_mismatch(actual_text, expected, actual);
}
inline ::testing::AssertionResult ir_equal(const char* actual_text, const char*, const Expr& actual,
                                           const Expr& expected) {
  if (structural_equal(actual, expected)) return ::testing::AssertionSuccess();
  return detail::ir_mismatch(actual_text, expected, actual);
}

}  // namespace tessera::testing

/// Expects `actual` (a Stmt, Expr or PrimFunc) to equal `expected` (IR text,
/// or a tree of the same kind) structurally.
#define EXPECT_IR_EQ(actual, expected) EXPECT_PRED_FORMAT2(::tessera::testing::ir_equal, actual, expected)
/// As EXPECT_IR_EQ, but stops the test on failure.
#define ASSERT_IR_EQ(actual, expected) ASSERT_PRED_FORMAT2(::tessera::testing::ir_equal, actual, expected)
