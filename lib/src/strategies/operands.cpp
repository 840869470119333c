// The operand table (operand.hpp) and what every operand's plan starts from.
#include "operand.hpp"

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

std::uint64_t bytes_of(std::int64_t elements, DType d) {
  return static_cast<std::uint64_t>(elements) * static_cast<std::uint64_t>(bytes_per_element(d));
}

}  // namespace nsv::detail
