#pragma once
// Where the Newton-Schulz iteration runs for a matrix held in shards, and which loop: decided
// once here for the CPU reference, the CUDA backend and the cost model's shape-only run.
//
// The iteration (ns_algorithm.hpp) works on a wide frame Y = [Y_1 ... Y_p] split along its
// columns, so that the Gram matrix over Y's rows is the sum of the ranks' local Grams.
//   one shard   the kernel itself: a tall matrix runs as its transpose (the transpose rule), and
//               the kernel chooses its loop (the Gram loop only when the Gram matrix is smaller
//               than the matrix).
//   p shards    a dim-1 split is already column-split; a dim-0 split is transposed into the
//               frame (p(XX^T)X = X p(X^TX) lets either axis be the sharded one). The Gram is
//               over the unsharded axis whatever its size, and the strategy's requested loop runs,
//               except on a square frame, where the Gram loop saves nothing and the standard one
//               runs.
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "nsv/backend.hpp"
#include "nsv/kernels.hpp"

namespace nsv::detail {

struct ShardShape {
  std::int64_t rows = 0, cols = 0;
};

struct ShardedFrame {
  bool transpose = false;      // each shard enters the frame transposed
  std::int64_t gram_dim = 0;   // the frame's rows: the side of the Gram matrix
  std::int64_t other_dim = 0;  // the frame's columns, over all ranks
  Iteration iteration = Iteration::standard;
};

// The kernel's own choice of loop on a gram_dim x other_dim wide frame.
inline Iteration kernel_iteration(const NsConfig& cfg, std::int64_t gram_dim, std::int64_t other_dim) {
  return cfg.kernel == Kernel::gram && gram_dim < other_dim ? Iteration::gram : Iteration::standard;
}

// The frame of a matrix split along `axis` (0: rows, 1: cols) over `ranks` ranks, of which
// `shards` are the ones this process hosts (all of them in the simulation and the plans, one
// under MPI), `split_extent` the length of the split axis over all ranks; `requested` runs when
// there is more than one rank. Throws std::invalid_argument when the shards do not fit together.
inline ShardedFrame sharded_frame(const NsConfig& cfg, int axis, const std::vector<ShardShape>& shards, int ranks,
                                  std::int64_t split_extent, Iteration requested) {
  if (axis != 0 && axis != 1) throw std::invalid_argument("axis must be 0 or 1, got " + std::to_string(axis));
  if (shards.empty()) throw std::invalid_argument("a sharded matrix needs at least one shard");
  ShardedFrame f;
  if (ranks == 1) {
    const ShardShape& s = shards[0];
    f.transpose = s.rows > s.cols;
    f.gram_dim = f.transpose ? s.cols : s.rows;
    f.other_dim = f.transpose ? s.rows : s.cols;
    f.iteration = kernel_iteration(cfg, f.gram_dim, f.other_dim);
    return f;
  }
  f.transpose = axis == 0;
  f.gram_dim = axis == 0 ? shards[0].cols : shards[0].rows;
  for (const ShardShape& s : shards) {
    if ((axis == 0 ? s.cols : s.rows) != f.gram_dim)
      throw std::invalid_argument("shards disagree on the unsharded dimension: " + std::to_string(f.gram_dim) + " and " +
                                  std::to_string(axis == 0 ? s.cols : s.rows));
  }
  f.other_dim = split_extent;
  f.iteration = f.gram_dim == f.other_dim ? Iteration::standard : requested;
  return f;
}

template <class M>
std::vector<ShardShape> shard_shapes(const std::vector<M>& shards) {
  std::vector<ShardShape> out;
  for (const auto& s : shards) out.push_back({static_cast<std::int64_t>(s.rows()), static_cast<std::int64_t>(s.cols())});
  return out;
}

}  // namespace nsv::detail
