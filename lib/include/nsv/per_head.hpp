#pragma once
// Per-head Newton-Schulz (DeepSpeed PR #8384, SPEC §1.3): a different optimizer from
// whole-matrix NS, with heads laid along dim 0.
#include <cstdint>

#include "nsv/backend.hpp"

namespace nsv {

// View m [num_heads*head_dim, in] as num_heads matrices [head_dim, in], NS each independently,
// scale each by sqrt(head_dim/in) when head_dim > in (DeepSpeed's per-block aspect scale), and
// fold back. Throws std::invalid_argument when rows % num_heads != 0 or num_heads < 1.
MatD per_head_ns(const Backend&, const MatD& m, std::int64_t num_heads, const NsConfig&);

}  // namespace nsv
