#include "nsv/dtype.hpp"

#include <Eigen/Core>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace nsv {

DType parse_dtype(std::string_view name) {
  if (name == "fp64" || name == "float64") return DType::fp64;
  if (name == "fp32" || name == "float32") return DType::fp32;
  if (name == "bf16" || name == "bfloat16") return DType::bf16;
  if (name == "fp16" || name == "float16") return DType::fp16;
  throw std::invalid_argument("unknown dtype '" + std::string(name) +
                              "': expected one of fp64, fp32, bf16, fp16");
}

std::string_view dtype_name(DType d) {
  switch (d) {
    case DType::fp64: return "fp64";
    case DType::fp32: return "fp32";
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
  }
  return "?";
}

Accumulate parse_accumulate(std::string_view name) {
  if (name == "fp32") return Accumulate::fp32;
  if (name == "compute") return Accumulate::compute;
  throw std::invalid_argument("unknown accumulation '" + std::string(name) +
                              "': expected fp32 (tensor-core GEMM) or compute (PyTorch CPU GEMM)");
}

std::string_view accumulate_name(Accumulate a) { return a == Accumulate::fp32 ? "fp32" : "compute"; }

double unit_roundoff(DType d) {
  switch (d) {
    case DType::fp64: return std::ldexp(1.0, -53);
    case DType::fp32: return std::ldexp(1.0, -24);
    case DType::bf16: return std::ldexp(1.0, -8);
    case DType::fp16: return std::ldexp(1.0, -11);
  }
  return 1.0;
}

double largest_finite(DType d) {
  switch (d) {
    case DType::fp64: return std::numeric_limits<double>::max();
    case DType::fp32: return std::numeric_limits<float>::max();
    case DType::bf16: return 0x1.fep127;
    case DType::fp16: return 65504.0;
  }
  return 0.0;
}

int bytes_per_element(DType d) {
  switch (d) {
    case DType::fp64: return 8;
    case DType::fp32: return 4;
    default: return 2;
  }
}

namespace {

// Map a sign-magnitude bit pattern onto a monotone integer line, so that adjacent
// representable values differ by one and -0 == +0 (numpy's nulp_diff construction).
std::int64_t ordinal(std::uint64_t bits, int width) {
  const std::uint64_t sign = std::uint64_t{1} << (width - 1);
  const auto magnitude = static_cast<std::int64_t>(bits & (sign - 1));
  return (bits & sign) ? -magnitude : magnitude;
}

std::uint64_t pattern(DType d, double x) {
  switch (d) {
    case DType::fp64: return std::bit_cast<std::uint64_t>(x);
    case DType::fp32: return std::bit_cast<std::uint32_t>(static_cast<float>(x));
    case DType::bf16:
      return Eigen::numext::bit_cast<std::uint16_t>(Eigen::bfloat16(static_cast<float>(x)));
    case DType::fp16: return Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(static_cast<float>(x)));
  }
  return 0;
}

int width(DType d) { return bytes_per_element(d) * 8; }

}  // namespace

std::uint64_t ulp_distance(DType d, double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return kNoUlpDistance;
  const std::int64_t ia = ordinal(pattern(d, a), width(d));
  const std::int64_t ib = ordinal(pattern(d, b), width(d));
  // The difference of two ordinals can exceed INT64_MAX (fp64 values of opposite signs): subtract
  // as unsigned, which is exact because the distance is below 2^64.
  const auto ua = static_cast<std::uint64_t>(ia), ub = static_cast<std::uint64_t>(ib);
  return ia > ib ? ua - ub : ub - ua;
}

}  // namespace nsv
