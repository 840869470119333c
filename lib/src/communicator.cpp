#include "nsv/communicator.hpp"

#include <array>
#include <stdexcept>

#include "nsv/config_schema.hpp"

namespace nsv {

namespace {

// One record per reduction order: its name, what help texts add to it, and for the ring orders
// where element i's chunk starts. `source` is where the order comes from.
struct OrderRecord {
  ReductionOrder order;
  std::string_view name;
  std::string_view note;
  std::string_view source;
};

constexpr std::array<OrderRecord, kAllReductionOrders.size()> kOrderRecords = {{
    {ReductionOrder::rank, "rank", {}, "rank order, as a reduce to rank 0 that adds in rank order"},
    {ReductionOrder::reverse, "reverse", {}, "Open MPI's basic linear reduce: the last rank's buffer first, then down"},
    {ReductionOrder::ring, "ring", {}, "NCCL's ring: chunk k (of n/tp, floor boundaries) starts at rank k+1"},
    {ReductionOrder::tree, "tree", {}, "recursive doubling / halving: (x0+x1)+(x2+x3), the odd one last"},
    {ReductionOrder::ompi_ring, "ompi_ring", "Open MPI's ring",
     "Open MPI coll/tuned ring (algorithms 4, 5): block k (the first n mod tp blocks one longer) starts at rank k"},
}};

// The names as the schema's table: kOrderRecords' names, in their order.
constexpr auto kOrderNames = [] {
  std::array<NamedValue<ReductionOrder>, kOrderRecords.size()> names{};
  for (std::size_t i = 0; i < names.size(); ++i)
    names[i] = {kOrderRecords[i].order, kOrderRecords[i].name, kOrderRecords[i].note};
  return names;
}();
constexpr NameTable<ReductionOrder> kOrderTable{"reduction_order", kOrderNames};

}  // namespace

const NameTable<ReductionOrder>& name_table(std::type_identity<ReductionOrder>) { return kOrderTable; }

ReductionOrder parse_reduction_order(std::string_view s) { return parse_named<ReductionOrder>(s); }
std::string_view reduction_order_name(ReductionOrder o) { return name_of(o); }
std::vector<std::string> reduction_order_names() { return choices_of<ReductionOrder>(); }

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::all_gather: return "all_gather";
    case Collective::all_reduce: return "all_reduce";
    case Collective::all_to_all: return "all_to_all";
  }
  return "?";
}

int Ledger::total_calls() const {
  int total = 0;
  for (int c : calls) total += c;
  return total;
}

namespace {

template <class T>
T add_on_wire(T x, T y, DType wire) {
  return static_cast<T>(round_to(wire, x + y));
}

// Sum of values[first..last) in `order`, `start` being the rank where a ring chunk begins.
template <class T>
T reduce_one(const std::vector<T>& values, ReductionOrder order, int ring_start, DType wire) {
  const int n = static_cast<int>(values.size());
  switch (order) {
    case ReductionOrder::rank: {
      T s = values[0];
      for (int r = 1; r < n; ++r) s = add_on_wire(s, values[static_cast<std::size_t>(r)], wire);
      return s;
    }
    case ReductionOrder::reverse: {
      T s = values[static_cast<std::size_t>(n - 1)];
      for (int r = n - 2; r >= 0; --r) s = add_on_wire(s, values[static_cast<std::size_t>(r)], wire);
      return s;
    }
    case ReductionOrder::ring:
    case ReductionOrder::ompi_ring: {
      T s = values[static_cast<std::size_t>(ring_start % n)];
      for (int k = 1; k < n; ++k)
        s = add_on_wire(s, values[static_cast<std::size_t>((ring_start + k) % n)], wire);
      return s;
    }
    case ReductionOrder::tree: {
      std::vector<T> level = values;
      while (level.size() > 1) {
        std::vector<T> next;
        for (std::size_t i = 0; i + 1 < level.size(); i += 2) next.push_back(add_on_wire(level[i], level[i + 1], wire));
        if (level.size() % 2) next.push_back(level.back());
        level = std::move(next);
      }
      return level[0];
    }
  }
  return values[0];
}

std::uint64_t wire_bytes(std::int64_t elements, DType wire) {
  return static_cast<std::uint64_t>(elements) * static_cast<std::uint64_t>(bytes_per_element(wire));
}

}  // namespace

namespace {

// The rank where element i's chunk starts adding, for the ring orders (0 for the others).
int ring_start(ReductionOrder order, std::int64_t i, std::int64_t n, int tp) {
  if (order == ReductionOrder::ring) return static_cast<int>(i * tp / (n == 0 ? 1 : n)) + 1;  // floor(i tp / n) + 1
  if (order == ReductionOrder::ompi_ring) {
    // Open MPI's split: the first n mod tp blocks hold ceil(n / tp) elements, the rest floor.
    const std::int64_t small = n / tp, extra = n % tp, long_part = extra * (small + 1);
    return static_cast<int>(i < long_part ? i / (small + 1) : extra + (i - long_part) / small);
  }
  return 0;
}

}  // namespace

float reduce_in_order(const std::vector<float>& values, ReductionOrder order, std::int64_t i, std::int64_t n, DType wire) {
  return reduce_one(values, order, ring_start(order, i, n, static_cast<int>(values.size())), wire);
}
double reduce_in_order(const std::vector<double>& values, ReductionOrder order, std::int64_t i, std::int64_t n,
                       DType wire) {
  return reduce_one(values, order, ring_start(order, i, n, static_cast<int>(values.size())), wire);
}

void record_all_gather(Ledger& ledger, const std::vector<std::int64_t>& shard_elements, DType wire) {
  if (shard_elements.size() != ledger.ranks.size())
    throw std::invalid_argument("record_all_gather: one shard per rank of the ledger");
  const auto p = static_cast<std::uint64_t>(ledger.ranks.size());
  std::int64_t total = 0;
  for (auto e : shard_elements) total += e;
  for (std::size_t r = 0; r < shard_elements.size(); ++r) {
    auto& t = ledger.ranks[r];
    const auto own = wire_bytes(shard_elements[r], wire);
    t.bytes_sent += own * (p - 1);
    t.bytes_received += wire_bytes(total, wire) - own;
    t.messages += p - 1;
  }
  ++ledger.calls[static_cast<std::size_t>(Collective::all_gather)];
}

void record_all_reduce(Ledger& ledger, std::int64_t elements, DType wire) {
  const auto p = static_cast<std::uint64_t>(ledger.ranks.size());
  // Ring: 2(p-1) steps, each moving one chunk of N/p elements (exact when p divides N; the
  // fractional part is carried as whole bytes of the full count, 2(p-1)N/p rounded down).
  const std::uint64_t moved = p <= 1 ? 0 : 2 * (p - 1) * wire_bytes(elements, wire) / p;
  for (auto& t : ledger.ranks) {
    t.bytes_sent += moved;
    t.bytes_received += moved;
    t.messages += p <= 1 ? 0 : 2 * (p - 1);
  }
  ++ledger.calls[static_cast<std::size_t>(Collective::all_reduce)];
}

void record_all_to_all(Ledger& ledger, const std::vector<std::vector<std::int64_t>>& piece_elements, DType wire) {
  const auto n = ledger.ranks.size();
  if (piece_elements.size() != n) throw std::invalid_argument("record_all_to_all: one row of pieces per rank");
  std::vector<PieceTransfer> pieces;
  for (std::size_t s = 0; s < n; ++s) {
    if (piece_elements[s].size() != n) throw std::invalid_argument("all_to_all: one piece per destination");
    for (std::size_t d = 0; d < n; ++d) pieces.push_back({s, d, piece_elements[s][d]});
  }
  record_all_to_all(ledger, pieces, wire);
}

void record_all_to_all(Ledger& ledger, const std::vector<PieceTransfer>& pieces, DType wire) {
  const auto n = ledger.ranks.size();
  for (const PieceTransfer& p : pieces) {
    if (p.from >= n || p.to >= n) throw std::invalid_argument("record_all_to_all: a piece names a rank outside the ledger");
    if (p.from == p.to || p.elements == 0) continue;
    const auto b = wire_bytes(p.elements, wire);
    ledger.ranks[p.from].bytes_sent += b;
    ledger.ranks[p.from].messages += 1;
    ledger.ranks[p.to].bytes_received += b;
  }
  ++ledger.calls[static_cast<std::size_t>(Collective::all_to_all)];
}

namespace {

class SimulatedCommunicator final : public Communicator {
 public:
  SimulatedCommunicator(int ranks, ReductionOrder order) : order_(order) {
    if (ranks < 1) throw std::invalid_argument("a communicator needs at least one rank");
    ledger_.ranks.resize(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r) hosted_.push_back(r);
  }
  int size() const override { return static_cast<int>(ledger_.ranks.size()); }
  const std::vector<int>& hosted_ranks() const override { return hosted_; }
  const Ledger& ledger() const override { return ledger_; }

  MatF all_reduce(const std::vector<MatF>& parts, DType wire) override { return reduce(parts, wire); }
  MatD all_reduce(const std::vector<MatD>& parts, DType wire) override { return reduce(parts, wire); }

  double all_reduce_scalar(const std::vector<double>& parts, DType wire) override {
    check_count(parts.size());
    record_all_reduce(ledger_, 1, wire);
    return reduce_in_order(parts, order_, 0, 1, wire);
  }

  MatD all_gather(const std::vector<MatD>& shards, int axis, DType wire) override {
    check_count(shards.size());
    Eigen::Index rows = 0, cols = 0;
    if (axis == 0) {
      cols = shards[0].cols();
      for (const auto& s : shards) rows += s.rows();
    } else {
      rows = shards[0].rows();
      for (const auto& s : shards) cols += s.cols();
    }
    MatD full(rows, cols);
    Eigen::Index offset = 0;
    std::vector<std::int64_t> elements;
    for (std::size_t r = 0; r < shards.size(); ++r) {
      const auto& s = shards[r];
      if (axis == 0) {
        if (s.cols() != cols) throw std::invalid_argument("all_gather: shards differ in width");
        full.middleRows(offset, s.rows()) = s;
        offset += s.rows();
      } else {
        if (s.rows() != rows) throw std::invalid_argument("all_gather: shards differ in height");
        full.middleCols(offset, s.cols()) = s;
        offset += s.cols();
      }
      elements.push_back(s.size());
    }
    record_all_gather(ledger_, elements, wire);
    return full;
  }

  std::vector<std::vector<MatD>> all_to_all(const std::vector<std::vector<MatD>>& pieces,
                                            DType wire) override {
    check_count(pieces.size());
    const auto n = pieces.size();
    std::vector<std::vector<MatD>> received(n, std::vector<MatD>(n));
    std::vector<std::vector<std::int64_t>> elements(n, std::vector<std::int64_t>(n, 0));
    for (std::size_t s = 0; s < n; ++s) {
      if (pieces[s].size() != n) throw std::invalid_argument("all_to_all: one piece per destination");
      for (std::size_t d = 0; d < n; ++d) {
        received[d][s] = pieces[s][d];
        elements[s][d] = pieces[s][d].size();
      }
    }
    record_all_to_all(ledger_, elements, wire);
    return received;
  }

 private:
  void check_count(std::size_t n) const {
    if (static_cast<int>(n) != size())
      throw std::invalid_argument("collective called with " + std::to_string(n) +
                                  " contributions on a communicator of " + std::to_string(size()) +
                                  " ranks");
  }

  template <class T>
  Mat<T> reduce(const std::vector<Mat<T>>& parts, DType wire) {
    check_count(parts.size());
    const auto rows = parts[0].rows(), cols = parts[0].cols();
    for (const auto& m : parts)
      if (m.rows() != rows || m.cols() != cols)
        throw std::invalid_argument("all_reduce: contributions differ in shape");
    record_all_reduce(ledger_, parts[0].size(), wire);
    Mat<T> sum(rows, cols);
    const Eigen::Index n = sum.size();
    const int p = size();
    std::vector<T> column(static_cast<std::size_t>(p));
    for (Eigen::Index i = 0; i < n; ++i) {
      for (int r = 0; r < p; ++r) column[static_cast<std::size_t>(r)] = parts[static_cast<std::size_t>(r)].data()[i];
      sum.data()[i] = reduce_in_order(column, order_, i, n, wire);
    }
    return sum;
  }

  ReductionOrder order_;
  Ledger ledger_;
  std::vector<int> hosted_;
};

}  // namespace

std::unique_ptr<Communicator> make_simulated_communicator(int ranks, ReductionOrder order) {
  return std::make_unique<SimulatedCommunicator>(ranks, order);
}

}  // namespace nsv
