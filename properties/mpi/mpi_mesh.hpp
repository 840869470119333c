#pragma once
// The 2 x 2 TP x DP mesh on four real ranks against the simulation (mpi_mesh.cpp).
#include <cstdint>

namespace nsv::checks::mpi {

// Cases first..first+count-1 drawn from `seed`, sides up to max_side; every process of a 4-process
// job calls it. Prints the verdict (and a failure's replay line) on world rank 0; the same verdict
// on every process.
bool check_mesh_2x2(std::uint64_t seed, int first, int count, std::int64_t max_side);

}  // namespace nsv::checks::mpi
