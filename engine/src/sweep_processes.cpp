#include "nsv/engine/sweep_processes.hpp"

#include "nsv/mpi_same_plan.hpp"
#include "nsv/mpi_session.hpp"
#include "nsv/work_pool.hpp"

namespace nsv::engine {
namespace {

class MpiSweepProcesses final : public SweepProcesses {
 public:
  int count() const override { return session_.world_size(); }
  bool is_writer() const override { return session_.world_rank() == 0; }

  std::string run(std::size_t n, const std::function<std::string(std::size_t)>& compute,
                  const std::function<void(std::size_t, std::string&&)>& consume) override {
    return run_work_pool(MPI_COMM_WORLD, n, compute, consume).first_error;
  }

  void share(std::vector<std::string>& values) override { broadcast_from_root(MPI_COMM_WORLD, values); }
  void share(std::vector<std::size_t>& values) override { broadcast_from_root(MPI_COMM_WORLD, values); }
  void require_same_plan(const nlohmann::json& plan) override { require_same_plan_on_every_rank(MPI_COMM_WORLD, plan); }

 private:
  MpiSession session_;
};

}  // namespace

std::unique_ptr<SweepProcesses> mpi_sweep_processes() {
  if (!launched_by_mpi()) return nullptr;
  auto p = std::make_unique<MpiSweepProcesses>();
  if (p->count() == 1) return nullptr;
  return p;
}

}  // namespace nsv::engine
