#include "nsv/mpi_session.hpp"

#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>

namespace nsv {

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

MpiSession::MpiSession() {
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
    throw std::runtime_error("MPI_Init_thread failed");
  if (provided < MPI_THREAD_MULTIPLE) {
    MPI_Finalize();
    throw std::runtime_error("this MPI library does not provide MPI_THREAD_MULTIPLE, which the sweep's work pool needs");
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() {
  if (std::uncaught_exceptions() == 0) MPI_Finalize();
}

TpGroup split_into_tp_groups(int tp) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (tp < 1 || size % tp != 0)
    throw std::invalid_argument("tp = " + std::to_string(tp) + " does not divide the job's " + std::to_string(size) +
                                " MPI processes: each group of tp processes runs one tensor-parallel group");
  TpGroup g;
  g.index = rank / tp;
  g.count = size / tp;
  MPI_Comm_split(MPI_COMM_WORLD, g.index, rank, &g.comm);
  return g;
}

void abort_job(int exit_code) {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::exit(exit_code);  // MPI_Abort does not return; this keeps [[noreturn]] true if it did
}

}  // namespace nsv
