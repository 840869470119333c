#pragma once
// The sides a check of a user's implementation may draw (max_dim): at least 8, where the rounding
// bounds are claimed (below, a handful of roundings varies by more than 2x between draws), and at
// most 4096. Read by the kernel and TP scopes and by the check records.
#include <cstdint>

namespace nsv::checks {
inline constexpr std::int64_t kMinDrawnSide = 8;
inline constexpr std::int64_t kMaxDrawnSide = 4096;
}  // namespace nsv::checks
