#pragma once
// `nsv shard --comm mpi`: the strategy on real ranks, one per MPI process (lib/mpi/), each
// process holding only its own shard of the input. World rank 0 gathers its group's per-rank
// comparisons and ledgers for printing.
#include <nlohmann/json.hpp>
#include <optional>

#include "nsv/strategies.hpp"

namespace nsv::engine {

struct MpiShardResult {
  Comparison comparison;  // every rank's row; on world rank 0 only
  nlohmann::json handed;  // per rank and collective: what was handed to MPI
  int groups = 1;
};

// Runs on every process of the job; the result is there on world rank 0, nullopt elsewhere.
std::optional<MpiShardResult> run_shard_on_mpi(Strategy, const Backend&, const MatD& g, const Layout&, std::int64_t head_dim,
                                               const NsConfig&, const StrategyOptions&, const std::string& mpi_reduction,
                                               Target);

}  // namespace nsv::engine
