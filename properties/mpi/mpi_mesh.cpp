// A 2 x 2 TP x DP mesh on four real ranks (issue 30): `mpirun -np 4` as mesh ranks d * 2 + t, the
// TP groups and DP groups as MPI sub-communicators (MPI_Comm_split), every collective on
// MpiCommunicator in `fixed` mode.
//
//   MM-fixed  for every mesh strategy that applies to a drawn case (mesh_cases: ZeRO and FSDP2
//             partitions, either axis, GQA projections, uneven and empty pieces) and each owning
//             DP index, every rank's piece equals the simulated run's bit for bit. Why: each
//             process holds only its piece, everything else arrives through MPI, and the fixed
//             mode reduces through the simulation's own reduce_in_order.
// Negative control: one fp32 ulp changed in one input element (fp64 compute) is seen by the same
// comparison.
#include "mpi_mesh.hpp"

#include <mpi.h>

#include <iostream>
#include <sstream>
#include <string>

#include "generators/configs.hpp"
#include "mpi_gather.hpp"
#include "generators/tiers.hpp"
#include "nsv/mesh_strategies.hpp"
#include "nsv/metrics.hpp"
#include "nsv/mpi_communicator.hpp"
#include "sharding/mesh_generators.hpp"

namespace nsv::checks::mpi {
namespace {

constexpr int kTp = 2, kDp = 2;

struct MeshCaseWithConfig {
  shard::MeshCase mesh;
  NsConfig cfg;
  ReductionOrder order = ReductionOrder::rank;
};

rc::Gen<MeshCaseWithConfig> cases(std::int64_t max_side) {
  return rc::gen::map(rc::gen::tuple(shard::mesh_cases(rc::gen::just(kTp), rc::gen::just(kDp), 1, max_side), ns_configs(),
                                     rc::gen::elementOf(kAllReductionOrders)),
                      [](const std::tuple<shard::MeshCase, NsConfig, ReductionOrder>& t) {
                        const auto& [mesh, cfg, order] = t;
                        return MeshCaseWithConfig{mesh, cfg, order};
                      });
}

// The mesh's communicators from this process's point of view.
struct RealMesh {
  MPI_Comm tp_comm = MPI_COMM_NULL, dp_comm = MPI_COMM_NULL;
  int t = 0, d = 0;

  RealMesh() {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    t = rank % kTp;
    d = rank / kTp;
    MPI_Comm_split(MPI_COMM_WORLD, d, t, &tp_comm);  // the TP group of DP index d, TP rank t
    MPI_Comm_split(MPI_COMM_WORLD, t, d, &dp_comm);  // the DP group of TP index t, DP rank d
  }
  ~RealMesh() {
    MPI_Comm_free(&tp_comm);
    MPI_Comm_free(&dp_comm);
  }
  RealMesh(const RealMesh&) = delete;
  RealMesh& operator=(const RealMesh&) = delete;
};

// This process's piece of the strategy's result, run on fresh communicators.
MatD run_real(const RealMesh& rm, MeshStrategy s, const MatD& g, const shard::MeshCase& c, const NsConfig& cfg,
              ReductionOrder order, int owner) {
  MpiCommunicator mesh(MPI_COMM_WORLD, MpiReduction::fixed, order), tp(rm.tp_comm, MpiReduction::fixed, order),
      dp(rm.dp_comm, MpiReduction::fixed, order);
  MeshCommunicators comms{&mesh, std::vector<Communicator*>(kDp, nullptr), std::vector<Communicator*>(kTp, nullptr)};
  comms.tp_groups[static_cast<std::size_t>(rm.d)] = &tp;
  comms.dp_groups[static_cast<std::size_t>(rm.t)] = &dp;
  const MeshLayout m = c.layout();
  MeshMatrix mine = shard_on_mesh(g, m, c.head_dim());
  const int me = m.mesh_rank(rm.t, rm.d);
  for (int r = 0; r < m.size(); ++r)
    if (r != me) mine.pieces[static_cast<std::size_t>(r)] = MatD();
  return run_mesh_strategy(s, shard::backend(), mine, cfg, {order, DType::fp32}, owner, comms).pieces[static_cast<std::size_t>(me)];
}

// The first mesh rank whose piece differs in a bit from `want`, with its worst element, or "".
std::string first_difference(const std::vector<MatD>& got, const std::vector<MatD>& want) {
  for (std::size_t r = 0; r < want.size(); ++r) {
    if (got[r].size() != want[r].size())
      return "mesh rank " + std::to_string(r) + ": " + std::to_string(got[r].size()) + " elements instead of " + std::to_string(want[r].size());
    // As 1 x n rows: an empty piece's shape is whatever its transport gave it.
    const ElementDiff diff = compare_bits(Eigen::Map<const MatD>(got[r].data(), 1, got[r].size()),
                                          Eigen::Map<const MatD>(want[r].data(), 1, want[r].size()), DType::fp64);
    if (!diff.identical) return "mesh rank " + std::to_string(r) + ": " + diff.describe();
  }
  return "";
}

std::string case_text(const MeshCaseWithConfig& c) {
  std::ostringstream os;
  shard::showValue(c.mesh, os);
  os << "; " << kernel_name(c.cfg.kernel) << " kernel, " << dtype_name(c.cfg.dtype) << ", " << c.cfg.steps << " steps, order "
     << reduction_order_name(c.order);
  return os.str();
}

}  // namespace

bool check_mesh_2x2(std::uint64_t seed, int first, int count, std::int64_t max_side) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const RealMesh rm;
  std::string failure;
  int runs = 0;
  for (int i = first; i < first + count && failure.empty(); ++i) {
    const MeshCaseWithConfig c = sample(cases(max_side), seed + static_cast<std::uint64_t>(i));
    const MatD g = c.mesh.matrix();
    const MeshLayout m = c.mesh.layout();
    for (const MeshStrategy& s : all_mesh_strategies()) {
      if (!mesh_inapplicable_reason(s, m, c.mesh.head_dim()).empty()) continue;
      for (int owner = 0; owner < (s.stage == DpStage::dp_owner ? kDp : 1); ++owner) {
        const std::vector<MatD> real = gather_blocks(MPI_COMM_WORLD, run_real(rm, s, g, c.mesh, c.cfg, c.order, owner));
        ++runs;
        if (rank != 0 || !failure.empty()) continue;
        const MeshRun sim = run_mesh_strategy(s, shard::backend(), shard_on_mesh(g, m, c.mesh.head_dim()), c.cfg,
                                              {c.order, DType::fp32}, owner);
        if (const std::string diff = first_difference(real, sim.pieces); !diff.empty())
          failure = "MM-fixed (real 2 x 2 mesh == simulation) fails for " + mesh_strategy_name(s) + " (DP owner " +
                    std::to_string(owner) + ") on " + case_text(c) + ": " + diff + "\n  replay: NSV_MPI_SEED=" + std::to_string(seed) +
                    " NSV_MPI_FIRST_CASE=" + std::to_string(i) + " NSV_MPI_CASES=1 NSV_PROPS_MAX_DIM=" + std::to_string(max_side) +
                    " mpirun --oversubscribe -np 4 <build>/properties/mpi_props";
      }
    }
    // The negative control on the same case: one ulp of the input, fp64 compute.
    NsConfig cfg64;
    cfg64.kernel = c.cfg.kernel;
    cfg64.dtype = DType::fp64;
    const MeshStrategy s{DpStage::dp_owner, Strategy::gather};
    const std::vector<MatD> changed = gather_blocks(MPI_COMM_WORLD, run_real(rm, s, shard::with_one_ulp_changed(g, 0), c.mesh, cfg64, c.order, 0));
    if (rank == 0 && failure.empty() && g.size() > 1 &&
        first_difference(changed, run_mesh_strategy(s, shard::backend(), shard_on_mesh(g, m), cfg64, {c.order, DType::fp32}).pieces).empty())
      failure = "negative control fails: one ulp changed in the input gave the same bits on the real mesh, on " + case_text(c);
    int stop = failure.empty() ? 0 : 1;
    MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (stop && rank != 0) failure = "failed on rank 0";
  }
  if (rank == 0) {
    if (!failure.empty()) std::cerr << failure << "\n";
    std::cout << "mpi_props: 2 x 2 TP x DP mesh, " << count << " cases from seed " << seed << " (" << runs
              << " strategy runs): " << (failure.empty() ? "passed" : "FAILED") << std::endl;
  }
  int ok = failure.empty() ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return ok != 0;
}

}  // namespace nsv::checks::mpi
