#include "nsv/dtype.hpp"

#include <Eigen/Core>
#include <bit>
#include <cmath>
#include <limits>

#include "nsv/config_schema.hpp"

namespace nsv {

namespace {
// numpy's and PyTorch's spellings are accepted too (not listed).
constexpr NamedValue<DType> kDTypeNames[] = {
    {DType::fp64, "fp64"}, {DType::fp32, "fp32"}, {DType::bf16, "bf16"}, {DType::fp16, "fp16"},
    {DType::fp64, "float64", {}, false}, {DType::fp32, "float32", {}, false},
    {DType::bf16, "bfloat16", {}, false}, {DType::fp16, "float16", {}, false}};
constexpr NameTable<DType> kDTypeTable{"dtype", kDTypeNames};
constexpr NamedValue<Accumulate> kAccumulateNames[] = {{Accumulate::fp32, "fp32", "tensor cores, cuBLAS"},
                                                       {Accumulate::compute, "compute",
                                                        "PyTorch CPU bf16/fp16: GEMM sums and scalars in the dtype"}};
constexpr NameTable<Accumulate> kAccumulateTable{"accumulate", kAccumulateNames};
}  // namespace

const NameTable<DType>& name_table(std::type_identity<DType>) { return kDTypeTable; }
const NameTable<Accumulate>& name_table(std::type_identity<Accumulate>) { return kAccumulateTable; }

DType parse_dtype(std::string_view name) { return parse_named<DType>(name); }
std::string_view dtype_name(DType d) { return name_of(d); }
Accumulate parse_accumulate(std::string_view name) { return parse_named<Accumulate>(name); }
std::string_view accumulate_name(Accumulate a) { return name_of(a); }

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
