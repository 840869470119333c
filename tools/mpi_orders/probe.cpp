// nsv_mpi_orders: which simulated reduction order (nsv/communicator.hpp) an MPI library's
// all-reduce reproduces, bit for bit. Run under mpirun, one process per rank; the all-reduce
// algorithm is whatever the launcher's MCA settings choose (tools/mpi_orders.sh loops over Open
// MPI's coll/tuned algorithms). Each rank contributes `--elements` fp32 values whose sums depend on
// the grouping of the additions (Gaussians scaled by powers of two in [2^-10, 2^10]); rank 0
// gathers every contribution, sums each element in every simulated order through the
// simulation's own reduce_in_order, and prints one JSON line: the orders whose sums equal the
// native MPI_Allreduce's on every element, and, per order, the number of elements that differ
// and the largest distance in fp32 ULPs.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "nsv/communicator.hpp"
#include "nsv/metrics.hpp"
#include "nsv/mpi_communicator.hpp"
#include "nsv/mpi_session.hpp"
#include "nsv/spectra.hpp"

namespace {

// Rank r's contribution: order-sensitive fp32 values, a function of (seed, rank, n) only.
std::vector<float> contribution(std::uint64_t seed, int rank, std::int64_t n) {
  const nsv::MatD values = nsv::make_matrix(nsv::Spectrum{}, 1, n, seed * 1000 + static_cast<std::uint64_t>(rank));
  const nsv::MatD scales = nsv::make_matrix(nsv::Spectrum{}, 1, n, seed * 1000 + 500 + static_cast<std::uint64_t>(rank));
  std::vector<float> out(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    out[static_cast<std::size_t>(i)] =
        static_cast<float>(std::ldexp(values(0, i), static_cast<int>(std::lround(std::clamp(scales(0, i) * 4, -10.0, 10.0)))));
  return out;
}

nlohmann::json compare(const std::vector<float>& native, const std::vector<float>& all, int tp, std::int64_t n) {
  nlohmann::json j;
  j["matching_orders"] = nlohmann::json::array();
  for (nsv::ReductionOrder order : nsv::kAllReductionOrders) {
    nsv::MatD simulated(1, n), got(1, n);
    std::vector<float> column(static_cast<std::size_t>(tp));
    for (std::int64_t i = 0; i < n; ++i) {
      for (int r = 0; r < tp; ++r) column[static_cast<std::size_t>(r)] = all[static_cast<std::size_t>(r * n + i)];
      simulated(0, i) = nsv::reduce_in_order(column, order, i, n, nsv::DType::fp32);
      got(0, i) = native[static_cast<std::size_t>(i)];
    }
    const nsv::ElementDiff d = nsv::compare_bits(got, simulated, nsv::DType::fp32);
    const std::string name(nsv::reduction_order_name(order));
    j["differing_elements"][name] = d.mismatches;
    j["max_ulps"][name] = d.ulps;
    if (d.identical) j["matching_orders"].push_back(name);
  }
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Which simulated reduction order MPI_Allreduce reproduces (run under mpirun; see tools/mpi_orders.sh)");
  std::int64_t n = 4099;
  std::uint64_t seed = 1;
  app.add_option("--elements", n, "fp32 elements per rank")->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 26))->capture_default_str();
  app.add_option("--seed", seed, "seed of the contributions")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    const nsv::MpiSession session;
    const int tp = session.world_size(), rank = session.world_rank();
    const std::vector<float> mine = contribution(seed, rank, n);
    std::vector<float> native = mine;
    nsv::MpiCommunicator comm(MPI_COMM_WORLD, nsv::MpiReduction::native, nsv::ReductionOrder::rank);
    comm.all_reduce_buffer(native.data(), n, nsv::DType::fp32);
    std::vector<float> all(rank == 0 ? static_cast<std::size_t>(tp * n) : 0);
    MPI_Gather(mine.data(), static_cast<int>(n), MPI_FLOAT, all.data(), static_cast<int>(n), MPI_FLOAT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      nlohmann::json j = compare(native, all, tp, n);
      j["tp"] = tp;
      j["elements"] = n;
      j["bytes"] = n * 4;
      std::printf("%s\n", j.dump().c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nsv_mpi_orders: %s\n", e.what());
    nsv::abort_job(1);
  }
  return 0;
}
