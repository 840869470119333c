#pragma once
// A sweep over the processes of an MPI job (`mpirun -np N nsv sweep ...`): the work pool of
// lib/mpi (dynamic assignment, world rank 0 the single writer) behind the engine's
// SweepProcesses interface.
#include <memory>

#include "nsv/engine/sweep_engine.hpp"

namespace nsv::engine {

// Null when this process was not started by an MPI launcher or the job has one process (the
// sweep then runs on threads as usual). Initializes MPI for the lifetime of the returned object.
std::unique_ptr<SweepProcesses> mpi_sweep_processes();

}  // namespace nsv::engine
