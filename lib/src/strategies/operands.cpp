// The operand table (operand.hpp) and what every operand's plan starts from.
#include "operand.hpp"

#include "nsv/strategies.hpp"

namespace nsv::detail {

const OperandImpl& operand_impl(Operand o) {
  switch (o) {
    case Operand::own_shard: return kOwnShard;
    case Operand::own_heads: return kOwnHeads;
    case Operand::gathered_matrix: return kGatheredMatrix;
    case Operand::owner_matrix: return kOwnerMatrix;
    case Operand::sharded_frame: return kShardedFrame;
  }
  throw std::logic_error("operand_impl: unknown operand");
}

StrategyPlan empty_plan(Strategy s, int tp) {
  StrategyPlan p;
  p.strategy = s;
  p.ledger.ranks.resize(static_cast<std::size_t>(tp));
  p.flops.assign(static_cast<std::size_t>(tp), 0);
  p.extra_memory.assign(static_cast<std::size_t>(tp), 0);
  return p;
}

std::vector<MatD> hosted_shards(const Communicator& comm, const ShardedMatrix& m) {
  std::vector<MatD> out;
  for (int r : comm.hosted_ranks()) out.push_back(m.shards[static_cast<std::size_t>(r)]);
  return out;
}

std::vector<MatD> on_ranks(const Communicator& comm, int tp, std::vector<MatD> hosted_results) {
  std::vector<MatD> out(static_cast<std::size_t>(tp));
  const auto& hosted = comm.hosted_ranks();
  for (std::size_t i = 0; i < hosted.size(); ++i) out[static_cast<std::size_t>(hosted[i])] = std::move(hosted_results[i]);
  return out;
}

std::uint64_t bytes_of(std::int64_t elements, DType d) {
  return static_cast<std::uint64_t>(elements) * static_cast<std::uint64_t>(bytes_per_element(d));
}

}  // namespace nsv::detail
