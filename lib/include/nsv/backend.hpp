#pragma once
// The engine that runs the kernels. Strategies and the communicator talk to this interface
// only, so the CPU reference and the CUDA backend are interchangeable.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nsv/communicator.hpp"
#include "nsv/kernels.hpp"
#include "nsv/matrix.hpp"

namespace nsv {

// How a sharded iteration runs: the whole standard loop with one Gram all-reduce per step
// (`standard`), or the Gram loop with its restart (`gram`).
enum class Iteration { standard, gram };

struct ShardedResult {
  std::vector<MatD> shards;                 // the ranks' blocks of NS(G), same layout as the input
  std::vector<std::uint64_t> flops_per_rank;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;

  // NS of each matrix independently (a 2-D input is a batch of one). The result's bits depend
  // only on each matrix's values and `cfg`: not on its batch position, its neighbours, the
  // thread count or memory alignment.
  virtual Batch newton_schulz(const Batch& inputs, const NsConfig& cfg) const = 0;

  // NS of the matrix whose blocks along `axis` the ranks hold (shards[r] on rank r), computed
  // without ever assembling it: the Frobenius norm by a scalar all-reduce, the Gram matrix
  // over the unsharded axis by all-reduces (p(XX^T)X = X p(X^TX) lets either axis be the
  // sharded one), the polynomial replicated on every rank, products with the shard local.
  // `shards` holds every rank's shard (the communicator hosts all of them).
  ShardedResult newton_schulz_sharded(const std::vector<MatD>& shards, int axis, Iteration iteration,
                                      Communicator& comm, const NsConfig& cfg) const;

  // The same for the shards of the ranks `comm` hosts (comm.hosted_ranks(), in that order: one
  // under MPI), `split_extent` being the length of the split axis over all ranks. The result
  // holds the hosted ranks' blocks.
  virtual ShardedResult newton_schulz_hosted(const std::vector<MatD>& hosted_shards, int axis,
                                             std::int64_t split_extent, Iteration iteration,
                                             Communicator& comm, const NsConfig& cfg) const = 0;
};

std::unique_ptr<Backend> make_cpu_backend();
// Throws std::runtime_error saying why when no CUDA device (or no CUDA build) is available.
std::unique_ptr<Backend> make_cuda_backend();
bool cuda_backend_available(std::string* why_not = nullptr);
std::unique_ptr<Backend> make_backend(std::string_view name);  // "cpu" or "cuda"

// Convenience: NS of one matrix.
MatD newton_schulz(const Backend&, const MatD& g, const NsConfig& cfg);

}  // namespace nsv
