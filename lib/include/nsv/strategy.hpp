#pragma once
// The ways of orthogonalizing a tensor-parallel-sharded matrix (SPEC §3), as one declarative
// record each (in the spirit of PyTorch's OpInfo): what a strategy computes, what it promises,
// which collectives it plans, and when it applies. Everything that lists, parses, plans, runs
// or documents strategies reads this table; adding a strategy is one record plus its plan and
// execution (lib/src/strategies/), see ARCHITECTURE.md.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "nsv/backend.hpp"
#include "nsv/communicator.hpp"
#include "nsv/layout.hpp"

namespace nsv {

enum class Strategy { shard, gather, per_head, gram_allreduce, gram_restart_allreduce, owner };
inline constexpr Strategy kAllStrategies[] = {Strategy::shard, Strategy::gather, Strategy::per_head,
                                              Strategy::gram_allreduce, Strategy::gram_restart_allreduce,
                                              Strategy::owner};

// What a strategy is compared against: NS of the unsharded matrix, or per-head NS of it.
enum class Target { whole, per_head };
Target parse_target(std::string_view);
std::string_view target_name(Target);

// What a strategy's result is, against its target: the same bits, the same in exact arithmetic
// (rounding-level differences in floating point, bounded by S5), or a different result.
enum class Promise { bit_identical, exact_arithmetic, none };
// "bit_identical", "exact_in_exact_arithmetic", "inexact" (the audit JSON's words, nsv.audit/1).
std::string_view promise_name(Promise);

// What NS is applied to, rank by rank.
enum class Operand {
  own_shard,        // each rank: NS of the shard it holds (no communication)
  own_heads,        // each rank: NS of each head block of its shard, the head count from its rows
  gathered_matrix,  // every rank: NS of the all-gathered matrix, its own block kept
  owner_matrix,     // one rank: NS of the whole matrix, received and sent back by all-to-alls
  sharded_frame,    // all ranks: one NS iteration over the shards, its Gram matrices all-reduced
};

struct StrategyRecord {
  Strategy strategy;
  std::string_view name;        // as on the command line and in every CSV/JSON
  std::string_view short_name;  // for figure legends and narrow table headers
  Target target;                // the semantics it promises to compute
  Promise promise;              // against `target`, at tp >= 2 (promise_on: a given layout)
  Operand operand;
  // The loop a sharded_frame strategy forces on its ranks (the standard loop with an all-reduce
  // per step, or the Gram loop with its restart); unused by the other operands, which run the
  // kernel's own choice.
  Iteration iteration = Iteration::standard;
  std::span<const Collective> collectives;  // in the order a call issues them (at tp >= 2)
  std::string_view summary;                 // one line: what a rank does
};

// How the collectives of a strategy behave on the simulated ranks.
struct StrategyOptions {
  ReductionOrder order = ReductionOrder::rank;
  // Wire dtype of gathers and all-to-alls (the update's storage dtype, fp32 in DeepSpeed).
  DType storage = DType::fp32;
};

// In kAllStrategies order.
std::span<const StrategyRecord> strategy_records();
const StrategyRecord& strategy_record(Strategy);

// Throws std::invalid_argument listing the known names.
Strategy parse_strategy(std::string_view);
std::string_view strategy_name(Strategy);
// Every name, joined by `separator` (messages, --help).
std::string strategy_names(std::string_view separator = ", ");

Target natural_target(Strategy);
Promise promise_of(Strategy);
// The promise on one layout: where one rank holds the whole matrix, the strategies that run the
// kernel on what a rank holds are bit-identical to the whole (shard with every other rank empty or
// every rank holding the whole matrix,
// the sharded frame at tp = 1).
Promise promise_on(Strategy, const Layout&);

// Empty when the strategy applies to a layout, otherwise why not, saying what to use instead
// (per_head: a dim-0 split into whole heads of head_dim rows, each piece on a head boundary; the
// all-reduce strategies: no index replicated on several ranks).
std::string inapplicable_reason(Strategy, const Layout&, std::int64_t head_dim);

}  // namespace nsv
