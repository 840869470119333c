#include "nsv/communicator.hpp"

#include <stdexcept>

namespace nsv {

ReductionOrder parse_reduction_order(std::string_view s) {
  if (s == "rank") return ReductionOrder::rank;
  if (s == "reverse") return ReductionOrder::reverse;
  if (s == "ring") return ReductionOrder::ring;
  if (s == "tree") return ReductionOrder::tree;
  throw std::invalid_argument("unknown reduction order '" + std::string(s) +
                              "': expected rank, reverse, ring or tree");
}

std::string_view reduction_order_name(ReductionOrder o) {
  switch (o) {
    case ReductionOrder::rank: return "rank";
    case ReductionOrder::reverse: return "reverse";
    case ReductionOrder::ring: return "ring";
    case ReductionOrder::tree: return "tree";
  }
  return "?";
}

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
    case ReductionOrder::ring: {
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
  for (const auto& row : piece_elements)
    if (row.size() != n) throw std::invalid_argument("all_to_all: one piece per destination");
  for (std::size_t s = 0; s < n; ++s)
    for (std::size_t d = 0; d < n; ++d) {
      if (s == d || piece_elements[s][d] == 0) continue;
      const auto b = wire_bytes(piece_elements[s][d], wire);
      ledger.ranks[s].bytes_sent += b;
      ledger.ranks[s].messages += 1;
      ledger.ranks[d].bytes_received += b;
    }
  ++ledger.calls[static_cast<std::size_t>(Collective::all_to_all)];
}

namespace {

class SimulatedCommunicator final : public Communicator {
 public:
  SimulatedCommunicator(int ranks, ReductionOrder order) : order_(order) {
    if (ranks < 1) throw std::invalid_argument("a communicator needs at least one rank");
    ledger_.ranks.resize(static_cast<std::size_t>(ranks));
  }
  int size() const override { return static_cast<int>(ledger_.ranks.size()); }
  const Ledger& ledger() const override { return ledger_; }

  MatF all_reduce(const std::vector<MatF>& parts, DType wire) override { return reduce(parts, wire); }
  MatD all_reduce(const std::vector<MatD>& parts, DType wire) override { return reduce(parts, wire); }

  double all_reduce_scalar(const std::vector<double>& parts, DType wire) override {
    check_count(parts.size());
    record_all_reduce(ledger_, 1, wire);
    return reduce_one(parts, order_, 1, wire);
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
      // Ring chunk k covers elements [k*n/p, (k+1)*n/p) and starts at rank k+1.
      const int chunk = static_cast<int>(i * p / (n == 0 ? 1 : n));
      sum.data()[i] = reduce_one(column, order_, chunk + 1, wire);
    }
    return sum;
  }

  ReductionOrder order_;
  Ledger ledger_;
};

}  // namespace

std::unique_ptr<Communicator> make_simulated_communicator(int ranks, ReductionOrder order) {
  return std::make_unique<SimulatedCommunicator>(ranks, order);
}

}  // namespace nsv
