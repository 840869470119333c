#pragma once
// What each strategy (SPEC §3) costs on each rank for a matrix of any size, without running NS.
//
// `plan_strategy` reads the strategy's record (strategy.hpp) and calls its operand's plan, which
// lives beside the operand's execution (lib/src/strategies/): it issues the collectives the
// execution issues (same calls, same element counts, same wire dtypes) into a Ledger through the
// communicator's own byte model (record_all_gather/... in communicator.hpp, which the simulated
// communicator also records through), and counts FLOPs and extra memory. `run_strategy` reports
// the plan's FLOPs and memory beside what its execution computed and communicated. The
// all-reduce strategies plan by running the very iteration code of the backends
// (ns_algorithm.hpp) on shapes instead of matrices. The properties check the plan's ledger
// against the simulated run's on small matrices for every strategy, tp 1..8, both axes, uneven
// and zero-width layouts (properties/audit/).
//
// The time estimate is an alpha-beta model per rank:
//   time = flops / (tflops * 1e12) + messages * latency + max(bytes_sent, bytes_received) / bandwidth
// (links are full duplex, so a rank's sends and receives overlap; the slower direction counts).
// Defaults (CostParams): one NVIDIA H200 SXM and its NVLink 4 links:
//   tflops     989  dense FP16/BF16 tensor-core peak (H200 datasheet: 1,979 TFLOPS with 2:4
//                   sparsity, half of it dense). DeepSpeed runs gram NS in fp16, standard in bf16.
//                   Use ~67 for fp32 CUDA-core GEMMs or ~494 for TF32.
//   link_gbps  450  GB/s per direction (NVLink 4: 18 links x 50 GB/s bidirectional = 900 GB/s
//                   total, 450 GB/s each way).
//   latency_us 5    per message: an assumption of the order of NCCL's intra-node small-message
//                   latency, not a measurement.
// Peak numbers make every time a lower bound; the estimates are for comparing strategies with
// one another, not for predicting wall-clock time.
#include <cstdint>
#include <string>
#include <vector>

#include "nsv/communicator.hpp"
#include "nsv/kernels.hpp"
#include "nsv/layout.hpp"
#include "nsv/strategy.hpp"

namespace nsv {

struct CostParams {
  double latency_us = 5.0;
  double link_gbps = 450.0;
  double tflops = 989.0;

  void validate() const;  // throws std::invalid_argument naming the bad field
};

// What run_strategy would report, less the outputs: the same ledger, FLOPs and extra memory.
struct StrategyPlan {
  Strategy strategy = Strategy::shard;
  Ledger ledger;
  std::vector<std::uint64_t> flops;         // per rank
  std::vector<std::uint64_t> extra_memory;  // per rank, bytes
};

// The shape of rank r's shard of a rows x cols matrix cut by `layout`.
std::pair<std::int64_t, std::int64_t> shard_shape(const Layout&, std::int64_t rows, std::int64_t cols, int rank);

// Throws std::invalid_argument with run_strategy's message when the strategy does not apply
// (per_head on a dim-1 split, without a head dimension, or on shards that cut a head).
StrategyPlan plan_strategy(Strategy, const Layout&, std::int64_t rows, std::int64_t cols, std::int64_t head_dim,
                           const NsConfig&, const StrategyOptions& = {});

// `owner` with the owning rank `owner_rank` (run_strategy's owner is rank 0, which
// plan_strategy(Strategy::owner, ...) reproduces). Layer-sharded implementations rotate the owner
// over the matrices of a step; the audit uses this to cost that rotation exactly.
StrategyPlan plan_owner(const Layout&, std::int64_t rows, std::int64_t cols, const NsConfig&, const StrategyOptions&,
                        int owner_rank);

struct RankCost {
  std::uint64_t flops = 0, bytes_sent = 0, bytes_received = 0, messages = 0, extra_memory = 0;
  double compute_s = 0, latency_s = 0, bandwidth_s = 0;
  double time_s() const { return compute_s + latency_s + bandwidth_s; }
  bool operator==(const RankCost&) const = default;
};

RankCost rank_cost(const StrategyPlan&, int rank, const CostParams&);
std::vector<RankCost> rank_costs(const StrategyPlan&, const CostParams&);

}  // namespace nsv
