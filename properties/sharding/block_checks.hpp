#pragma once
// The exact claim of the sharding properties: every rank's output is bit-identical to its block
// of the target, and the library's own comparison says so too.
#include <string>

#include "check.hpp"
#include "nsv/strategies.hpp"
#include "sharding/sharding_support.hpp"

namespace nsv::checks::shard {

inline void assert_blocks_identical(const StrategyRun& run, const MatD& target, const Layout& layout, const std::string& what) {
  const auto blocks = split(target, layout);
  for (int r = 0; r < layout.tp(); ++r)
    RC_ASSERT_BIT_IDENTICAL(run.outputs[static_cast<std::size_t>(r)], blocks[static_cast<std::size_t>(r)], DType::fp32,
                            what + ", rank " + std::to_string(r) + " (" + layout_text(layout) + ")");
  RC_ASSERT(compare_with_target(run, target, layout).bit_identical);
}

}  // namespace nsv::checks::shard
