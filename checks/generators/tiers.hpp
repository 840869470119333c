#pragma once
// How much the properties draw: the tier's size limit, and drawing outside a property.
//
// The gate keeps matrices small (fast, 100 cases per property); the wide tier sets
// NSV_PROPS_MAX_DIM (and RC_PARAMS=max_success=...) in its environment (properties/CMakeLists.txt).
#include <rapidcheck.h>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>

namespace nsv::checks {

// The largest matrix dimension a generator draws: 48 in the gate, NSV_PROPS_MAX_DIM otherwise.
inline int max_dim() {
  static const int value = [] {
    const char* env = std::getenv("NSV_PROPS_MAX_DIM");
    const int v = env ? std::atoi(env) : 48;
    if (v < 4 || v > 4096) throw std::invalid_argument("NSV_PROPS_MAX_DIM must be in [4, 4096]");
    return v;
  }();
  return value;
}

// Drawing outside a property (quantified measurements in plain Boost tests): the value of `gen`
// at `size` for RapidCheck's Random(seed). Deterministic, still all randomness from rc::gen.
template <class T>
T sample(const rc::Gen<T>& gen, std::uint64_t seed, int size = 100) {
  return gen(rc::Random(seed), size).value();
}

}  // namespace nsv::checks
