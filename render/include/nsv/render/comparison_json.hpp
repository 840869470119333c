#pragma once
// A strategy run compared with its target as JSON: `nsv shard --json`'s fields, which the
// Python binding's run_strategy returns too.
#include <nlohmann/json.hpp>

#include "nsv/strategies.hpp"

namespace nsv {

// {rel_diff_mean, rel_diff_max, bit_identical, collectives{name: calls}, ranks[{rank, rows, cols,
// rel_diff, cosine, norm_ratio, bit_identical, bytes_sent, bytes_received, messages, flops,
// extra_memory_bytes}]}
nlohmann::json comparison_json(const Comparison&);

}  // namespace nsv
