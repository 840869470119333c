#pragma once
// Every process's block of a result on rank 0 of a group, with its shape: how the MPI properties
// read back what real ranks computed (mpi_props.cpp, mpi_mesh.cpp).
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "nsv/matrix.hpp"

namespace nsv::checks::mpi {

// Every rank's block on rank 0 (elsewhere: empty).
inline std::vector<MatD> gather_blocks(MPI_Comm group, const MatD& mine) {
  int size = 1, rank = 0;
  MPI_Comm_size(group, &size);
  MPI_Comm_rank(group, &rank);
  const std::int64_t shape[2] = {mine.rows(), mine.cols()};
  std::vector<std::int64_t> shapes(2 * static_cast<std::size_t>(size));
  MPI_Gather(shape, 2, MPI_INT64_T, shapes.data(), 2, MPI_INT64_T, 0, group);
  std::vector<int> counts(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
  int total = 0;
  for (int r = 0; r < size; ++r) {
    counts[static_cast<std::size_t>(r)] = static_cast<int>(shapes[2 * r] * shapes[2 * r + 1]);
    offsets[static_cast<std::size_t>(r)] = total;
    total += counts[static_cast<std::size_t>(r)];
  }
  std::vector<double> all(static_cast<std::size_t>(rank == 0 ? total : 0));
  MPI_Gatherv(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(), counts.data(), offsets.data(), MPI_DOUBLE,
              0, group);
  std::vector<MatD> blocks;
  if (rank != 0) return blocks;
  for (int r = 0; r < size; ++r)
    blocks.push_back(Eigen::Map<const MatD>(all.data() + offsets[static_cast<std::size_t>(r)], shapes[2 * r], shapes[2 * r + 1]));
  return blocks;
}

}  // namespace nsv::checks::mpi
