// The interposed collectives of mpi_call_tally.hpp. Bytes are count x the datatype's size as MPI
// reports it (PMPI_Type_size), summed over the per-rank counts where the call takes a list; a
// buffer given as MPI_IN_PLACE counts as the count it is called with, as handed() counts it.
#include "mpi_call_tally.hpp"

#include <mpi.h>

namespace nsv::checks::mpi {
namespace {

CallTally* active = nullptr;

std::uint64_t bytes(int count, MPI_Datatype type) {
  int size = 0;
  PMPI_Type_size(type, &size);
  return static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(size);
}

int group_size(MPI_Comm comm) {
  int size = 0;
  PMPI_Comm_size(comm, &size);
  return size;
}

std::uint64_t sum_bytes(const int* counts, MPI_Comm comm, MPI_Datatype type) {
  std::uint64_t total = 0;
  for (int r = 0; r < group_size(comm); ++r) total += bytes(counts[r], type);
  return total;
}

void tally(std::uint64_t sent, std::uint64_t received) {
  if (!active) return;
  ++active->calls;
  active->send_bytes += sent;
  active->receive_bytes += received;
}

}  // namespace

TallyScope::TallyScope(CallTally& into) { active = &into; }
TallyScope::~TallyScope() { active = nullptr; }

}  // namespace nsv::checks::mpi

using nsv::checks::mpi::tally;

extern "C" {

int MPI_Allreduce(const void* send, void* receive, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  tally(nsv::checks::mpi::bytes(count, type), nsv::checks::mpi::bytes(count, type));
  return PMPI_Allreduce(send, receive, count, type, op, comm);
}

int MPI_Allgather(const void* send, int send_count, MPI_Datatype send_type, void* receive, int receive_count,
                  MPI_Datatype receive_type, MPI_Comm comm) {
  tally(nsv::checks::mpi::bytes(send_count, send_type),
        nsv::checks::mpi::bytes(receive_count, receive_type) * static_cast<std::uint64_t>(nsv::checks::mpi::group_size(comm)));
  return PMPI_Allgather(send, send_count, send_type, receive, receive_count, receive_type, comm);
}

int MPI_Allgatherv(const void* send, int send_count, MPI_Datatype send_type, void* receive, const int receive_counts[],
                   const int displacements[], MPI_Datatype receive_type, MPI_Comm comm) {
  tally(nsv::checks::mpi::bytes(send_count, send_type), nsv::checks::mpi::sum_bytes(receive_counts, comm, receive_type));
  return PMPI_Allgatherv(send, send_count, send_type, receive, receive_counts, displacements, receive_type, comm);
}

int MPI_Alltoall(const void* send, int send_count, MPI_Datatype send_type, void* receive, int receive_count,
                 MPI_Datatype receive_type, MPI_Comm comm) {
  const auto p = static_cast<std::uint64_t>(nsv::checks::mpi::group_size(comm));
  tally(nsv::checks::mpi::bytes(send_count, send_type) * p, nsv::checks::mpi::bytes(receive_count, receive_type) * p);
  return PMPI_Alltoall(send, send_count, send_type, receive, receive_count, receive_type, comm);
}

int MPI_Alltoallv(const void* send, const int send_counts[], const int send_displacements[], MPI_Datatype send_type,
                  void* receive, const int receive_counts[], const int receive_displacements[], MPI_Datatype receive_type,
                  MPI_Comm comm) {
  tally(nsv::checks::mpi::sum_bytes(send_counts, comm, send_type), nsv::checks::mpi::sum_bytes(receive_counts, comm, receive_type));
  return PMPI_Alltoallv(send, send_counts, send_displacements, send_type, receive, receive_counts, receive_displacements,
                        receive_type, comm);
}

}  // extern "C"
