#pragma once
// Collectives between tensor-parallel ranks, with an exact ledger of what each rank sends.
//
// The interface is lockstep: a call passes the contributions of the ranks this process hosts
// (`hosted_ranks()`, in that order: all of them for the in-process simulation, one for MPI,
// lib/mpi/) and returns what each of them receives. Strategies only see this interface, never the
// backend or the transport, so the same execution runs on simulated and on real ranks.
//
// Byte model (documented, and checked against hand counts by the properties):
//   all_gather  rank r sends its shard to each of the other tp-1 ranks and receives every
//               other shard: sent = (tp-1)*own, received = total - own, tp-1 messages.
//   all_reduce  ring algorithm: reduce-scatter then all-gather, each moving (tp-1)/tp of the
//               buffer: sent = received = 2*(tp-1)/tp*N, 2*(tp-1) messages. The reduction
//               order only changes which partial sums are formed, not the traffic.
//   all_to_all  rank r sends piece [r][d] to each d != r: one message per non-empty piece.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nsv/dtype.hpp"
#include "nsv/matrix.hpp"

namespace nsv {

// The order in which an all-reduce adds the ranks' contributions. `rank`: ((x0+x1)+x2)+...;
// `reverse`: from the last rank down; `ring`: the buffer is cut into tp chunks and chunk k is
// accumulated starting at rank k+1 going round (NCCL's ring); `tree`: pairwise recursive
// halving ((x0+x1)+(x2+x3)); `ompi_ring`: Open MPI's ring all-reduce (coll/tuned algorithm 4,
// and its segmented ring, 5), measured on real ranks (tools/mpi_orders.sh, reports/mpi/): the
// buffer cut into tp blocks of which the first n mod tp are one element longer, block k
// accumulated starting at rank k going round. One record each (communicator.cpp).
enum class ReductionOrder { rank, reverse, ring, tree, ompi_ring };
inline constexpr std::array<ReductionOrder, 5> kAllReductionOrders = {
    ReductionOrder::rank, ReductionOrder::reverse, ReductionOrder::ring, ReductionOrder::tree, ReductionOrder::ompi_ring};
ReductionOrder parse_reduction_order(std::string_view);
std::string_view reduction_order_name(ReductionOrder);
std::vector<std::string> reduction_order_names();

enum class Collective { all_gather, all_reduce, all_to_all };
inline constexpr std::array<Collective, 3> kAllCollectives = {Collective::all_gather, Collective::all_reduce,
                                                              Collective::all_to_all};
std::string_view collective_name(Collective);

struct RankTraffic {
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t messages = 0;  // messages this rank sends
};

struct Ledger {
  std::vector<RankTraffic> ranks;
  std::array<int, kAllCollectives.size()> calls{};  // indexed by Collective

  int count(Collective c) const { return calls[static_cast<std::size_t>(c)]; }
  int total_calls() const;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int size() const = 0;
  // The ranks whose contributions every call takes, ascending. Every collective's vectors are
  // indexed by position in this list.
  virtual const std::vector<int>& hosted_ranks() const = 0;
  // The byte model's traffic of the hosted ranks (the other ranks' rows stay zero) and the calls.
  virtual const Ledger& ledger() const = 0;

  // Every rank receives the same bits (the sum formed once in the configured order, then
  // distributed). `wire` is the element type on the wire: additions are rounded to it, as NCCL
  // does for 16-bit buffers, and bytes are counted in it.
  virtual MatF all_reduce(const std::vector<MatF>& contributions, DType wire) = 0;
  virtual MatD all_reduce(const std::vector<MatD>& contributions, DType wire) = 0;
  virtual double all_reduce_scalar(const std::vector<double>& contributions, DType wire) = 0;

  // Concatenation of every rank's shard in rank order along `axis` (0: rows, 1: cols), given
  // the hosted ranks' shards.
  virtual MatD all_gather(const std::vector<MatD>& shards, int axis, DType wire) = 0;

  // pieces[i][d] is what hosted rank i sends to rank d; the result [i][s] is what hosted rank i
  // received from rank s.
  virtual std::vector<std::vector<MatD>> all_to_all(
      const std::vector<std::vector<MatD>>& pieces, DType wire) = 0;
};

// The byte model above on shapes alone: what a collective adds to a ledger, given the element
// counts of the ranks' contributions. The simulated communicator records every call through
// these, and the cost model (cost_model.hpp) uses them to count full-size matrices without
// allocating them, so both produce the same ledger by construction.
void record_all_gather(Ledger&, const std::vector<std::int64_t>& shard_elements, DType wire);
void record_all_reduce(Ledger&, std::int64_t elements, DType wire);
// piece_elements[s][d]: elements rank s sends to rank d (the diagonal stays local).
void record_all_to_all(Ledger&, const std::vector<std::vector<std::int64_t>>& piece_elements, DType wire);
// The same all-to-all given by its pieces alone (absent pairs send nothing): linear in the pieces
// where the matrix above is quadratic in the ranks, for the plans whose all-to-alls have one
// piece per rank (an owner's, tp or dp of them).
struct PieceTransfer {
  std::size_t from = 0, to = 0;
  std::int64_t elements = 0;
};
void record_all_to_all(Ledger&, const std::vector<PieceTransfer>& pieces, DType wire);

// All ranks in this process; the reduction order is a parameter of the simulation.
std::unique_ptr<Communicator> make_simulated_communicator(int ranks, ReductionOrder order);

// The sum of element i's contributions values[0..tp) of an n-element buffer in `order`, each
// addition rounded to `wire` (the ring orders start where i's chunk starts). The simulation
// reduces every element through this, and the MPI communicator's `fixed` mode too, so both
// produce the same bits by construction.
float reduce_in_order(const std::vector<float>& values, ReductionOrder order, std::int64_t i, std::int64_t n, DType wire);
double reduce_in_order(const std::vector<double>& values, ReductionOrder order, std::int64_t i, std::int64_t n,
                       DType wire);

}  // namespace nsv
