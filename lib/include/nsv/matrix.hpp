#pragma once
// Matrix types shared by the whole library.
//
// Row-major storage matches numpy's C order (so .npy files map one to one) and makes a dim-0
// shard a contiguous block of memory. MatD is the carrier at every public boundary: a double
// holds any fp32/bf16/fp16 value exactly, so no value changes when it crosses an interface.
#include <Eigen/Core>
#include <vector>

namespace nsv {

template <class T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatD = Mat<double>;
using MatF = Mat<float>;

// A batch of independent matrices: each its own contiguous storage, so that no matrix's bits
// depend on where it sits in the batch (determinism contract D).
using Batch = std::vector<MatD>;

}  // namespace nsv
