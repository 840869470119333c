// Operand::owner_matrix: one rank (the owner) receives every shard, orthogonalizes the whole
// matrix once, and sends each rank its block back: two all-to-alls. run_strategy's owner is
// rank 0; layer-sharded implementations rotate it over the matrices of a step (plan_owner).
#include <string>

#include "nsv/invalid_field.hpp"
#include "nsv/strategies.hpp"
#include "operand.hpp"

namespace nsv {

StrategyPlan plan_owner(const Layout& layout, std::int64_t rows, std::int64_t cols, const NsConfig& cfg,
                        const StrategyOptions& opt, int owner_rank) {
  cfg.validate();
  const int tp = layout.tp();
  if (owner_rank < 0 || owner_rank >= tp)
    throw InvalidField("owner_rank", "must be a rank of the layout (0.." + std::to_string(tp - 1) + "), got " +
                                         std::to_string(owner_rank));
  StrategyPlan plan = detail::empty_plan(Strategy::owner, tp);
  const auto owner = static_cast<std::size_t>(owner_rank);
  const auto n = static_cast<std::size_t>(tp);
  std::vector<PieceTransfer> to_owner, back;
  for (std::size_t r = 0; r < n; ++r) {
    const auto [sr, sc] = shard_shape(layout, rows, cols, static_cast<int>(r));
    to_owner.push_back({r, owner, sr * sc});
    back.push_back({owner, r, sr * sc});
  }
  record_all_to_all(plan.ledger, to_owner, opt.storage);
  record_all_to_all(plan.ledger, back, opt.storage);
  plan.flops[owner] = ns_flops(cfg, rows, cols);
  plan.extra_memory[owner] = detail::bytes_of(rows * cols, opt.storage) * 2;  // the matrix and its NS
  return plan;
}

namespace detail {
namespace {

constexpr int kOwner = 0;

StrategyPlan plan(const StrategyRecord&, const PlanShape& m, const NsConfig& cfg, const StrategyOptions& opt) {
  return plan_owner(m.layout, m.rows, m.cols, cfg, opt, kOwner);
}

std::vector<MatD> execute(const StrategyRecord&, const Backend& b, const ShardedMatrix& m, const NsConfig& cfg,
                          const StrategyOptions& opt, Communicator& comm) {
  const auto tp = static_cast<std::size_t>(m.layout.tp());
  const auto owner = static_cast<std::size_t>(kOwner);
  const std::vector<int>& hosted = comm.hosted_ranks();
  std::vector<std::vector<MatD>> to_owner(hosted.size(), std::vector<MatD>(tp));
  for (std::size_t i = 0; i < hosted.size(); ++i) to_owner[i][owner] = m.shards[static_cast<std::size_t>(hosted[i])];
  const auto received = comm.all_to_all(to_owner, opt.storage);
  std::vector<std::vector<MatD>> back(hosted.size(), std::vector<MatD>(tp));
  for (std::size_t i = 0; i < hosted.size(); ++i)
    if (static_cast<std::size_t>(hosted[i]) == owner)
      back[i] = split(newton_schulz(b, assemble(received[i], m.layout), cfg), m.layout);
  const auto returned = comm.all_to_all(back, opt.storage);
  std::vector<MatD> outputs;
  for (std::size_t i = 0; i < hosted.size(); ++i) outputs.push_back(returned[i][owner]);
  return on_ranks(comm, m.layout.tp(), std::move(outputs));
}

}  // namespace

const OperandImpl kOwnerMatrix{plan, execute};

}  // namespace detail
}  // namespace nsv
