#include "sweep_processes.hpp"

#include <cstdint>

#include "nsv/mpi_session.hpp"
#include "nsv/work_pool.hpp"

namespace nsv::cli {
namespace {

class MpiSweepProcesses final : public SweepProcesses {
 public:
  int count() const override { return session_.world_size(); }
  bool is_writer() const override { return session_.world_rank() == 0; }

  std::string run(std::size_t n, const std::function<std::string(std::size_t)>& compute,
                  const std::function<void(std::size_t, std::string&&)>& consume) override {
    return run_work_pool(MPI_COMM_WORLD, n, compute, consume).first_error;
  }

  void share(std::vector<std::string>& values) override {
    std::uint64_t n = values.size();
    MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    values.resize(n);
    for (std::string& v : values) {
      std::uint64_t length = v.size();
      MPI_Bcast(&length, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
      v.resize(length);
      MPI_Bcast(v.data(), static_cast<int>(length), MPI_BYTE, 0, MPI_COMM_WORLD);
    }
  }

  void share(std::vector<std::size_t>& values) override {
    std::uint64_t n = values.size();
    MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    std::vector<std::uint64_t> v(values.begin(), values.end());
    v.resize(n);
    MPI_Bcast(v.data(), static_cast<int>(n), MPI_UINT64_T, 0, MPI_COMM_WORLD);
    values.assign(v.begin(), v.end());
  }

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

}  // namespace nsv::cli
