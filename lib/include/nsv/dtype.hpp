#pragma once
// Compute dtypes with accelerator semantics (SPEC §1.5).
//
// Values of every dtype narrower than fp64 are held in a float whose value is exactly
// representable in that dtype. Rounding to bf16/fp16 uses Eigen's round-to-nearest-even
// conversions (Eigen::bfloat16, Eigen::half), which handle ties, subnormals, overflow to Inf
// and NaN; we do not re-implement them.
#include <Eigen/Core>
#include <cstdint>
#include <string>
#include <string_view>

namespace nsv {

enum class DType { fp64, fp32, bf16, fp16 };

// Where a GEMM's partial sums live. `fp32`: the products are summed in fp32 (fp64 for fp64)
// and the result is rounded once, as tensor cores and cuBLAS do. `compute`: every partial sum
// is rounded to the compute dtype, as PyTorch's CPU bf16/fp16 GEMM does.
enum class Accumulate { fp32, compute };

DType parse_dtype(std::string_view name);            // throws std::invalid_argument
std::string_view dtype_name(DType);
Accumulate parse_accumulate(std::string_view name);  // throws std::invalid_argument
std::string_view accumulate_name(Accumulate);

// Unit roundoff u = 2^-p for p significand bits (incl. the implicit bit): the largest relative
// error of one correctly rounded operation.
double unit_roundoff(DType);
int bytes_per_element(DType);

inline float round_to(DType d, float x) {
  switch (d) {
    case DType::bf16: return static_cast<float>(Eigen::bfloat16(x));
    case DType::fp16: return static_cast<float>(Eigen::half(x));
    default: return x;
  }
}
// fp64 values are already exact; narrower dtypes round via float (one rounding from double to
// float, then one to the 16-bit type: a double rounding that can differ from a direct
// double->bf16 rounding only in the last bit of an exact tie, documented in README).
inline double round_to(DType d, double x) {
  if (d == DType::fp64) return x;
  return static_cast<double>(round_to(d, static_cast<float>(x)));
}

// Distance in units in the last place between two values of dtype d, numpy's definition
// (nulp_diff): the difference of the values' positions on the integer line of the format,
// where -0 and +0 coincide. NaN against anything is reported as max uint64.
std::uint64_t ulp_distance(DType d, double a, double b);

}  // namespace nsv
