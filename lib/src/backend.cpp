// Choosing a backend by name, and the one-matrix convenience every caller shares.
#include "nsv/backend.hpp"

#include <stdexcept>
#include <string>

#include "nsv/cuda_backend.hpp"

namespace nsv {

std::unique_ptr<Backend> make_backend(std::string_view name) {
  if (name == "cpu") return make_cpu_backend();
  if (name.starts_with("cuda")) return make_cuda_backend(parse_cuda_backend_name(name));
  throw std::invalid_argument("unknown backend '" + std::string(name) + "': expected cpu or cuda[-tf32][-batched]");
}

ShardedResult Backend::newton_schulz_sharded(const std::vector<MatD>& shards, int axis, Iteration iteration,
                                             Communicator& comm, const NsConfig& cfg) const {
  if (static_cast<int>(shards.size()) != comm.size() || comm.hosted_ranks().size() != shards.size())
    throw std::invalid_argument("one shard per rank is required, the communicator hosting every rank");
  std::int64_t split_extent = 0;
  for (const auto& s : shards) split_extent += axis == 0 ? s.rows() : s.cols();
  return newton_schulz_hosted(shards, axis, split_extent, iteration, comm, cfg);
}

MatD newton_schulz(const Backend& backend, const MatD& g, const NsConfig& cfg) {
  return std::move(backend.newton_schulz(Batch{g}, cfg)[0]);
}

}  // namespace nsv
