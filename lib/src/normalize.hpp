#pragma once
// Frobenius normalization X / (||X||_F + eps) of a matrix held in shards, shared by backends.
#include <vector>

#include "nsv/communicator.hpp"
#include "nsv/kernels.hpp"
#include "nsv/matrix.hpp"

namespace nsv::detail {

// Returns the shards divided by the norm of the whole matrix, every value rounded to the
// compute dtype. The norm's square is a scalar all-reduce of the shards' sums of squares when
// there is more than one shard (comm must then be non-null).
std::vector<MatD> normalize(const std::vector<MatD>& shards, const NsConfig& cfg, Communicator* comm);

// The element type of the squared norm's all-reduce: fp32, or fp64 when computing in fp64 (a
// framework all-reduces it in the normalization dtype).
inline DType norm_wire_dtype(const NsConfig& cfg) {
  return normalization_dtype(cfg) == DType::fp64 ? DType::fp64 : DType::fp32;
}

// The shape-only view of the wide frame: true when the kernel transposes the input.
inline bool is_tall(const MatD& g) { return g.rows() > g.cols(); }

}  // namespace nsv::detail
