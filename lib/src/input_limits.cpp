#include "nsv/input_limits.hpp"

#include <omp.h>

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

#include "nsv/dtype.hpp"
#include "nsv/metrics.hpp"
#include "nsv/resources.hpp"

namespace nsv {
namespace {

std::uint64_t side(std::int64_t v) { return static_cast<std::uint64_t>(std::max<std::int64_t>(v, 0)); }

// "a 16x32 matrix", "a batch of 8 matrices of 16x32".
std::string described(const InputShape& s) { return s.batch ? "a batch of " + s.text() : "a " + s.text() + " matrix"; }

void require_bytes(const std::string& what, const InputShape& s, std::uint64_t bytes, const std::string& for_what) {
  if (std::string refusal = memory_refusal(bytes, s.text() + " (" + for_what + ")"); !refusal.empty())
    throw std::invalid_argument(what + " " + refusal);
}

void require_elements(const std::string& what, const InputShape& s) {
  const std::uint64_t n = s.elements();
  if (n <= kMaxInputElements) return;
  const std::uint64_t per_matrix = saturating_product(side(s.rows), side(s.cols));
  const std::string fix = s.batch && per_matrix <= kMaxInputElements
                              ? fmt::format("split the batch into calls of at most {} matrices", kMaxInputElements / per_matrix)
                              : "give a smaller matrix";
  throw std::invalid_argument(fmt::format("{}: {} holds {} elements, more than the {} (2^32, {}x{}) one call takes: {}", what,
                                          described(s), n == UINT64_MAX ? std::string("more than 2^64") : std::to_string(n),
                                          kMaxInputElements, kMaxShapeSide, kMaxShapeSide, fix));
}

}  // namespace

InputShape InputShape::of(const std::vector<long>& dims) {
  if (dims.size() == 3) return {dims[0], dims[1], dims[2], true};
  if (dims.size() == 2) return matrix(dims[0], dims[1]);
  throw std::invalid_argument("a matrix has 2 dimensions and a batch 3, got " + std::to_string(dims.size()));
}

std::uint64_t InputShape::elements() const {
  return saturating_product(side(count), saturating_product(side(rows), side(cols)));
}

std::string InputShape::text() const {
  const std::string m = std::to_string(rows) + "x" + std::to_string(cols);
  return batch ? std::to_string(count) + " matrices of " + m : m;
}

void require_copyable(const std::string& what, const InputShape& s) {
  require_elements(what, s);
  require_bytes(what, s, saturating_product(s.elements(), sizeof(double)), "its float64 copy");
}

std::string emptiness(const InputShape& s) {
  if (s.count > 0 && s.rows > 0 && s.cols > 0) return "";
  return std::string(s.batch ? "an empty batch (" : "an empty matrix (") + s.text() + ") has no Newton-Schulz and no spectrum: give " +
         (s.batch ? "at least one matrix of " : "") + "at least one row and one column";
}

void require_not_empty(const std::string& what, const InputShape& s) {
  if (std::string why = emptiness(s); !why.empty()) throw std::invalid_argument(what + ": " + why);
}

void require_ns_shape(const std::string& what, const InputShape& s) {
  require_elements(what, s);
  require_not_empty(what, s);
  // The copy in, the results and the array handed back, plus the buffers of each matrix in flight.
  const auto in_flight = static_cast<std::uint64_t>(std::min<std::int64_t>(s.count, omp_get_max_threads()));
  const std::uint64_t copies = saturating_product(s.elements(), 3 * sizeof(double));
  const std::uint64_t buffers = saturating_product(in_flight, ns_working_bytes(s.rows, s.cols));
  require_bytes(what, s, copies > UINT64_MAX - buffers ? UINT64_MAX : copies + buffers, "Newton-Schulz in float64");
}

void require_normalizable(const MatD& m, const NsConfig& cfg, const std::string& what) {
  if (!all_finite(m))
    throw std::invalid_argument(what + ": the matrix holds NaN or Inf; NS of a non-finite matrix is non-finite "
                                       "(Muon skips such a step). Clean the input first.");
  const DType nd = normalization_dtype(cfg);
  if (const double norm = m.norm(); norm > largest_finite(nd))
    throw std::invalid_argument(what + ": the Frobenius norm " + fmt::format("{:.4g}", norm) + " overflows " +
                                std::string(dtype_name(nd)) + ", the dtype the " + std::string(kernel_name(cfg.kernel)) +
                                " kernel normalizes in, so the result would be all zeros; scale the input down");
}

}  // namespace nsv
