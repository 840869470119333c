// What the library really handed to MPI, seen from outside it: this executable defines the
// collectives MpiCommunicator calls (MPI's profiling interface, MPI standard 4.0 §15.2: a program
// may define MPI_X itself and reach the library's through PMPI_X), so every call's count and
// datatype arguments are tallied before MPI runs it. That is the independent oracle of the claim
//   M-handed  MpiCommunicator::handed(), summed over collectives, equals the calls and the
//             send and receive buffer bytes its MPI calls were given,
// whose figures handed() otherwise states by its own arithmetic.
#pragma once

#include <cstdint>

namespace nsv::checks::mpi {

struct CallTally {
  std::uint64_t calls = 0, send_bytes = 0, receive_bytes = 0;
  bool operator==(const CallTally&) const = default;
};

// Tallies the collectives called while it lives into `into` (one scope at a time).
class TallyScope {
 public:
  explicit TallyScope(CallTally& into);
  ~TallyScope();
  TallyScope(const TallyScope&) = delete;
  TallyScope& operator=(const TallyScope&) = delete;
};

}  // namespace nsv::checks::mpi
