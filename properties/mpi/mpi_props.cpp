// Real ranks against the simulation (issue 15), run by CTest as `mpirun -np 2` and `-np 4`.
//
// Claims, for every strategy that applies to a drawn case (mpi_cases.hpp), each process holding
// only its own rank's shard:
//   M-fixed   on MpiCommunicator in `fixed` mode, every rank's output equals the simulated run's
//             block for that rank bit for bit, with the same reduction order. Why: the fixed mode
//             sums the gathered contributions through the simulation's own reduce_in_order, and
//             everything else a rank computes is the same code on the same values.
//   M-exact   the strategies whose promise on the layout is bit-identical equal the target (the
//             whole matrix's NS, or per-head NS) bit for bit on real ranks too.
//   M-ledger  the byte model's ledger recorded on the ranks from the element counts they
//             actually exchanged equals the simulated ledger, row for row, call for call.
//   M-native  with `native` MPI_Allreduce (the library's own order), the all-reduce strategies
//             stay within S5's bound (checks/sharding/allreduce_bound.hpp: 2 S + N1, N1 being
//             the native run's own 1-step noise) at fp32 for sides >= kTwoDrawMinSide (16), the range S5 is made for;
//             the strategies without an all-reduce equal the fixed mode's bits.
//   M-handed  handed(), what MpiCommunicator says it handed to MPI, equals the calls and buffer
//             bytes its MPI calls were really given, tallied by interposed collectives
//             (mpi_call_tally.hpp): a second count, made outside the library.
//   M-pool    the sweeps' work pool: each item consumed once, a failing item reported, no hang.
//   MM-fixed  at 4 processes, a 2 x 2 TP x DP mesh equals its simulation bit for bit for every
//             mesh strategy (mpi_mesh.cpp).
// Negative controls (the checks can fail): one fp32 ulp changed in one input element of a
// rank's shard is seen by the bit comparison of M-fixed; at tp >= 3 the `reverse` order on real
// ranks differs from the simulated `rank` order for gram_allreduce in some case of the list; the
// interposed tally counts a known all-reduce (3 doubles: one call, 24 bytes each way).
//
// The independent part: the simulation is one process computing every rank; here each process
// sees only its shard and everything else arrives through MPI. A shard that the executions read
// when they should not is empty here, so they would fail.
//
// Environment: NSV_MPI_SEED (default 15), NSV_MPI_CASES (default 24), NSV_PROPS_MAX_DIM (side
// limit; CTest sets 24). A failure prints the line that replays it.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include "sharding/allreduce_bound.hpp"
#include "generators/tiers.hpp"
#include "mpi_call_tally.hpp"
#include "mpi_cases.hpp"
#include "mpi_gather.hpp"
#include "mpi_mesh.hpp"
#include "nsv/metrics.hpp"
#include "nsv/mpi_communicator.hpp"
#include "nsv/mpi_session.hpp"
#include "nsv/work_pool.hpp"

namespace nsv::checks::mpi {
namespace {

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : fallback;
}

// What rank r of the group holds: its shard; the other ranks' shards are empty.
ShardedMatrix own_shard_only(const MatD& g, const Layout& layout, std::int64_t head_dim, int rank) {
  ShardedMatrix m = shard_matrix(g, layout, head_dim);
  for (int r = 0; r < layout.tp(); ++r)
    if (r != rank) m.shards[static_cast<std::size_t>(r)] = MatD();
  return m;
}

struct RealRun {
  std::vector<MatD> blocks;     // rank 0 only
  Ledger ledger;                // every row, rank 0 only
  std::string handed_mismatch;  // rank 0 only: the first rank whose handed() differs from its calls
};

CallTally handed_totals(const HandedLedger& handed) {
  CallTally t;
  for (const HandedTraffic& h : handed) {
    t.calls += h.mpi_calls;
    t.send_bytes += h.send_buffer_bytes;
    t.receive_bytes += h.receive_buffer_bytes;
  }
  return t;
}

// M-handed on rank 0: every rank's handed() totals beside what its MPI calls were given.
std::string first_handed_mismatch(MPI_Comm group, const CallTally& said, const CallTally& seen) {
  int size = 1, rank = 0;
  MPI_Comm_size(group, &size);
  MPI_Comm_rank(group, &rank);
  const std::uint64_t mine[6] = {said.calls, said.send_bytes, said.receive_bytes, seen.calls, seen.send_bytes, seen.receive_bytes};
  std::vector<std::uint64_t> all(6 * static_cast<std::size_t>(size));
  MPI_Gather(mine, 6, MPI_UINT64_T, all.data(), 6, MPI_UINT64_T, 0, group);
  if (rank != 0) return {};
  for (int r = 0; r < size; ++r) {
    const std::uint64_t* v = all.data() + 6 * static_cast<std::size_t>(r);
    if (v[0] != v[3] || v[1] != v[4] || v[2] != v[5])
      return "rank " + std::to_string(r) + ": handed() says " + std::to_string(v[0]) + " calls, " + std::to_string(v[1]) +
             " bytes sent, " + std::to_string(v[2]) + " received; its MPI calls were given " + std::to_string(v[3]) + ", " +
             std::to_string(v[4]) + ", " + std::to_string(v[5]);
  }
  return {};
}

RealRun run_on_ranks(MPI_Comm group, Strategy s, const ShardedMatrix& m, const NsConfig& cfg, MpiReduction mode,
                     ReductionOrder order) {
  MpiCommunicator comm(group, mode, order);
  CallTally seen;
  const StrategyRun run = [&] {
    const TallyScope scope(seen);
    return run_strategy(s, shard::backend(), m, cfg, {order, DType::fp32}, comm);
  }();
  std::string mismatch = first_handed_mismatch(group, handed_totals(comm.handed()), seen);
  return {gather_blocks(group, run.outputs[static_cast<std::size_t>(comm.rank())]), gather_ledger(comm), std::move(mismatch)};
}

// The first rank whose block differs in any bit, or -1; its worst element into `detail`.
int first_differing_rank(const std::vector<MatD>& got, const std::vector<MatD>& want, std::string& detail) {
  for (std::size_t r = 0; r < want.size(); ++r) {
    if (got[r].rows() != want[r].rows() || got[r].cols() != want[r].cols()) {
      detail = "shape " + std::to_string(got[r].rows()) + "x" + std::to_string(got[r].cols()) + " instead of " +
               std::to_string(want[r].rows()) + "x" + std::to_string(want[r].cols());
      return static_cast<int>(r);
    }
    const ElementDiff c = compare_bits(got[r], want[r], DType::fp64);
    if (!c.identical) {
      detail = c.describe();
      return static_cast<int>(r);
    }
  }
  return -1;
}

class Checker {
 public:
  Checker(MPI_Comm group, std::uint64_t seed, int index, const MpiCase& c) : group_(group), seed_(seed), index_(index), case_(c) {
    MPI_Comm_rank(group, &rank_);
  }
  int rank() const { return rank_; }

  // Records a failed claim (rank 0 decides; the verdict is shared by `passed`).
  void fail(const std::string& claim, Strategy s, const std::string& what) {
    if (!failure_.empty()) return;
    std::ostringstream os;
    showValue(case_, os);
    failure_ = claim + " fails for " + std::string(strategy_name(s)) + " on " + os.str() + ": " + what;
  }

  bool passed() {
    int bad = failure_.empty() ? 0 : 1;
    MPI_Bcast(&bad, 1, MPI_INT, 0, group_);
    if (bad && rank_ == 0) {
      int world = 1;
      MPI_Comm_size(MPI_COMM_WORLD, &world);
      std::cerr << failure_ << "\n  replay: NSV_MPI_SEED=" << seed_ << " NSV_MPI_FIRST_CASE=" << index_
                << " NSV_MPI_CASES=1 NSV_PROPS_MAX_DIM=" << max_dim() << " mpirun --oversubscribe -np " << world
                << " <build>/properties/mpi_props\n";
    }
    return !bad;
  }

 private:
  MPI_Comm group_;
  std::uint64_t seed_;
  int index_;
  MpiCase case_;
  int rank_ = 0;
  std::string failure_;
};

// M-fixed, M-exact, M-ledger for one strategy.
void check_fixed(Checker& ck, MPI_Comm group, Strategy s, const MpiCase& c, const MatD& g) {
  const Layout layout = c.layout();
  const RealRun real = run_on_ranks(group, s, own_shard_only(g, layout, c.head_dim(), ck.rank()), c.cfg, MpiReduction::fixed, c.order);
  if (ck.rank() != 0) return;
  const StrategyRun sim = run_strategy(s, shard::backend(), shard_matrix(g, layout, c.head_dim()), c.cfg, {c.order, DType::fp32});
  std::string detail;
  if (const int r = first_differing_rank(real.blocks, sim.outputs, detail); r >= 0)
    ck.fail("M-fixed (real ranks == simulation)", s, "rank " + std::to_string(r) + ": " + detail);
  if (!shard::same_ledger(real.ledger, sim.ledger)) ck.fail("M-ledger (real ledger == simulated ledger)", s, "the ledgers differ");
  if (!real.handed_mismatch.empty()) ck.fail("M-handed (handed() == what its MPI calls were given)", s, real.handed_mismatch);
  if (promise_on(s, layout) == Promise::bit_identical) {
    const MatD target = target_result(strategy_record(s).target, shard::backend(), g, c.head_dim(), c.cfg);
    if (const int r = first_differing_rank(real.blocks, split(target, layout), detail); r >= 0)
      ck.fail("M-exact (real ranks == target)", s, "rank " + std::to_string(r) + ": " + detail);
  }
}

// M-native for one strategy.
void check_native(Checker& ck, MPI_Comm group, Strategy s, const MpiCase& c, const MatD& g) {
  const Layout layout = c.layout();
  const ShardedMatrix mine = own_shard_only(g, layout, c.head_dim(), ck.rank());
  const RealRun native = run_on_ranks(group, s, mine, c.cfg, MpiReduction::native, c.order);
  const bool reduces = strategy_record(s).operand == Operand::sharded_frame;
  const bool in_s5_range = c.cfg.dtype == DType::fp32 && std::min(g.rows(), g.cols()) >= checks::kTwoDrawMinSide;
  NsConfig one = c.cfg;
  one.steps = 1;
  const RealRun native1 = reduces && in_s5_range ? run_on_ranks(group, s, mine, one, MpiReduction::native, c.order) : RealRun{};
  if (ck.rank() != 0) return;
  if (!native.handed_mismatch.empty()) ck.fail("M-handed (handed() == what its MPI calls were given)", s, native.handed_mismatch);
  const StrategyRun sim = run_strategy(s, shard::backend(), shard_matrix(g, layout, c.head_dim()), c.cfg, {c.order, DType::fp32});
  std::string detail;
  if (!reduces) {
    if (const int r = first_differing_rank(native.blocks, sim.outputs, detail); r >= 0)
      ck.fail("M-native (no all-reduce: native == fixed)", s, "rank " + std::to_string(r) + ": " + detail);
    return;
  }
  if (!in_s5_range) return;
  // S with S5's permuted draws (allreduce_bound.hpp), from the case's seed
  shard::PermutedDraws perms;
  perms.sample(g.rows(), g.cols(), c.seed());
  const shard::S5Measure m = shard::measure_s5(s, g, layout, c.cfg, &perms);
  const double dist = rel_diff(assemble(native.blocks, layout), newton_schulz(shard::backend(), g, c.cfg));
  const double n1 = rel_diff(assemble(native1.blocks, layout), newton_schulz(shard::backend(), g, one));
  const double bound = 2 * m.scale + n1;  // allreduce_bound.hpp: kS5Derivation
  if (!(dist <= bound)) {
    std::ostringstream os;
    os << std::hexfloat << "rel_diff " << dist << " > 2 S + N1 = " << bound << " (S " << m.scale << ", N1 " << n1 << ")";
    ck.fail("M-native (S5 bound)", s, os.str());
  }
}

// The negative controls on case `c`; returns whether the reverse-order control saw a difference.
bool negative_controls(Checker& ck, MPI_Comm group, const MpiCase& c, const MatD& g) {
  const Layout layout = c.layout();
  // One fp32 ulp in the first element, at fp64 (where no rounding to the compute dtype can hide
  // it): the real ranks' result must no longer equal the simulation's on the unchanged input.
  NsConfig cfg64 = c.cfg;
  cfg64.dtype = DType::fp64;
  const RealRun real = run_on_ranks(group, Strategy::gather, own_shard_only(shard::with_one_ulp_changed(g, 0), layout, 0, ck.rank()),
                                    cfg64, MpiReduction::fixed, c.order);
  if (ck.rank() == 0) {
    const StrategyRun sim = run_strategy(Strategy::gather, shard::backend(), shard_matrix(g, layout), cfg64, {c.order, DType::fp32});
    std::string detail;
    if (first_differing_rank(real.blocks, sim.outputs, detail) < 0)
      ck.fail("negative control (one ulp is seen)", Strategy::gather, "a changed input gave the same bits");
  }
  if (layout.tp() < 3) return false;
  const RealRun reversed = run_on_ranks(group, Strategy::gram_allreduce, own_shard_only(g, layout, 0, ck.rank()), c.cfg,
                                        MpiReduction::fixed, ReductionOrder::reverse);
  int differs = 0;
  if (ck.rank() == 0) {
    const StrategyRun sim = run_strategy(Strategy::gram_allreduce, shard::backend(), shard_matrix(g, layout), c.cfg,
                                         {ReductionOrder::rank, DType::fp32});
    std::string detail;
    differs = first_differing_rank(reversed.blocks, sim.outputs, detail) >= 0 ? 1 : 0;
  }
  MPI_Bcast(&differs, 1, MPI_INT, 0, group);
  return differs != 0;
}

// Every applicable strategy of case `index` on `group`; returns whether the case passed.
bool check_case(MPI_Comm group, std::uint64_t seed, int index, int tp, bool& reverse_differed) {
  const MpiCase c = sample(mpi_cases(tp, max_dim()), seed + static_cast<std::uint64_t>(index));
  Checker ck(group, seed, index, c);
  const MatD g = c.matrix();
  for (Strategy s : kAllStrategies) {
    if (!inapplicable_reason(s, c.layout(), c.head_dim()).empty()) continue;
    check_fixed(ck, group, s, c, g);
    check_native(ck, group, s, c, g);
  }
  reverse_differed = negative_controls(ck, group, c, g) || reverse_differed;
  return ck.passed();
}

// The work pool of distributed sweeps (nsv/work_pool.hpp): every item is consumed exactly once
// on rank 0, a failing item is reported (with its text) on every process instead of hanging the
// job, and every process takes part (each one's first request is answered with an item while
// items remain: 37 items over at most 4 processes).
bool check_work_pool(int world_rank, int world_size) {
  constexpr std::size_t kItems = 37, kFailing = 11;
  std::vector<int> consumed(kItems, 0), computed_by(kItems, -1);
  const PoolOutcome outcome = run_work_pool(
      MPI_COMM_WORLD, kItems,
      [&](std::size_t i) {
        if (i == kFailing) throw std::runtime_error("planted failure of item 11");
        return std::to_string(world_rank);
      },
      [&](std::size_t i, std::string&& by) {
        ++consumed[i];
        computed_by[i] = std::stoi(by);
      });
  bool ok = outcome.failed == 1 && outcome.first_error == "planted failure of item 11";
  if (world_rank == 0) {
    std::vector<bool> took_part(static_cast<std::size_t>(world_size), false);
    for (std::size_t i = 0; i < kItems; ++i) {
      ok = ok && consumed[i] == (i == kFailing ? 0 : 1);
      if (computed_by[i] >= 0) took_part[static_cast<std::size_t>(computed_by[i])] = true;
    }
    for (bool t : took_part) ok = ok && t;
    std::cout << "mpi_props: work pool over " << world_size << " processes: " << (ok ? "passed" : "FAILED") << std::endl;
  }
  int all_ok = ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all_ok != 0;
}

// The negative control of M-handed: the interposed tally sees a known call (a tally that saw
// nothing would make M-handed hold for any handed() of a strategy that does not communicate).
bool tally_sees_a_known_call() {
  double values[3] = {1, 2, 3};
  CallTally seen;
  {
    const TallyScope scope(seen);
    MPI_Allreduce(MPI_IN_PLACE, values, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  const bool ok = seen == CallTally{1, 24, 24};
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (!ok && rank == 0)
    std::cerr << "negative control fails: the interposed tally saw " << seen.calls << " calls, " << seen.send_bytes << " / "
              << seen.receive_bytes << " bytes for one all-reduce of 3 doubles (1, 24, 24)\n";
  return ok;
}

int run() {
  const MpiSession session;
  const std::uint64_t seed = env_or("NSV_MPI_SEED", 15);
  const int first = static_cast<int>(env_or("NSV_MPI_FIRST_CASE", 0));
  const int cases = static_cast<int>(env_or("NSV_MPI_CASES", 24));
  // The whole job as one group, and (when it splits) groups of 2 running side by side: a job of N
  // processes runs N / tp groups, each on its own sub-communicator. A job of 2 also runs groups of
  // one process (tp = 1 under mpirun: each process alone, as `mpirun nsv sweep --tp 1,2` does).
  std::vector<int> tps = {session.world_size()};
  if (session.world_size() > 2 && session.world_size() % 2 == 0) tps.push_back(2);
  if (session.world_size() == 2) tps.push_back(1);
  bool ok = tally_sees_a_known_call();
  ok = check_work_pool(session.world_rank(), session.world_size()) && ok;
  if (session.world_size() == 4) ok = check_mesh_2x2(seed, first, cases, max_dim()) && ok;
  for (int tp : tps) {
    const TpGroup group = split_into_tp_groups(tp);
    bool reverse_differed = false;
    for (int i = first; i < first + cases; ++i) ok = check_case(group.comm, seed, i, tp, reverse_differed) && ok;
    if (tp >= 3 && cases >= 8 && !reverse_differed) {
      if (session.world_rank() == 0)
        std::cerr << "negative control fails: the reverse order never differed from the rank order at tp " << tp << " over "
                  << cases << " cases\n";
      ok = false;
    }
    int all_ok = ok ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    ok = all_ok != 0;
    if (session.world_rank() == 0)
      std::cout << "mpi_props: tp " << tp << " in " << session.world_size() / tp << " group(s), " << cases
                << " cases from seed " << seed << ": " << (ok ? "passed" : "FAILED") << std::endl;
    MPI_Comm group_comm = group.comm;
    MPI_Comm_free(&group_comm);
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace nsv::checks::mpi

int main() {
  try {
    return nsv::checks::mpi::run();
  } catch (const std::exception& e) {
    std::cerr << "mpi_props: " << e.what() << "\n";
    nsv::abort_job(2);
  }
}
