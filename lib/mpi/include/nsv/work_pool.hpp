#pragma once
// Dynamic assignment of independent work items over the processes of an MPI communicator: each
// process asks for the next item when it is free, so a slow item holds up no other. World rank 0
// hosts the coordinator as a thread beside its own worker (it computes too), and receives every
// result there, in completion order, for a single writer.
#include <mpi.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace nsv {

struct PoolOutcome {
  std::string first_error;            // "" when every item succeeded
  std::size_t failed = 0;             // items whose compute threw (their results are not consumed)
};

// compute(i) runs on whichever process takes item i, and returns its result as bytes (throwing
// marks the item failed, with the exception's text, and the pool goes on with the rest).
// consume(i, result) runs on rank 0 only, on the coordinator thread, one call at a time. Every
// process returns when all items are done; the outcome is the same on every process.
PoolOutcome run_work_pool(MPI_Comm, std::size_t items, const std::function<std::string(std::size_t)>& compute,
                          const std::function<void(std::size_t, std::string&&)>& consume);

// Rank 0's values on every process of the communicator (the others' vectors are replaced).
void broadcast_from_root(MPI_Comm, std::vector<std::string>&);
void broadcast_from_root(MPI_Comm, std::vector<std::size_t>&);

}  // namespace nsv
