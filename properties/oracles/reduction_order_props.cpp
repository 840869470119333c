// Oracle O1 (issue 13): every reduction order of the simulated all-reduce, written out as the
// plain sequence of additions its documentation names, for tp = 2..8, compared bit for bit.
//
// The documented orders (lib/include/nsv/communicator.hpp, SPEC §3 "collectives"):
//   rank     ((x0 + x1) + x2) + ...
//   reverse  from the last rank down: ((x[p-1] + x[p-2]) + ...) + x0
//   ring     the row-major buffer of n elements is cut into p chunks, chunk k covering the
//            elements i with k*n/p <= i < (k+1)*n/p (real division: its first element is
//            ceil(k*n/p)), and accumulated starting at rank k+1 going round:
//            ((x[k+1] + x[k+2]) + ...) + x[k] (ranks mod p); a scalar is a one-element buffer
//   tree     pairwise ((x0 + x1) + (x2 + x3)); at an odd count the last term of a level passes
//            up unpaired (the documentation names only the power-of-two case; the expressions
//            for p = 3, 5, 6, 7 below are the reading "pair neighbours, carry the odd one").
// Every addition is rounded to the wire dtype: the sum formed in the buffer's type (float or
// double), then rounded to the wire's (via float for 16-bit wires, dtype.hpp's documented
// double rounding), as NCCL reduces 16-bit buffers in fp32.
//
// What makes the oracle independent: it shares no code with lib/src/communicator.cpp (no
// reduce_one, no element-to-chunk division): the orders are loops over ranks and, for tree, one
// hand-written expression per tp; ring chunks are enumerated from their boundaries; rounding to
// 16-bit wires is Eigen's bfloat16/half, not nsv::round_to.
#include <boost/test/unit_test.hpp>
#include <Eigen/Core>
#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.hpp"
#include "generators/rank_buffers.hpp"
#include "generators/tiers.hpp"
#include "nsv/communicator.hpp"

using namespace nsv;
using nsv::checks::RankBuffers;

namespace {

constexpr std::array<ReductionOrder, 5> kOrders = {ReductionOrder::rank, ReductionOrder::reverse, ReductionOrder::ring,
                                                   ReductionOrder::tree, ReductionOrder::ompi_ring};

// One addition on the wire, in the buffer's type T, then rounded to the wire dtype.
template <class T>
T wire_add(T a, T b, DType wire) {
  const T s = a + b;
  switch (wire) {
    case DType::fp64: return s;
    case DType::fp32: return static_cast<T>(static_cast<float>(s));
    case DType::bf16: return static_cast<T>(static_cast<float>(Eigen::bfloat16(static_cast<float>(s))));
    case DType::fp16: return static_cast<T>(static_cast<float>(Eigen::half(static_cast<float>(s))));
  }
  throw std::logic_error("wire_add: unknown dtype");
}

// The tree order, one expression per tp.
template <class T>
T tree_sum(const std::vector<T>& x, DType w) {
  auto a = [w](T l, T r) { return wire_add(l, r, w); };
  switch (x.size()) {
    case 1: return x[0];
    case 2: return a(x[0], x[1]);
    case 3: return a(a(x[0], x[1]), x[2]);
    case 4: return a(a(x[0], x[1]), a(x[2], x[3]));
    case 5: return a(a(a(x[0], x[1]), a(x[2], x[3])), x[4]);
    case 6: return a(a(a(x[0], x[1]), a(x[2], x[3])), a(x[4], x[5]));
    case 7: return a(a(a(x[0], x[1]), a(x[2], x[3])), a(a(x[4], x[5]), x[6]));
    case 8: return a(a(a(x[0], x[1]), a(x[2], x[3])), a(a(x[4], x[5]), a(x[6], x[7])));
  }
  throw std::logic_error("tree_sum: the oracle is written out for tp 1..8");
}

// x[first], x[first+1], ... (mod p), added left to right.
template <class T>
T sum_going_round(const std::vector<T>& x, std::size_t first, DType w) {
  const std::size_t p = x.size();
  T s = x[first % p];
  for (std::size_t step = 1; step < p; ++step) s = wire_add(s, x[(first + step) % p], w);
  return s;
}

// The contributions of every rank to element i, in rank order.
template <class T>
std::vector<T> column(const RankBuffers& b, std::size_t i) {
  std::vector<T> x;
  for (const auto& rank : b.values) x.push_back(static_cast<T>(rank[i]));
  return x;
}

// The documented sum of every element (row-major), in the buffer type T.
template <class T>
MatD oracle_all_reduce(const RankBuffers& b, ReductionOrder order) {
  const auto n = static_cast<std::size_t>(b.rows * b.cols), p = static_cast<std::size_t>(b.tp);
  std::vector<T> out(n);
  if (order == ReductionOrder::ring) {
    for (std::size_t k = 0; k < p; ++k) {
      const std::size_t begin = (k * n + p - 1) / p, end = ((k + 1) * n + p - 1) / p;  // ceil(k n / p)
      for (std::size_t i = begin; i < end; ++i) out[i] = sum_going_round(column<T>(b, i), k + 1, b.wire);
    }
  } else if (order == ReductionOrder::ompi_ring) {
    // Open MPI's ring (coll_base_allreduce.c, ompi_coll_base_allreduce_intra_ring): block k holds
    // early = ceil(n/p) elements for k < n mod p, late = floor(n/p) after; rank k sends its own
    // block k to rank k+1, which adds its own, and so on round the ring.
    std::size_t begin = 0;
    for (std::size_t k = 0; k < p; ++k) {
      const std::size_t length = n / p + (k < n % p ? 1 : 0);
      for (std::size_t i = begin; i < begin + length; ++i) out[i] = sum_going_round(column<T>(b, i), k, b.wire);
      begin += length;
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      const std::vector<T> x = column<T>(b, i);
      if (order == ReductionOrder::tree) {
        out[i] = tree_sum(x, b.wire);
      } else if (order == ReductionOrder::rank) {
        out[i] = x[0];
        for (std::size_t r = 1; r < p; ++r) out[i] = wire_add(out[i], x[r], b.wire);
      } else {  // reverse
        out[i] = x[p - 1];
        for (std::size_t r = p - 1; r-- > 0;) out[i] = wire_add(out[i], x[r], b.wire);
      }
    }
  }
  MatD m(b.rows, b.cols);
  for (int r = 0; r < b.rows; ++r)
    for (int c = 0; c < b.cols; ++c) m(r, c) = static_cast<double>(out[static_cast<std::size_t>(r * b.cols + c)]);
  return m;
}

// What the simulated communicator returns for the same contributions, as doubles (exact).
template <class T>
MatD communicator_all_reduce(const RankBuffers& b, ReductionOrder order) {
  std::vector<Mat<T>> parts;
  for (const auto& rank : b.values) {
    Mat<T> m(b.rows, b.cols);
    for (int r = 0; r < b.rows; ++r)
      for (int c = 0; c < b.cols; ++c) m(r, c) = static_cast<T>(rank[static_cast<std::size_t>(r * b.cols + c)]);
    parts.push_back(m);
  }
  return make_simulated_communicator(b.tp, order)->all_reduce(parts, b.wire).template cast<double>();
}

std::string at(const RankBuffers& b, ReductionOrder order) {
  return "order " + std::string(reduction_order_name(order)) + ", tp " + std::to_string(b.tp) + ", wire " +
         std::string(dtype_name(b.wire));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(oracle_reduction_order)

// =============================================================================================
// O1a fp32 buffers (gradients as DeepSpeed reduces them), on fp32, bf16 and fp16 wires.
NSV_PROPERTY(O1a_fp32_all_reduce_adds_in_the_documented_order_bit_for_bit, ()) {
  const RankBuffers b = *nsv::checks::rank_buffers(2, 8, {DType::fp32, DType::bf16, DType::fp16});
  const ReductionOrder order = *rc::gen::elementOf(kOrders);
  RC_TAG(reduction_order_name(order));
  RC_ASSERT_BIT_IDENTICAL(communicator_all_reduce<float>(b, order), oracle_all_reduce<float>(b, order), b.wire, at(b, order));
}

// O1b fp64 buffers (the reference's carrier), on fp64 and fp32 wires.
NSV_PROPERTY(O1b_fp64_all_reduce_adds_in_the_documented_order_bit_for_bit, ()) {
  const RankBuffers b = *nsv::checks::rank_buffers(2, 8, {DType::fp64, DType::fp32});
  const ReductionOrder order = *rc::gen::elementOf(kOrders);
  RC_TAG(reduction_order_name(order));
  RC_ASSERT_BIT_IDENTICAL(communicator_all_reduce<double>(b, order), oracle_all_reduce<double>(b, order), b.wire, at(b, order));
}

// O1c the scalar all-reduce is the one-element buffer: ring starts at rank 1.
NSV_PROPERTY(O1c_scalar_all_reduce_is_the_one_element_buffer_sum, ()) {
  RankBuffers b = *nsv::checks::rank_buffers(2, 8, {DType::fp64, DType::fp32});
  b.rows = b.cols = 1;
  for (auto& rank : b.values) rank.resize(1);
  const ReductionOrder order = *rc::gen::elementOf(kOrders);
  const double got = make_simulated_communicator(b.tp, order)->all_reduce_scalar(column<double>(b, 0), b.wire);
  RC_ASSERT_BIT_IDENTICAL(MatD::Constant(1, 1, got), oracle_all_reduce<double>(b, order), b.wire, at(b, order));
}

// O1d at tp = 2 every order is the same single addition (IEEE addition commutes): the orders can
// only be told apart from tp = 3 on, which is where the negative control below looks.
NSV_PROPERTY(O1d_at_tp_2_all_orders_agree_bit_for_bit, ()) {
  const RankBuffers b = *nsv::checks::rank_buffers(2, 2, {DType::fp32, DType::bf16});
  const MatD rank_order = communicator_all_reduce<float>(b, ReductionOrder::rank);
  for (ReductionOrder order : kOrders) RC_ASSERT_BIT_IDENTICAL(communicator_all_reduce<float>(b, order), rank_order, b.wire, at(b, order));
}

// The columns c <= 3 tp of a rows x c buffer of n = rows c elements with n mod tp = r (0: none).
namespace {
int cols_with_remainder(int rows, int tp, int r) {
  for (int c = 1; c <= 3 * tp; ++c)
    if ((rows * c) % tp == r && rows * c > tp) return c;
  return 0;
}
}  // namespace

// O1e every order at every tp the oracle spells out and every block split the ring orders make
// (n mod tp = 0 .. tp-1, in one row and, where the remainder can be made so, in two), on 20 drawn
// buffers each: O1a and O1b draw tp and shape at random, and reach a given (order, tp, n mod tp)
// rarely.
BOOST_AUTO_TEST_CASE(O1e_every_order_at_every_tp_and_every_block_split_adds_in_the_documented_order) {
  constexpr int kDraws = 20;
  for (int tp = 2; tp <= 8; ++tp)
    for (int r = 0; r < tp; ++r)
      for (const int rows : {1, 2}) {
        const int cols = cols_with_remainder(rows, tp, r);
        if (cols == 0) continue;
        const auto gen = nsv::checks::rank_buffers_shaped(tp, rows, cols, DType::fp32);
        for (int seed = 0; seed < kDraws; ++seed) {
          const RankBuffers b = nsv::checks::sample(gen, static_cast<std::uint64_t>(seed));
          for (ReductionOrder order : kOrders) {
            const std::string diff = nsv::checks::bit_difference(communicator_all_reduce<float>(b, order),
                                                                oracle_all_reduce<float>(b, order), DType::fp32);
            BOOST_REQUIRE_MESSAGE(diff.empty(), at(b, order) << ", " << rows << "x" << cols << ", draw " << seed << ": " << diff);
          }
        }
      }
}

// Negative control: the comparison can fail. For every pair of distinct orders, some drawn input
// at tp >= 3 gives different bits (counted over 300 draws, so an oracle written for the wrong
// order would be caught); and the oracle of one order never silently matches another's sum on
// all of them.
BOOST_AUTO_TEST_CASE(O1_negative_control_every_pair_of_orders_differs_bitwise_on_some_input) {
  const auto gen = nsv::checks::rank_buffers(3, 8, {DType::fp32});
  std::array<std::array<int, kOrders.size()>, kOrders.size()> differing{};
  constexpr int draws = 300;
  for (int seed = 0; seed < draws; ++seed) {
    const RankBuffers b = nsv::checks::sample(gen, static_cast<std::uint64_t>(seed));
    for (std::size_t i = 0; i < kOrders.size(); ++i)
      for (std::size_t j = i + 1; j < kOrders.size(); ++j)
        if (!nsv::checks::bit_difference(communicator_all_reduce<float>(b, kOrders[i]), oracle_all_reduce<float>(b, kOrders[j]),
                                        DType::fp32)
                 .empty())
          ++differing[i][j];
  }
  for (std::size_t i = 0; i < kOrders.size(); ++i)
    for (std::size_t j = i + 1; j < kOrders.size(); ++j) {
      BOOST_TEST_MESSAGE(reduction_order_name(kOrders[i]) << " vs " << reduction_order_name(kOrders[j]) << ": "
                                                          << differing[i][j] << " of " << draws << " inputs differ");
      BOOST_CHECK_MESSAGE(differing[i][j] > 0, reduction_order_name(kOrders[i])
                                                   << " and " << reduction_order_name(kOrders[j])
                                                   << " agreed on every drawn input: the oracle cannot tell them apart");
    }
}

BOOST_AUTO_TEST_SUITE_END()
