#pragma once
// Compute dtypes with accelerator semantics (SPEC §1.5).
//
// Values of every dtype narrower than fp64 are held in a float whose value is exactly
// representable in that dtype: rounded to nearest, ties to even, with subnormals, overflow to
// Inf and NaN (kept, quieted) exactly as Eigen::bfloat16 / Eigen::half round them.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
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
// The largest finite value: fp16 65504, bf16 0x1.fep127, fp32 FLT_MAX, fp64 DBL_MAX.
double largest_finite(DType);
int bytes_per_element(DType);

// Why not Eigen::bfloat16 / Eigen::half: built for baseline x86-64 (no F16C), Eigen converts
// one element at a time through data-dependent branches, which keep rounding loops from
// vectorizing. These have no branches in the source (integer arithmetic and
// selects), so gcc -O3 vectorizes a loop over them with plain SSE2, and they give Eigen's bits
// for every float (a NaN gives a quiet NaN), checked over all 2^32 of them by
// fast_rounding_equals_eigen_for_every_float in properties/foundation/rounding_props.cpp. Magnitudes stay
// below 2^31, so comparisons are signed ones (SSE2 has no unsigned PCMPGTD).
inline float round_to_bf16(float x) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = bits & 0x8000'0000u;
  const auto magnitude = static_cast<std::int32_t>(bits ^ sign);
  // Adding 0x7fff plus the kept lsb carries into the kept bits exactly when RNE rounds up;
  // carrying out of the largest finite value gives Inf, as it should.
  const std::uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff'0000u;
  // Truncating a NaN's payload could leave Inf: every NaN becomes the quiet NaN, as in Eigen.
  return std::bit_cast<float>(magnitude > 0x7f80'0000 ? (sign | 0x7fc0'0000u) : rounded);
}

// pick_a ? a : b without ?:, for a float result. gcc turns a ?: into a branch, sinks the float
// arithmetic into the side that uses it, and then cannot if-convert it back (float operations
// may trap): the loop would not vectorize.
inline std::int32_t select_bits(bool pick_a, std::int32_t a, std::int32_t b) {
  return b ^ ((a ^ b) & -static_cast<std::int32_t>(pick_a));
}

inline float round_to_fp16(float x) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = bits & 0x8000'0000u;
  const auto magnitude = static_cast<std::int32_t>(bits ^ sign);
  constexpr std::int32_t smallest_normal = 0x3880'0000;    // 2^-14
  constexpr std::int32_t overflow_threshold = 0x477f'f000;  // 65520: max + half an ULP, a tie to 2^16
  constexpr std::int32_t infinity = 0x7f80'0000, quiet_nan = 0x7fc0'0000;
  // Normal range: RNE of the float's 23 fraction bits to fp16's 10, as in round_to_bf16. The sum
  // is unsigned (it passes 2^31 for NaN magnitudes, whose result is not selected): the same
  // bits as a signed add, without the signed overflow.
  const std::uint32_t unsigned_magnitude = bits ^ sign;
  const auto normal = static_cast<std::int32_t>((unsigned_magnitude + 0xfffu + ((unsigned_magnitude >> 13) & 1u)) & ~0x1fffu);
  const std::int32_t special = magnitude > infinity ? quiet_nan : infinity;
  const std::int32_t at_least_normal = magnitude >= overflow_threshold ? special : normal;
  // Subnormal range: fp16's quantum 2^-24 is the ULP of floats in [0.5, 1), so adding 0.5 lets
  // the FPU round to it (RNE, the default MXCSR) and subtracting 0.5 is exact. Taking fabs(x)
  // rather than `magnitude` keeps this path off the integer registers, which in a scalar
  // loop-carried chain (sums rounded to the compute dtype) decides between faster and slower
  // than Eigen. A signaling NaN raises FE_INVALID here, as F16C's conversion does.
  const auto subnormal = std::bit_cast<std::int32_t>((std::fabs(x) + 0.5f) - 0.5f);
  const std::int32_t rounded = select_bits(magnitude < smallest_normal, subnormal, at_least_normal);
  return std::bit_cast<float>(static_cast<std::uint32_t>(rounded) | sign);
}

// Ifs, not a switch: gcc 12 unswitches a loop on a loop-invariant if, not on a switch, and
// vectorizes each copy.
inline float round_to(DType d, float x) {
  if (d == DType::bf16) return round_to_bf16(x);
  if (d == DType::fp16) return round_to_fp16(x);
  return x;
}
// Calls f(rnd), rnd rounding a float or double (returned in its own type) to dtype d, with the
// dtype fixed at compile time in each branch: a loop inside f is compiled once per dtype and
// vectorizes, instead of testing the dtype per element. fp64 and fp32 values pass unchanged
// (callers hold fp32 values in floats, fp64 ones in doubles).
template <class F>
void with_rounding_to(DType d, F&& f) {
  if (d == DType::bf16)
    f([](auto v) { return static_cast<decltype(v)>(round_to_bf16(static_cast<float>(v))); });
  else if (d == DType::fp16)
    f([](auto v) { return static_cast<decltype(v)>(round_to_fp16(static_cast<float>(v))); });
  else
    f([](auto v) { return v; });
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
// where -0 and +0 coincide; an infinity is the position after the largest finite value. A NaN
// has no position: NaN against anything is kNoUlpDistance.
inline constexpr std::uint64_t kNoUlpDistance = std::numeric_limits<std::uint64_t>::max();
std::uint64_t ulp_distance(DType d, double a, double b);

}  // namespace nsv
