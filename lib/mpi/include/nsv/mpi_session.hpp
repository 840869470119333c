#pragma once
// The MPI job a process belongs to: initialization (threads allowed: the work pool's
// coordinator is a thread of world rank 0), its tensor-parallel groups, and its end.
#include <mpi.h>

namespace nsv {

// Whether an MPI launcher (mpirun/mpiexec of Open MPI or MPICH, Slurm's srun with PMI/PMIx)
// started this process: only then does a command initialize MPI on its own.
bool launched_by_mpi();

class MpiSession {
 public:
  MpiSession();  // MPI_Init_thread(MPI_THREAD_MULTIPLE); throws when MPI cannot provide it
  ~MpiSession();  // MPI_Finalize, unless the process is being torn down by an exception
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int world_rank() const { return rank_; }
  int world_size() const { return size_; }

 private:
  int rank_ = 0, size_ = 1;
};

// World ranks g*tp .. g*tp+tp-1 form group g. Throws std::invalid_argument when the world size
// is not a multiple of tp. The communicator is the caller's to free (MPI_Comm_free).
struct TpGroup {
  MPI_Comm comm = MPI_COMM_NULL;
  int index = 0, count = 1;
};
TpGroup split_into_tp_groups(int tp);

// Ends the whole job after a failure on this process (MPI_Abort), so that no rank waits forever
// in a collective the failed one will never enter.
[[noreturn]] void abort_job(int exit_code);

}  // namespace nsv
