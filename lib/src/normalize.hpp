#pragma once
// Frobenius normalization X / (||X||_F + eps) of a matrix held in shards, shared by backends.
#include <vector>

#include "nsv/communicator.hpp"
#include "nsv/kernels.hpp"
#include "nsv/matrix.hpp"

namespace nsv::detail {

// Returns the shards (each transposed when `transpose`) divided by the norm of the whole
// matrix, every value rounded to the compute dtype and stored as T: float for every dtype but
// fp64, double for fp64 (the iteration's working copy, written once without an intermediate
// double copy; the arithmetic is done in T, so any other pairing throws). The
// sums of squares run in the transposed frame's row-major order, so G and G^T normalize to
// transposes of each other bit for bit (K1). The norm's square is a scalar all-reduce of the
// shards' sums when the matrix is held by more than one rank (comm non-null, of size > 1);
// `shards` are then the shards of the ranks comm hosts.
template <class T>
std::vector<Mat<T>> normalize_as(const std::vector<const MatD*>& shards, bool transpose, const NsConfig& cfg,
                                 Communicator* comm);

// ||X||_F + eps as the kernels form it from the sum of squares: the norm rounded to the
// normalization dtype nd, then one addition in nd's arithmetic (float for the 16-bit types).
double normalization_denominator(DType nd, double sum_of_squares, double eps);

// The same, carried as MatD.
inline std::vector<MatD> normalize(const std::vector<MatD>& shards, const NsConfig& cfg, Communicator* comm) {
  std::vector<const MatD*> views;
  for (const auto& s : shards) views.push_back(&s);
  if (cfg.dtype == DType::fp64) return normalize_as<double>(views, false, cfg, comm);
  std::vector<MatD> out;
  for (const auto& m : normalize_as<float>(views, false, cfg, comm)) out.push_back(m.cast<double>());
  return out;
}

// The element type of the squared norm's all-reduce: fp32, or fp64 when computing in fp64 (a
// framework all-reduces it in the normalization dtype).
inline DType norm_wire_dtype(const NsConfig& cfg) {
  return normalization_dtype(cfg) == DType::fp64 ? DType::fp64 : DType::fp32;
}

}  // namespace nsv::detail
