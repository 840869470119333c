#pragma once
// Running a strategy (its record: strategy.hpp) on simulated ranks, and comparing what the ranks
// hold with the semantics it promises.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nsv/backend.hpp"
#include "nsv/communicator.hpp"
#include "nsv/layout.hpp"
#include "nsv/strategy.hpp"

namespace nsv {

struct ShardedMatrix {
  std::vector<MatD> shards;   // shards[r] is what rank r holds
  Layout layout;
  std::int64_t head_dim = 0;  // > 0 when whole heads of this size lie along dim 0
};
ShardedMatrix shard_matrix(const MatD& g, const Layout& layout, std::int64_t head_dim = 0);

// What the execution computed and communicated, with the plan's FLOPs and memory (the cost
// model's accounting, cost_model.hpp).
struct StrategyRun {
  Strategy strategy;
  std::vector<MatD> outputs;                  // rank r's block of the orthogonalized matrix
  Ledger ledger;                              // the collectives the execution issued
  std::vector<std::uint64_t> flops;           // per rank, plain-algorithm convention (kernels.hpp)
  // Peak bytes a rank holds beyond what `shard` would: the gathered matrix (gather, owner's
  // owner rank: input and result), the replicated Gram and polynomial (all-reduce strategies).
  std::vector<std::uint64_t> extra_memory;
};

// plan_strategy + the execution of the record's operand on a simulated communicator with
// `opt.order`. Throws std::invalid_argument with a message saying what to change when the
// strategy does not apply (inapplicable_reason: per_head on a dim-1 split, without head
// metadata, or on shards that cut a head).
StrategyRun run_strategy(Strategy, const Backend&, const ShardedMatrix&, const NsConfig&,
                         const StrategyOptions& = {});

// The same on a given communicator of the layout's tp ranks (the MPI one: lib/mpi/). Only the
// shards of the ranks it hosts are read (the others may be empty), the outputs of the others are
// empty, and the ledger holds the hosted ranks' traffic; `opt.order` is the communicator's
// business, not this call's.
StrategyRun run_strategy(Strategy, const Backend&, const ShardedMatrix&, const NsConfig&, const StrategyOptions&,
                         Communicator&);

// NS (or per-head NS) of the whole matrix.
MatD target_result(Target, const Backend&, const MatD& g, std::int64_t head_dim, const NsConfig&);

struct RankComparison {
  int rank = 0;
  std::int64_t rows = 0, cols = 0;
  double rel_diff = 0, cosine = 1, norm_ratio = 1;
  bool bit_identical = true;
  RankTraffic traffic;
  std::uint64_t flops = 0, extra_memory = 0;
};

struct Comparison {
  std::vector<RankComparison> ranks;
  double rel_diff_mean = 0, rel_diff_max = 0;  // over ranks holding a non-empty shard
  bool bit_identical = true;                   // every element of every rank
  std::array<int, kAllCollectives.size()> collectives{};  // calls by kind (Collective)
};

Comparison compare_with_target(const StrategyRun&, const MatD& target, const Layout&);

// Its two halves, for a process that holds some ranks only: one rank's output against its block
// of the target, and the summary of every rank's comparison (with the ledger's calls).
RankComparison compare_rank(const StrategyRun&, const MatD& target_block, int rank);
Comparison summarize_ranks(std::vector<RankComparison>, const Ledger&);

}  // namespace nsv
