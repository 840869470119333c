#pragma once
// The Communicator interface (nsv/communicator.hpp) on MPI: one tensor-parallel rank per MPI
// process, the tp ranks of a group being an MPI sub-communicator, so a job of N processes runs
// N / tp groups. Every strategy runs on it unchanged (the executions read only the hosted
// rank's shard).
//
// Two reduction modes:
//   fixed   the configured ReductionOrder reproduced exactly: one MPI_Allgather of the
//           contributions, then every rank sums them element by element in that order, through
//           the very function the simulation uses (reduce_in_order), so every rank holds the same
//           bits and they equal the simulation's by construction. Chosen over reduce-to-root plus
//           broadcast because it is one collective, needs no root, and cannot differ between
//           ranks; its price is traffic: every rank receives all tp buffers (tp N elements, where
//           the ring all-reduce of the byte model moves 2 (tp-1)/tp N).
//   native  MPI_Allreduce as the MPI library decides (Open MPI: coll/tuned's choice, or the
//           algorithm forced with --mca coll_tuned_use_dynamic_rules 1
//           --mca coll_tuned_allreduce_algorithm K). 16-bit wires use a commutative user
//           operation that rounds each addition to the wire dtype, as NCCL does.
//
// Elements travel as fp64 when the wire dtype is fp64 and as fp32 otherwise (a bf16 or fp16 value
// is a float exactly), so for 16-bit wires the buffers handed to MPI hold 4 bytes per element
// where the byte model counts 2.
//
// Two ledgers:
//   ledger()   the byte model (communicator.hpp) of this rank's row, recorded through the same
//              record_* functions from the element counts actually exchanged; the other ranks'
//              rows stay zero (gather_ledger assembles all rows on rank 0);
//   handed()   what this process handed to MPI: per collective, the MPI calls (metadata
//              exchanges of shapes included) and the bytes of the send and receive buffers.
#include <mpi.h>

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "nsv/communicator.hpp"

namespace nsv {

enum class MpiReduction { fixed, native };
MpiReduction parse_mpi_reduction(std::string_view);
std::string_view mpi_reduction_name(MpiReduction);

struct HandedTraffic {
  std::uint64_t mpi_calls = 0;
  std::uint64_t send_buffer_bytes = 0;
  std::uint64_t receive_buffer_bytes = 0;
};
using HandedLedger = std::array<HandedTraffic, kAllCollectives.size()>;  // indexed by Collective

class MpiCommunicator final : public Communicator {
 public:
  // `group` is the tp ranks' communicator (not freed here); `order` is used in fixed mode.
  MpiCommunicator(MPI_Comm group, MpiReduction mode, ReductionOrder order);

  int size() const override { return size_; }
  int rank() const { return rank_; }
  MPI_Comm group() const { return group_; }
  const std::vector<int>& hosted_ranks() const override { return hosted_; }
  const Ledger& ledger() const override { return ledger_; }
  const HandedLedger& handed() const { return handed_; }

  MatF all_reduce(const std::vector<MatF>& contributions, DType wire) override;
  MatD all_reduce(const std::vector<MatD>& contributions, DType wire) override;
  double all_reduce_scalar(const std::vector<double>& contributions, DType wire) override;
  MatD all_gather(const std::vector<MatD>& shards, int axis, DType wire) override;
  std::vector<std::vector<MatD>> all_to_all(const std::vector<std::vector<MatD>>& pieces, DType wire) override;

  // The all-reduce of one buffer of n values (the mode's arithmetic), in place; what the matrix
  // and scalar all-reduces call, public so a tool can probe the MPI library's orders directly.
  void all_reduce_buffer(float* values, std::int64_t n, DType wire);
  void all_reduce_buffer(double* values, std::int64_t n, DType wire);

 private:
  template <class T>
  void reduce(T* values, std::int64_t n, DType wire);
  void count(Collective, std::uint64_t calls, std::uint64_t sent, std::uint64_t received);
  void keep_own_row(const Ledger& full);

  MPI_Comm group_;
  MpiReduction mode_;
  ReductionOrder order_;
  int size_ = 1, rank_ = 0;
  std::vector<int> hosted_;
  Ledger ledger_;
  HandedLedger handed_{};
};

// Every rank's row of the group's ledgers on rank 0 of the group (the others get their own back);
// throws on rank 0 when the ranks disagree on the calls they took part in (collectives are lockstep).
Ledger gather_ledger(const MpiCommunicator&);
std::vector<HandedLedger> gather_handed(const MpiCommunicator&);

}  // namespace nsv
