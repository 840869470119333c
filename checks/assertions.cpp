#include "assertions.hpp"

#include <rapidcheck.h>

#include <iomanip>
#include <sstream>

#include "nsv/metrics.hpp"

namespace nsv::checks {
namespace {

[[noreturn]] void fail_with(FailureDetail d, const std::string& message) {
  CaseLog& log = case_log();
  d.input = log.input;
  d.matrices.assign(log.matrices.of_this_case().begin(), log.matrices.of_this_case().end());
  log.last_failure = std::move(d);
  throw rc::detail::CaseResult(rc::detail::CaseResult::Type::Failure, message);
}

std::string shape_text(const MatD& m) { return std::to_string(m.rows()) + "x" + std::to_string(m.cols()); }

}  // namespace

std::string_view kind_name(FailureDetail::Kind k) {
  switch (k) {
    case FailureDetail::Kind::bits: return "bits";
    case FailureDetail::Kind::bound: return "bound";
    case FailureDetail::Kind::predicate: return "predicate";
  }
  return "predicate";
}

CaseLog& case_log() {
  thread_local CaseLog log;
  return log;
}

void note_input(std::string description) {
  CaseLog& log = case_log();
  log.input = std::move(description);
  log.matrices.start_case();
}

void NotedMatrices::add(std::string name, const MatD& m) {
  if (used_ == entries_.size()) entries_.emplace_back();
  auto& [noted_name, noted] = entries_[used_++];
  noted_name = std::move(name);
  noted = m;  // keeps noted's storage where the size is the same
}

void note_matrix(std::string name, const MatD& m) { case_log().matrices.add(std::move(name), m); }

std::string exact(double v) {
  std::ostringstream s;
  s << std::hexfloat << v << std::defaultfloat << " (" << std::setprecision(9) << v << ")";
  return s.str();
}

void fail_bits(const std::string& what, const MatD& a, const MatD& b, DType ulp_dtype) {
  FailureDetail d;
  d.rows = a.rows();
  d.cols = a.cols();
  if (a.rows() != b.rows() || a.cols() != b.cols())
    fail_with(d, what + ": shapes differ: " + shape_text(a) + " vs " + shape_text(b));
  const ElementDiff diff = compare_bits(a, b, ulp_dtype);
  d.kind = FailureDetail::Kind::bits;
  d.row = diff.row;
  d.col = diff.col;
  d.mismatches = diff.mismatches;
  d.a = diff.a;
  d.b = diff.b;
  if (diff.ulps != kNoUlpDistance) d.ulps = diff.ulps;
  fail_with(d, what + " are not bit-identical (ulps in " + std::string(dtype_name(ulp_dtype)) + "): " + diff.describe());
}

void fail_bound(const std::string& what, double measured, double bound, std::string_view derivation) {
  FailureDetail d;
  d.kind = FailureDetail::Kind::bound;
  d.measured = measured;
  d.bound = bound;
  d.derivation = derivation;
  fail_with(d, what + " = " + exact(measured) + " exceeds its bound " + exact(bound) + "; bound: " + std::string(derivation));
}

void fail_predicate(const std::string& what) { fail_with(FailureDetail{}, what); }

void assert_bit_identical(const std::string& what, const MatD& a, const MatD& b, DType ulp_dtype) {
  ++case_log().checked;
  if (a.rows() != b.rows() || a.cols() != b.cols() || !compare_bits(a, b, ulp_dtype).identical) fail_bits(what, a, b, ulp_dtype);
}

void assert_within(const std::string& what, double measured, double bound, std::string_view derivation) {
  CaseLog& log = case_log();
  ++log.checked;
  if (bound > 0 && std::isfinite(measured)) log.worst_ratio = std::max(log.worst_ratio, measured / bound);
  if (!(measured <= bound)) fail_bound(what, measured, bound, derivation);
}

void assert_that(bool holds, const std::string& what) {
  ++case_log().checked;
  if (!holds) fail_predicate(what);
}

}  // namespace nsv::checks
