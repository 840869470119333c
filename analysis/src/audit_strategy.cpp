// One Muon matrix of the audit: its layout, what each strategy promises and costs on it, and
// the cheapest exact strategies.
#include <algorithm>
#include <map>
#include <vector>
#include <stdexcept>
#include <string>

#include "audit_stages.hpp"
#include "nsv/checked.hpp"
#include "nsv/muon.hpp"

namespace nsv {

const StrategyAudit& ParamAudit::strategy(Strategy s) const {
  for (const auto& a : strategies)
    if (a.strategy == s) return a;
  throw std::logic_error("audit: strategy missing");
}

namespace audit_stages {
namespace {

// Owner's cost of a step: the owning rank rotates over the matrices, so the mean over owners
// and ranks, kept as two rank vectors (as_owner, as_member). An owner plan sees a rank only
// through its shard's shape and whether it is the owner, so owners with the same shard shape have
// the same plan up to swapping the two ranks: one plan per distinct shape (a layout has at most
// three: the even width, the remainder, empty) gives every owner's costs, and the member costs of
// the planned owners are checked to agree rather than assumed to.
void add_owner_rotation(StrategyAudit& a, const MuonParam& p, const Layout& layout, const AuditOptions& o) {
  const auto n = static_cast<std::size_t>(layout.tp());
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::size_t>> owners_by_shape;
  for (std::size_t r = 0; r < n; ++r) owners_by_shape[shard_shape(layout, p.rows, p.cols, static_cast<int>(r))].push_back(r);
  std::vector<bool> member_seen(n, false);
  a.as_owner.resize(n);
  a.as_member.resize(n);
  for (const auto& [shape, owners] : owners_by_shape) {
    const std::size_t planned = owners.front();
    const std::vector<RankCost> costs = rank_costs(plan_owner(layout, p.rows, p.cols, o.ns, o.comm, static_cast<int>(planned)), o.cost);
    for (std::size_t r = 0; r < n; ++r) {
      if (r == planned) continue;
      if (!member_seen[r]) {
        a.as_member[r] = costs[r];
        member_seen[r] = true;
      } else if (a.as_member[r] != costs[r]) {
        throw std::logic_error("audit: " + p.name + ": rank " + std::to_string(r) + "'s owner cost depends on which other rank owns it");
      }
    }
    for (std::size_t owner : owners) a.as_owner[owner] = costs[planned];
  }
  // With one shape only, the planned owner is a member in no plan yet: one more plan, another owner.
  for (std::size_t r = 0; r < n; ++r)
    if (!member_seen[r] && n > 1) {
      const std::size_t other = r == 0 ? 1 : 0;
      a.as_member[r] = rank_cost(plan_owner(layout, p.rows, p.cols, o.ns, o.comm, static_cast<int>(other)), static_cast<int>(r), o.cost);
    }
  // Owner by owner, rank by rank: the order of the sum over every owner's plan.
  double sum = 0;
  for (std::size_t owner = 0; owner < n; ++owner)
    for (std::size_t r = 0; r < n; ++r) sum += (r == owner ? a.as_owner[r] : a.as_member[r]).time_s();
  a.step_share_s = sum / (double(layout.tp()) * double(layout.tp()));
}

StrategyAudit audit_strategy(Strategy s, const MuonParam& p, const Layout& layout, const AuditOptions& o) {
  StrategyAudit a;
  a.strategy = s;
  a.target = natural_target(s);
  const std::int64_t head_dim = p.heads_on_rows() ? p.head_dim : 0;
  try {
    a.plan = plan_strategy(s, layout, p.rows, p.cols, head_dim, o.ns, o.comm);
  } catch (const std::invalid_argument& e) {
    a.applicable = false;
    a.why_not = s == Strategy::per_head && p.heads == 0
                    ? p.name + " has no head structure: per-head NS says nothing about it (SPEC §1.3)"
                    : e.what();
    return a;
  }
  a.promise = promise_on(s, layout);
  a.ranks = rank_costs(a.plan, o.cost);
  for (const auto& r : a.ranks) a.time_s = std::max(a.time_s, r.time_s());
  a.step_share_s = a.time_s;
  if (s == Strategy::owner) add_owner_rotation(a, p, layout, o);
  return a;
}

std::optional<Strategy> cheapest_of(const ParamAudit& p, std::vector<Strategy> candidates) {
  // A matrix every rank holds whole: each rank's own NS is the whole matrix's, with nothing sent.
  if (p.layout.fully_replicated()) candidates.insert(candidates.begin(), Strategy::shard);
  std::optional<Strategy> best;
  double best_t = 0;
  for (Strategy s : candidates) {
    const auto& a = p.strategy(s);
    if (!a.exact()) continue;
    if (!best || a.step_share_s < best_t) best = s, best_t = a.step_share_s;
  }
  return best;
}

// Each sub-matrix's rows on each rank, from the fused layout's pieces.
std::vector<SubMatrixAudit> sub_matrices(const MuonParam& p, const Layout& layout) {
  std::vector<SubMatrixAudit> out;
  std::int64_t begin = 0;
  for (const SubMatrix& part : p.parts) {
    SubMatrixAudit s;
    s.part = part;
    s.begin = begin;
    const std::int64_t end = begin + part.rows;
    for (const Range& r : layout.replicated)
      if (r.begin <= begin && end <= r.end) s.replicated = true;
    s.whole_heads = part.has_heads && p.head_dim > 0;
    for (int rank = 0; rank < layout.tp(); ++rank) {
      std::int64_t mine = 0, others = 0;
      for (const Range& piece : layout.ranks[static_cast<std::size_t>(rank)]) {
        const std::int64_t lo = std::max(piece.begin, begin), hi = std::min(piece.end, end);
        const std::int64_t overlap = std::max<std::int64_t>(0, hi - lo);
        mine += overlap;
        others += piece.size() - overlap;
        if (overlap > 0 && p.head_dim > 0 && ((lo - begin) % p.head_dim != 0 || overlap % p.head_dim != 0)) s.whole_heads = false;
      }
      s.rows_per_rank.push_back(mine);
      if (mine > 0 && others > 0) s.mixed_under_shard = true;
    }
    out.push_back(std::move(s));
    begin = end;
  }
  return out;
}

// Whole experts per rank: E // tp + (r < E % tp) experts of this matrix on rank r, each NS'd there.
ExpertParallelAudit expert_parallelism(const MuonParam& p, const AuditOptions& o) {
  ExpertParallelAudit ep;
  const std::uint64_t flops = ns_flops(o.ns, p.rows, p.cols);
  for (int r = 0; r < o.tp; ++r) {
    const std::int64_t n = p.copies / o.tp + (r < p.copies % o.tp ? 1 : 0);
    ep.experts_per_rank.push_back(n);
    RankCost c;
    c.flops = detail::checked_mul<std::uint64_t>(flops, static_cast<std::uint64_t>(n), p.name + ": expert-parallel NS FLOPs");
    c.compute_s = static_cast<double>(c.flops) / (o.cost.tflops * 1e12);
    ep.time_s = std::max(ep.time_s, c.time_s());
    ep.ranks.push_back(c);
  }
  return ep;
}

// The plain FLOP count of NS on one matrix is below 16 x steps x n^2 x m (n <= m its sides: three
// products of at most 2 n^2 m each per step, restarts included); refuse a matrix whose count could
// pass 2^63 before any counter is computed from it.
void check_countable(const MuonParam& p, const NsConfig& ns) {
  const long double n = static_cast<long double>(std::min(p.rows, p.cols)), m = static_cast<long double>(std::max(p.rows, p.cols));
  if (16.0L * static_cast<long double>(ns.steps) * n * n * m >= 9.2e18L)
    throw std::overflow_error(p.name + " (" + std::to_string(p.rows) + "x" + std::to_string(p.cols) +
                              "): its NS FLOP count does not fit in 64 bits");
}

}  // namespace

ParamAudit audit_param(const MuonParam& p, const AuditOptions& o) {
  check_countable(p, o.ns);
  ParamAudit pa;
  pa.param = p;
  pa.layout = autotp_layout(p, o.tp, o.grain);
  pa.shard_sizes = pa.layout.widths();
  for (int r = 0; r < o.tp; ++r)
    if (pa.shard_sizes[static_cast<std::size_t>(r)] == 0) pa.zero_width_ranks.push_back(r);
  for (Strategy s : kAllStrategies) pa.strategies.push_back(audit_strategy(s, p, pa.layout, o));
  pa.per_head_applies = pa.strategy(Strategy::per_head).applicable;
  pa.whole_ns_flops = ns_flops(o.ns, p.rows, p.cols);
  pa.scale_global = aspect_scale(p.rows, p.cols);
  for (int r = 0; r < o.tp; ++r) {
    const auto [sr, sc] = shard_shape(pa.layout, p.rows, p.cols, r);
    pa.scale_local.push_back(sr * sc > 0 ? aspect_scale(sr, sc) : 0.0);
  }
  pa.cheapest_bit_identical = cheapest_of(pa, {Strategy::gather, Strategy::owner});
  pa.cheapest_exact = cheapest_of(pa, {Strategy::gather, Strategy::owner, Strategy::gram_allreduce, Strategy::gram_restart_allreduce});
  if (p.fused != FusedKind::none) pa.parts = sub_matrices(p, pa.layout);
  if (p.expert) pa.expert_parallel = expert_parallelism(p, o);
  return pa;
}

}  // namespace audit_stages
}  // namespace nsv
