// Running a mesh strategy (mesh_strategies.hpp) on the communicators of a mesh: the DP stage's
// collectives on the DP groups, the TP strategy through run_strategy on a TP group (or, for the
// `mesh` stage, on the whole mesh with the composed layout), so the TP stage is the very code of
// the one-axis strategies.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "mesh_ledger.hpp"
#include "nsv/mesh_strategies.hpp"

namespace nsv {
namespace {

// The elements of 1 x n pieces, concatenated in order (the shape of an empty piece is whatever
// the transport gave it; only its size counts).
MatD concatenate_flat(const std::vector<MatD>& pieces) {
  std::int64_t n = 0;
  for (const MatD& p : pieces) n += p.size();
  MatD out(1, n);
  std::int64_t at = 0;
  for (const MatD& p : pieces) {
    std::copy(p.data(), p.data() + p.size(), out.data() + at);
    at += p.size();
  }
  return out;
}

MatD flattened(const MatD& block) { return Eigen::Map<const MatD>(block.data(), 1, block.size()); }

// mesh+shard: NS of each hosted rank's block, the non-empty ones in one batch (as `shard` runs them).
void run_blocks(const Backend& b, const MeshMatrix& mm, const NsConfig& cfg, Communicator& comm, std::vector<MatD>& out) {
  const MeshLayout& m = mm.layout;
  Batch blocks;
  std::vector<int> holding;
  for (int r : comm.hosted_ranks()) {
    const MatD& piece = mm.pieces[static_cast<std::size_t>(r)];
    out[static_cast<std::size_t>(r)] = piece;
    if (piece.size() == 0) continue;
    const auto [rows, cols] = m.block_shape(r);
    blocks.push_back(Eigen::Map<const MatD>(piece.data(), rows, cols));
    holding.push_back(r);
  }
  const Batch results = b.newton_schulz(blocks, cfg);
  for (std::size_t k = 0; k < holding.size(); ++k) out[static_cast<std::size_t>(holding[k])] = flattened(results[k]);
}

// `mesh`: the TP strategy over the whole mesh, every rank's piece read as its block.
void run_on_mesh(MeshStrategy s, const Backend& b, const MeshMatrix& mm, const NsConfig& cfg, const StrategyOptions& opt,
                 Communicator& comm, std::vector<MatD>& out) {
  const MeshLayout& m = mm.layout;
  const Layout layout = *composed_layout(m);
  ShardedMatrix sm{std::vector<MatD>(static_cast<std::size_t>(m.size())), layout, mm.head_dim};
  for (int r : comm.hosted_ranks()) {
    const auto [rows, cols] = m.block_shape(r);
    const MatD& piece = mm.pieces[static_cast<std::size_t>(r)];
    if (piece.size() != rows * cols) throw std::invalid_argument("run_mesh_strategy: mesh rank " + std::to_string(r) + "'s piece has the wrong size");
    sm.shards[static_cast<std::size_t>(r)] = Eigen::Map<const MatD>(piece.data(), rows, cols);
  }
  const StrategyRun run = run_strategy(s.tp, b, sm, cfg, opt, comm);
  for (int r : comm.hosted_ranks()) out[static_cast<std::size_t>(r)] = flattened(run.outputs[static_cast<std::size_t>(r)]);
}

// The TP stage on TP group d: the strategy on the restored shards of the ranks it hosts; returns
// each hosted TP rank's block of the result (indexed by TP rank, empty elsewhere).
std::vector<MatD> run_tp_stage(MeshStrategy s, const Backend& b, const MeshMatrix& mm, const NsConfig& cfg,
                               const StrategyOptions& opt, Communicator& tp_group, const std::vector<MatD>& shard_of) {
  ShardedMatrix sm{std::vector<MatD>(static_cast<std::size_t>(mm.layout.tp_size())), mm.layout.tp, mm.head_dim};
  for (int t : tp_group.hosted_ranks()) sm.shards[static_cast<std::size_t>(t)] = shard_of[static_cast<std::size_t>(t)];
  return run_strategy(s.tp, b, sm, cfg, opt, tp_group).outputs;
}

MatD restored_shard(const MeshLayout& m, int t, const std::vector<MatD>& pieces) {
  const auto [rows, cols] = m.shard_shape(t);
  return shard_from_flat(concatenate_flat(pieces), rows, cols);
}

void run_dp_gather(MeshStrategy s, const Backend& b, const MeshMatrix& mm, const NsConfig& cfg, const StrategyOptions& opt,
                   const MeshCommunicators& comms, std::vector<MatD>& out) {
  const MeshLayout& m = mm.layout;
  std::vector<MatD> shard_of(static_cast<std::size_t>(m.tp_size()));
  for (int t = 0; t < m.tp_size(); ++t) {
    Communicator* dp_group = comms.dp_groups[static_cast<std::size_t>(t)];
    if (!dp_group) continue;
    std::vector<MatD> mine;
    for (int d : dp_group->hosted_ranks()) mine.push_back(mm.pieces[static_cast<std::size_t>(m.mesh_rank(t, d))]);
    shard_of[static_cast<std::size_t>(t)] = restored_shard(m, t, {dp_group->all_gather(mine, 1, opt.storage)});
  }
  for (int d = 0; d < m.dp; ++d) {
    Communicator* tp_group = comms.tp_groups[static_cast<std::size_t>(d)];
    if (!tp_group) continue;
    const std::vector<MatD> blocks = run_tp_stage(s, b, mm, cfg, opt, *tp_group, shard_of);
    for (int t : tp_group->hosted_ranks())
      out[static_cast<std::size_t>(m.mesh_rank(t, d))] =
          flat_piece(blocks[static_cast<std::size_t>(t)], m.pieces[static_cast<std::size_t>(t)][static_cast<std::size_t>(d)]);
  }
}

void run_dp_owner(MeshStrategy s, const Backend& b, const MeshMatrix& mm, const NsConfig& cfg, const StrategyOptions& opt,
                  int owner, const MeshCommunicators& comms, std::vector<MatD>& out) {
  const MeshLayout& m = mm.layout;
  const auto dp = static_cast<std::size_t>(m.dp), o = static_cast<std::size_t>(owner);
  std::vector<MatD> shard_of(static_cast<std::size_t>(m.tp_size()));
  for (int t = 0; t < m.tp_size(); ++t) {
    Communicator* dp_group = comms.dp_groups[static_cast<std::size_t>(t)];
    if (!dp_group) continue;
    const std::vector<int>& hosted = dp_group->hosted_ranks();
    std::vector<std::vector<MatD>> to(hosted.size(), std::vector<MatD>(dp));
    for (std::size_t i = 0; i < hosted.size(); ++i) to[i][o] = mm.pieces[static_cast<std::size_t>(m.mesh_rank(t, hosted[i]))];
    const auto received = dp_group->all_to_all(to, opt.storage);
    for (std::size_t i = 0; i < hosted.size(); ++i)
      if (hosted[i] == owner) shard_of[static_cast<std::size_t>(t)] = restored_shard(m, t, received[i]);
  }
  std::vector<MatD> blocks;
  if (Communicator* tp_group = comms.tp_groups[o]) blocks = run_tp_stage(s, b, mm, cfg, opt, *tp_group, shard_of);
  for (int t = 0; t < m.tp_size(); ++t) {
    Communicator* dp_group = comms.dp_groups[static_cast<std::size_t>(t)];
    if (!dp_group) continue;
    const std::vector<int>& hosted = dp_group->hosted_ranks();
    std::vector<std::vector<MatD>> back(hosted.size(), std::vector<MatD>(dp));
    for (std::size_t i = 0; i < hosted.size(); ++i)
      if (hosted[i] == owner)
        for (std::size_t d = 0; d < dp; ++d) back[i][d] = flat_piece(blocks[static_cast<std::size_t>(t)], m.pieces[static_cast<std::size_t>(t)][d]);
    const auto returned = dp_group->all_to_all(back, opt.storage);
    for (std::size_t i = 0; i < hosted.size(); ++i) out[static_cast<std::size_t>(m.mesh_rank(t, hosted[i]))] = returned[i][o];
  }
}

// What the run's communicators recorded, as MeshPlan counts it.
Ledger recorded_ledger(const MeshLayout& m, const MeshCommunicators& comms) {
  Ledger out;
  out.ranks.resize(static_cast<std::size_t>(m.size()));
  std::vector<int> every(static_cast<std::size_t>(m.size()));
  for (int r = 0; r < m.size(); ++r) every[static_cast<std::size_t>(r)] = r;
  detail::add_rows(out, comms.mesh->ledger(), every);
  detail::Calls dp_calls{}, tp_calls{};
  for (int t = 0; t < m.tp_size(); ++t)
    if (const Communicator* g = comms.dp_groups[static_cast<std::size_t>(t)]) {
      detail::add_rows(out, g->ledger(), detail::dp_members(m, t));
      dp_calls = detail::max_calls(dp_calls, g->ledger().calls);
    }
  for (int d = 0; d < m.dp; ++d)
    if (const Communicator* g = comms.tp_groups[static_cast<std::size_t>(d)]) {
      detail::add_rows(out, g->ledger(), detail::tp_members(m, d));
      tp_calls = detail::max_calls(tp_calls, g->ledger().calls);
    }
  for (std::size_t c = 0; c < out.calls.size(); ++c) out.calls[c] = comms.mesh->ledger().calls[c] + dp_calls[c] + tp_calls[c];
  return out;
}

void check_communicators(const MeshLayout& m, const MeshCommunicators& comms) {
  if (!comms.mesh || comms.mesh->size() != m.size() || static_cast<int>(comms.tp_groups.size()) != m.dp ||
      static_cast<int>(comms.dp_groups.size()) != m.tp_size())
    throw std::invalid_argument("run_mesh_strategy: the communicators are not those of a " + std::to_string(m.tp_size()) + " x " +
                                std::to_string(m.dp) + " mesh");
}

}  // namespace

SimulatedMesh::SimulatedMesh(int tp, int dp, ReductionOrder order) : tp_(tp), dp_(dp) {
  owned_.push_back(make_simulated_communicator(tp * dp, order));
  for (int d = 0; d < dp; ++d) owned_.push_back(make_simulated_communicator(tp, order));
  for (int t = 0; t < tp; ++t) owned_.push_back(make_simulated_communicator(dp, order));
}

MeshCommunicators SimulatedMesh::communicators() {
  MeshCommunicators c{owned_[0].get(), {}, {}};
  for (int d = 0; d < dp_; ++d) c.tp_groups.push_back(owned_[static_cast<std::size_t>(1 + d)].get());
  for (int t = 0; t < tp_; ++t) c.dp_groups.push_back(owned_[static_cast<std::size_t>(1 + dp_ + t)].get());
  return c;
}

MeshMatrix shard_on_mesh(const MatD& g, const MeshLayout& m, std::int64_t head_dim) { return {split_mesh(g, m), m, head_dim}; }

MeshRun run_mesh_strategy(MeshStrategy s, const Backend& b, const MeshMatrix& mm, const NsConfig& cfg, const StrategyOptions& opt,
                          int dp_owner) {
  SimulatedMesh mesh(mm.layout.tp_size(), mm.layout.dp, opt.order);
  return run_mesh_strategy(s, b, mm, cfg, opt, dp_owner, mesh.communicators());
}

MeshRun run_mesh_strategy(MeshStrategy s, const Backend& b, const MeshMatrix& mm, const NsConfig& cfg, const StrategyOptions& opt,
                          int dp_owner, const MeshCommunicators& comms) {
  const MeshLayout& m = mm.layout;
  check_communicators(m, comms);
  if (static_cast<int>(mm.pieces.size()) != m.size())
    throw std::invalid_argument("run_mesh_strategy: one piece per mesh rank is required: " + std::to_string(mm.pieces.size()) +
                                " for " + std::to_string(m.size()));
  MeshPlan plan = plan_mesh_strategy(s, m, mm.head_dim, cfg, opt, dp_owner);  // validates; throws if inapplicable
  std::vector<MatD> out(static_cast<std::size_t>(m.size()));
  switch (s.stage) {
    case DpStage::mesh:
      if (is_block_ns(s))
        run_blocks(b, mm, cfg, *comms.mesh, out);
      else
        run_on_mesh(s, b, mm, cfg, opt, *comms.mesh, out);
      break;
    case DpStage::dp_gather: run_dp_gather(s, b, mm, cfg, opt, comms, out); break;
    case DpStage::dp_owner: run_dp_owner(s, b, mm, cfg, opt, dp_owner, comms, out); break;
  }
  return {s, std::move(out), recorded_ledger(m, comms), std::move(plan.ranks.flops), std::move(plan.ranks.extra_memory)};
}

}  // namespace nsv
