#pragma once
// The value of an IEEE binary16 bit pattern, for the readers of outside files (.npy '<f2',
// safetensors F16). Exact: every binary16 value is a float.
#include <Eigen/Core>
#include <cstdint>

namespace nsv {

inline double from_fp16_bits(std::uint16_t bits) { return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(bits)); }

}  // namespace nsv
