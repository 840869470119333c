#include "nsv/engine/shard_on_mpi.hpp"

#include <cstring>
#include <type_traits>

#include "nsv/config_schema.hpp"
#include "nsv/mpi_communicator.hpp"
#include "nsv/mpi_same_plan.hpp"
#include "nsv/mpi_session.hpp"

namespace nsv::engine {
namespace {

static_assert(std::is_trivially_copyable_v<RankComparison>, "RankComparison travels as bytes");

std::vector<RankComparison> gather_comparisons(MPI_Comm group, const RankComparison& mine) {
  int size = 1, rank = 0;
  MPI_Comm_size(group, &size);
  MPI_Comm_rank(group, &rank);
  std::vector<RankComparison> all(rank == 0 ? static_cast<std::size_t>(size) : 0);
  MPI_Gather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, 0, group);
  return all;
}

nlohmann::json handed_json(const std::vector<HandedLedger>& ranks) {
  nlohmann::json out = nlohmann::json::array();
  for (const HandedLedger& h : ranks) {
    nlohmann::json row;
    for (Collective c : kAllCollectives) {
      const HandedTraffic& t = h[static_cast<std::size_t>(c)];
      row[std::string(collective_name(c))] = {{"mpi_calls", t.mpi_calls},
                                              {"send_buffer_bytes", t.send_buffer_bytes},
                                              {"receive_buffer_bytes", t.receive_buffer_bytes}};
    }
    out.push_back(row);
  }
  return out;
}

// What every rank must agree on before the collectives start: the arguments and the input's bits.
nlohmann::json shard_plan(Strategy s, const MatD& g, const Layout& layout, std::int64_t head_dim, const NsConfig& cfg,
                          const StrategyOptions& opt, const std::string& mpi_reduction, Target target) {
  const NsConfigNames ns = ns_config_names(cfg);
  nlohmann::json coefficients = nlohmann::json::array();
  for (const Coeffs& t : cfg.coeffs.triples) coefficients.push_back({t.a, t.b, t.c});
  return {{"strategy", strategy_name(s)}, {"shape", {g.rows(), g.cols()}}, {"widths", layout.widths()},
          {"split_axis", layout.axis}, {"storage", dtype_name(opt.storage)}, {"head_dim", head_dim}, {"kernel", ns.kernel}, {"steps", ns.steps},
          {"dtype", ns.dtype}, {"accumulate", ns.accumulate}, {"products", ns.products}, {"coefficients", coefficients},
          {"restart_at", ns.restart_at}, {"reduction_order", name_of(opt.order)}, {"mpi_reduction", mpi_reduction},
          {"target", target_name(target)},
          {"input_digest", bytes_digest(g.data(), static_cast<std::size_t>(g.size()) * sizeof(double))}};
}

}  // namespace

std::optional<MpiShardResult> run_shard_on_mpi(Strategy s, const Backend& b, const MatD& g, const Layout& layout,
                                               std::int64_t head_dim, const NsConfig& cfg, const StrategyOptions& opt,
                                               const std::string& mpi_reduction, Target target) {
  const MpiSession session;
  require_same_plan_on_every_rank(MPI_COMM_WORLD, shard_plan(s, g, layout, head_dim, cfg, opt, mpi_reduction, target));
  const TpGroup group = split_into_tp_groups(layout.tp());
  std::optional<MpiShardResult> result;
  {
    MpiCommunicator comm(group.comm, parse_mpi_reduction(mpi_reduction), opt.order);
    ShardedMatrix m = shard_matrix(g, layout, head_dim);
    for (int r = 0; r < layout.tp(); ++r)
      if (r != comm.rank()) m.shards[static_cast<std::size_t>(r)] = MatD();  // a rank holds its shard only
    const StrategyRun run = run_strategy(s, b, m, cfg, opt, comm);
    const MatD block = split(target_result(target, b, g, head_dim, cfg), layout)[static_cast<std::size_t>(comm.rank())];
    std::vector<RankComparison> ranks = gather_comparisons(group.comm, compare_rank(run, block, comm.rank()));
    const Ledger ledger = gather_ledger(comm);
    const std::vector<HandedLedger> handed = gather_handed(comm);
    if (session.world_rank() == 0) {
      for (RankComparison& rc : ranks) rc.traffic = ledger.ranks[static_cast<std::size_t>(rc.rank)];
      result = MpiShardResult{summarize_ranks(std::move(ranks), ledger), handed_json(handed), group.count};
    }
  }
  MPI_Comm group_comm = group.comm;
  MPI_Comm_free(&group_comm);
  return result;
}

}  // namespace nsv::engine
