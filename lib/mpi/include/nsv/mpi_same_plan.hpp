#pragma once
// Every process of an MPI job must run the same plan: ranks started with different arguments (a
// `mpirun` line with per-rank argument sets, a stale binary on one host, another coefficient file)
// would otherwise mix their results silently (a steps=5 sweep CSV filled with steps=3 rows) or
// wait forever in collectives of different sizes. Each process describes its plan as a JSON
// object (its arguments and a digest of its inputs); the descriptions are compared on every rank
// before any work, so that every rank refuses together.
#include <mpi.h>

#include <nlohmann/json.hpp>
#include <string>

namespace nsv {

// Collective over `comm`. Throws std::invalid_argument on every rank when some rank's plan
// differs from rank 0's, naming the first such rank and the plan's fields that differ (with both
// values), e.g. "rank 1 of 2 was started with another plan than rank 0: steps is [3] there and [5]
// on rank 0; start every rank with the same arguments and inputs".
void require_same_plan_on_every_rank(MPI_Comm comm, const nlohmann::json& plan);

// A digest of bytes (FNV-1a, 64 bits, as hex) for a plan's inputs: equal inputs, equal digests.
std::string bytes_digest(const void* data, std::size_t size);

}  // namespace nsv
