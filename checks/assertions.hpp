#pragma once
// The one comparison engine of every property (numpy.testing's role here). Each exact claim,
// bounded claim and predicate of the catalogue and of the gate's own properties asserts through
// these functions, whatever implementation is under test (the reference, the CUDA backend, a
// user's Python or torch callable, simulated or MPI ranks), so a failure reads the same
// everywhere: the worst element with its index, both values in hexfloat and its ULP distance; or
// the measured figure, its bound and the bound's derivation. A failure records its detail as data
// in the case log, then throws RapidCheck's failure, so that the case shrinks like any other.
#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nsv/dtype.hpp"
#include "nsv/matrix.hpp"

namespace nsv::checks {

// What a failing case compared, as data (Python's PropertyResult.detail, the saved arrays).
struct FailureDetail {
  enum class Kind { bits, bound, predicate };
  Kind kind = Kind::predicate;
  std::string input;  // what the case drew (note_input)
  // bits: the shape and the worst element of the two matrices compared
  std::int64_t rows = 0, cols = 0, row = -1, col = -1, mismatches = 0;
  double a = 0, b = 0;
  std::optional<std::uint64_t> ulps;  // none when a NaN or an infinity is involved
  // bound
  double measured = 0, bound = 0;
  std::string derivation;
  // the matrices the case noted (note_matrix), for a debugger: the input, the output under test,
  // the reference's output
  std::vector<std::pair<std::string, MatD>> matrices;
};
std::string_view kind_name(FailureDetail::Kind);
inline std::ostream& operator<<(std::ostream& os, FailureDetail::Kind k) { return os << kind_name(k); }

// The matrices the case being run noted, in storage the next case reuses: a copy into fresh
// memory pays a page fault per 4 KiB on first touch (8192 at 1024 x 4096 in double), a copy into
// the last case's storage of the same size none.
class NotedMatrices {
 public:
  void start_case() { used_ = 0; }
  void add(std::string name, const MatD& m);
  std::span<const std::pair<std::string, MatD>> of_this_case() const { return {entries_.data(), used_}; }

 private:
  std::vector<std::pair<std::string, MatD>> entries_;
  std::size_t used_ = 0;
};

// What the property run in progress has recorded, on this thread (property_run.cpp and the
// gate's harness reset it before each property).
struct CaseLog {
  std::string input;
  NotedMatrices matrices;
  std::optional<FailureDetail> last_failure;  // RapidCheck ends on the shrunk case: the last one recorded
  double worst_ratio = 0;  // the largest measured / bound a bounded assertion saw
  int checked = 0;         // assertions evaluated (a case that asserted nothing checked nothing)
};
CaseLog& case_log();

// Inside a property: what the case drew, in words, and the matrices a failure should carry.
// A new note_input starts a new case's record.
void note_input(std::string description);
void note_matrix(std::string name, const MatD& m);

[[noreturn]] void fail_bits(const std::string& what, const MatD& a, const MatD& b, DType ulp_dtype);
[[noreturn]] void fail_bound(const std::string& what, double measured, double bound, std::string_view derivation);
[[noreturn]] void fail_predicate(const std::string& what);

// Exact claim: the same shape, every element the same bits (-0 differs from +0; a NaN equals the
// same NaN). `what` names the two matrices ("NS(G^T) and NS(G)^T").
void assert_bit_identical(const std::string& what, const MatD& a, const MatD& b, DType ulp_dtype);
// Bounded claim: measured <= bound, false for NaN.
void assert_within(const std::string& what, double measured, double bound, std::string_view derivation);
// A predicate that must hold: `what` says what failed when it does not.
void assert_that(bool holds, const std::string& what);

// A value exactly (hexfloat) and readably (decimal).
std::string exact(double v);

}  // namespace nsv::checks
