#include "nsv/mpi_communicator.hpp"

#include <climits>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace nsv {

MpiReduction parse_mpi_reduction(std::string_view s) {
  if (s == "fixed") return MpiReduction::fixed;
  if (s == "native") return MpiReduction::native;
  throw std::invalid_argument("unknown MPI reduction mode '" + std::string(s) + "': expected fixed or native");
}

std::string_view mpi_reduction_name(MpiReduction m) { return m == MpiReduction::fixed ? "fixed" : "native"; }

namespace {

template <class T>
MPI_Datatype mpi_type() {
  if constexpr (std::is_same_v<T, float>) return MPI_FLOAT;
  if constexpr (std::is_same_v<T, double>) return MPI_DOUBLE;
  if constexpr (std::is_same_v<T, std::int64_t>) return MPI_INT64_T;
}

int as_count(std::int64_t n) {
  if (n < 0 || n > INT_MAX)
    throw std::runtime_error("a buffer of " + std::to_string(n) + " elements is beyond MPI's int element counts");
  return static_cast<int>(n);
}

void check(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw std::runtime_error(std::string(what) + " failed: " + std::string(text, static_cast<std::size_t>(length)));
}

// Element-wise sum rounded to a 16-bit wire dtype: the user operation of native all-reduces on
// bf16/fp16 wires (commutative, as addition of two values is).
template <DType W>
void rounded_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const float*>(in);
  auto* b = static_cast<float*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = static_cast<float>(round_to(W, static_cast<double>(a[i]) + b[i]));
}

MPI_Op rounded_sum_op(DType wire) {
  static MPI_Op bf16 = MPI_OP_NULL, fp16 = MPI_OP_NULL;
  MPI_Op& op = wire == DType::bf16 ? bf16 : fp16;
  if (op == MPI_OP_NULL)
    check(MPI_Op_create(wire == DType::bf16 ? &rounded_sum<DType::bf16> : &rounded_sum<DType::fp16>, 1, &op),
          "MPI_Op_create");
  return op;
}

bool is_16_bit(DType d) { return d == DType::bf16 || d == DType::fp16; }

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm group, MpiReduction mode, ReductionOrder order)
    : group_(group), mode_(mode), order_(order) {
  check(MPI_Comm_size(group_, &size_), "MPI_Comm_size");
  check(MPI_Comm_rank(group_, &rank_), "MPI_Comm_rank");
  // Errors come back as codes and are thrown with MPI's text, instead of aborting the job.
  check(MPI_Comm_set_errhandler(group_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  hosted_ = {rank_};
  ledger_.ranks.resize(static_cast<std::size_t>(size_));
}

void MpiCommunicator::count(Collective c, std::uint64_t calls, std::uint64_t sent, std::uint64_t received) {
  HandedTraffic& h = handed_[static_cast<std::size_t>(c)];
  h.mpi_calls += calls;
  h.send_buffer_bytes += sent;
  h.receive_buffer_bytes += received;
}

void MpiCommunicator::keep_own_row(const Ledger& full) {
  const auto me = static_cast<std::size_t>(rank_);
  RankTraffic& t = ledger_.ranks[me];
  t.bytes_sent += full.ranks[me].bytes_sent;
  t.bytes_received += full.ranks[me].bytes_received;
  t.messages += full.ranks[me].messages;
  for (std::size_t c = 0; c < ledger_.calls.size(); ++c) ledger_.calls[c] += full.calls[c];
}

template <class T>
void MpiCommunicator::reduce(T* values, std::int64_t n, DType wire) {
  Ledger model;
  model.ranks.resize(static_cast<std::size_t>(size_));
  record_all_reduce(model, n, wire);
  keep_own_row(model);
  const int count_n = as_count(n);
  const auto bytes = static_cast<std::uint64_t>(n) * sizeof(T);
  if (mode_ == MpiReduction::fixed) {
    // Every rank receives every contribution and sums them in the configured order.
    std::vector<T> all(static_cast<std::size_t>(n) * static_cast<std::size_t>(size_));
    check(MPI_Allgather(values, count_n, mpi_type<T>(), all.data(), count_n, mpi_type<T>(), group_), "MPI_Allgather");
    count(Collective::all_reduce, 1, bytes, bytes * static_cast<std::uint64_t>(size_));
    std::vector<T> column(static_cast<std::size_t>(size_));
    for (std::int64_t i = 0; i < n; ++i) {
      for (int r = 0; r < size_; ++r)
        column[static_cast<std::size_t>(r)] = all[static_cast<std::size_t>(r) * static_cast<std::size_t>(n) + static_cast<std::size_t>(i)];
      values[i] = reduce_in_order(column, order_, i, n, wire);
    }
    return;
  }
  if (wire == DType::fp64 || (wire == DType::fp32 && std::is_same_v<T, float>)) {
    check(MPI_Allreduce(MPI_IN_PLACE, values, count_n, mpi_type<T>(), MPI_SUM, group_), "MPI_Allreduce");
    count(Collective::all_reduce, 1, bytes, bytes);
    return;
  }
  // A narrower wire than the values: they travel as floats, each addition rounded to the wire.
  std::vector<float> on_wire(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) on_wire[static_cast<std::size_t>(i)] = static_cast<float>(round_to(wire, values[i]));
  const MPI_Op op = is_16_bit(wire) ? rounded_sum_op(wire) : MPI_SUM;
  check(MPI_Allreduce(MPI_IN_PLACE, on_wire.data(), count_n, MPI_FLOAT, op, group_), "MPI_Allreduce");
  count(Collective::all_reduce, 1, static_cast<std::uint64_t>(n) * 4, static_cast<std::uint64_t>(n) * 4);
  for (std::int64_t i = 0; i < n; ++i) values[i] = on_wire[static_cast<std::size_t>(i)];
}

void MpiCommunicator::all_reduce_buffer(float* values, std::int64_t n, DType wire) { reduce(values, n, wire); }
void MpiCommunicator::all_reduce_buffer(double* values, std::int64_t n, DType wire) { reduce(values, n, wire); }

namespace {
template <class M>
void check_one(const std::vector<M>& contributions, const char* what) {
  if (contributions.size() != 1)
    throw std::invalid_argument(std::string(what) + ": an MPI process hosts one rank, so it passes one contribution, not " +
                                std::to_string(contributions.size()));
}
}  // namespace

MatF MpiCommunicator::all_reduce(const std::vector<MatF>& contributions, DType wire) {
  check_one(contributions, "all_reduce");
  MatF sum = contributions[0];
  reduce(sum.data(), sum.size(), wire);
  return sum;
}

MatD MpiCommunicator::all_reduce(const std::vector<MatD>& contributions, DType wire) {
  check_one(contributions, "all_reduce");
  MatD sum = contributions[0];
  reduce(sum.data(), sum.size(), wire);
  return sum;
}

double MpiCommunicator::all_reduce_scalar(const std::vector<double>& contributions, DType wire) {
  check_one(contributions, "all_reduce_scalar");
  double v = contributions[0];
  reduce(&v, 1, wire);
  return v;
}

// Shards and pieces travel as float64, the reference's storage of what a rank holds, so they
// arrive bit for bit; the byte model counts them in the wire (storage) dtype.
MatD MpiCommunicator::all_gather(const std::vector<MatD>& shards, int axis, DType wire) {
  check_one(shards, "all_gather");
  const MatD& mine = shards[0];
  const auto p = static_cast<std::size_t>(size_);
  const std::int64_t my_shape[2] = {mine.rows(), mine.cols()};
  std::vector<std::int64_t> shapes(2 * p);
  check(MPI_Allgather(my_shape, 2, MPI_INT64_T, shapes.data(), 2, MPI_INT64_T, group_), "MPI_Allgather");
  std::vector<int> counts(p), offsets(p);
  std::int64_t total = 0, rows = 0, cols = 0;
  for (std::size_t r = 0; r < p; ++r) {
    const std::int64_t sr = shapes[2 * r], sc = shapes[2 * r + 1];
    if ((axis == 0 ? sc : sr) != (axis == 0 ? mine.cols() : mine.rows()))
      throw std::invalid_argument("all_gather: shards differ in the unsplit dimension");
    offsets[r] = as_count(total);
    counts[r] = as_count(sr * sc);
    total += sr * sc;
    if (axis == 0) rows += sr; else cols += sc;
  }
  if (axis == 0) cols = mine.cols(); else rows = mine.rows();
  std::vector<double> all(static_cast<std::size_t>(total));
  check(MPI_Allgatherv(mine.data(), as_count(mine.size()), MPI_DOUBLE, all.data(), counts.data(), offsets.data(),
                       MPI_DOUBLE, group_),
        "MPI_Allgatherv");
  count(Collective::all_gather, 2, 16 + static_cast<std::uint64_t>(mine.size()) * 8,
        16 * p + static_cast<std::uint64_t>(total) * 8);
  MatD full(rows, cols);
  std::int64_t at = 0;
  std::vector<std::int64_t> elements;
  for (std::size_t r = 0; r < p; ++r) {
    const std::int64_t sr = shapes[2 * r], sc = shapes[2 * r + 1];
    const Eigen::Map<const MatD> block(all.data() + offsets[r], sr, sc);
    if (axis == 0) full.middleRows(at, sr) = block; else full.middleCols(at, sc) = block;
    at += axis == 0 ? sr : sc;
    elements.push_back(sr * sc);
  }
  Ledger model;
  model.ranks.resize(p);
  record_all_gather(model, elements, wire);
  keep_own_row(model);
  return full;
}

std::vector<std::vector<MatD>> MpiCommunicator::all_to_all(const std::vector<std::vector<MatD>>& pieces, DType wire) {
  check_one(pieces, "all_to_all");
  const auto p = static_cast<std::size_t>(size_);
  const std::vector<MatD>& out = pieces[0];
  if (out.size() != p) throw std::invalid_argument("all_to_all: one piece per destination");
  std::vector<std::int64_t> sent_shapes(2 * p), received_shapes(2 * p);
  for (std::size_t d = 0; d < p; ++d) {
    sent_shapes[2 * d] = out[d].rows();
    sent_shapes[2 * d + 1] = out[d].cols();
  }
  check(MPI_Alltoall(sent_shapes.data(), 2, MPI_INT64_T, received_shapes.data(), 2, MPI_INT64_T, group_), "MPI_Alltoall");
  std::vector<int> send_counts(p), send_offsets(p), receive_counts(p), receive_offsets(p);
  std::int64_t send_total = 0, receive_total = 0;
  for (std::size_t r = 0; r < p; ++r) {
    send_offsets[r] = as_count(send_total);
    send_counts[r] = as_count(out[r].size());
    send_total += out[r].size();
    receive_offsets[r] = as_count(receive_total);
    receive_counts[r] = as_count(received_shapes[2 * r] * received_shapes[2 * r + 1]);
    receive_total += receive_counts[r];
  }
  std::vector<double> send(static_cast<std::size_t>(send_total)), receive(static_cast<std::size_t>(receive_total));
  for (std::size_t d = 0; d < p; ++d) std::copy(out[d].data(), out[d].data() + out[d].size(), send.begin() + send_offsets[d]);
  check(MPI_Alltoallv(send.data(), send_counts.data(), send_offsets.data(), MPI_DOUBLE, receive.data(), receive_counts.data(),
                      receive_offsets.data(), MPI_DOUBLE, group_),
        "MPI_Alltoallv");
  count(Collective::all_to_all, 2, 16 * p + static_cast<std::uint64_t>(send_total) * 8,
        16 * p + static_cast<std::uint64_t>(receive_total) * 8);
  std::vector<std::vector<MatD>> received(1, std::vector<MatD>(p));
  // The byte model needs this rank's row (what it sends) and column (what it receives) only.
  std::vector<std::vector<std::int64_t>> elements(p, std::vector<std::int64_t>(p, 0));
  const auto me = static_cast<std::size_t>(rank_);
  for (std::size_t s = 0; s < p; ++s) {
    received[0][s] = Eigen::Map<const MatD>(receive.data() + receive_offsets[s], received_shapes[2 * s], received_shapes[2 * s + 1]);
    elements[me][s] = out[s].size();
    elements[s][me] = receive_counts[s];
  }
  Ledger model;
  model.ranks.resize(p);
  record_all_to_all(model, elements, wire);
  keep_own_row(model);
  return received;
}

Ledger gather_ledger(const MpiCommunicator& comm) {
  const auto p = static_cast<std::size_t>(comm.size());
  constexpr std::size_t kCalls = kAllCollectives.size(), kWords = 3 + kCalls;
  const RankTraffic& mine = comm.ledger().ranks[static_cast<std::size_t>(comm.rank())];
  std::uint64_t row[kWords] = {mine.bytes_sent, mine.bytes_received, mine.messages};
  for (std::size_t c = 0; c < kCalls; ++c) row[3 + c] = static_cast<std::uint64_t>(comm.ledger().calls[c]);
  std::vector<std::uint64_t> rows(kWords * p);
  check(MPI_Gather(row, kWords, MPI_UINT64_T, rows.data(), kWords, MPI_UINT64_T, 0, comm.group()), "MPI_Gather");
  Ledger all = comm.ledger();
  if (comm.rank() != 0) return all;
  for (std::size_t r = 0; r < p; ++r) {
    const std::uint64_t* w = rows.data() + kWords * r;
    all.ranks[r] = {w[0], w[1], w[2]};
    // Collectives are lockstep: every rank took part in the same calls.
    for (std::size_t c = 0; c < kCalls; ++c)
      if (w[3 + c] != row[3 + c])
        throw std::logic_error("rank " + std::to_string(r) + " counted " + std::to_string(w[3 + c]) + " " +
                               std::string(collective_name(kAllCollectives[c])) + " calls, rank 0 " + std::to_string(row[3 + c]));
  }
  return all;
}

std::vector<HandedLedger> gather_handed(const MpiCommunicator& comm) {
  const auto p = static_cast<std::size_t>(comm.size());
  constexpr std::size_t kWords = 3 * kAllCollectives.size();
  std::uint64_t mine[kWords];
  for (std::size_t c = 0; c < kAllCollectives.size(); ++c) {
    mine[3 * c] = comm.handed()[c].mpi_calls;
    mine[3 * c + 1] = comm.handed()[c].send_buffer_bytes;
    mine[3 * c + 2] = comm.handed()[c].receive_buffer_bytes;
  }
  std::vector<std::uint64_t> all(kWords * p);
  check(MPI_Gather(mine, kWords, MPI_UINT64_T, all.data(), kWords, MPI_UINT64_T, 0, comm.group()), "MPI_Gather");
  std::vector<HandedLedger> out(comm.rank() == 0 ? p : 1);
  for (std::size_t r = 0; r < out.size(); ++r) {
    const std::uint64_t* w = comm.rank() == 0 ? all.data() + kWords * r : mine;
    for (std::size_t c = 0; c < kAllCollectives.size(); ++c) out[r][c] = {w[3 * c], w[3 * c + 1], w[3 * c + 2]};
  }
  return out;
}

}  // namespace nsv
