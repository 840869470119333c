// Layout properties L1, L2 (SPEC §4), the communication ledger against hand counts (SPEC §3),
// and the negative controls of the exact comparator every sharding property relies on.
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <vector>

#include "check.hpp"
#include "generators/configs.hpp"
#include "sharding/layout_generators.hpp"
#include "nsv/invalid_field.hpp"
#include "nsv/layout.hpp"
#include "nsv/model.hpp"
#include "nsv/strategies.hpp"
#include "sharding/sharding_support.hpp"

using namespace nsv;
using namespace nsv::checks::shard;
using Sizes = std::vector<std::int64_t>;

namespace {

// ---- independent restatements of SPEC §2.2 (hand calculations, not calls to the library) ----

// Head-aligned: deal the KV groups out one at a time, group u to rank u mod tp; a rank holds
// dim/KV rows per group it was dealt.
Sizes dealt_head_aligned(std::int64_t dim, std::int64_t kv, int tp) {
  Sizes groups(static_cast<std::size_t>(tp), 0);
  for (std::int64_t u = 0; u < kv; ++u) ++groups[static_cast<std::size_t>(u % tp)];
  Sizes rows;
  for (auto g : groups) rows.push_back(g * (dim / kv));
  return rows;
}

// Grain rule: deal whole grains of g one at a time in rank order; whatever is left over (less
// than one grain) goes to the last rank.
Sizes dealt_grains(std::int64_t dim, int tp, std::int64_t g) {
  Sizes rows(static_cast<std::size_t>(tp), 0);
  std::int64_t consumed = 0, next = 0;
  while (consumed + g <= dim) {
    rows[static_cast<std::size_t>(next)] += g;
    consumed += g;
    next = (next + 1) % tp;
  }
  rows.back() += dim - consumed;
  return rows;
}

// The block of m along `axis` from `begin`, `len` long, element by element.
MatD block_by_hand(const MatD& m, int axis, std::int64_t begin, std::int64_t len) {
  MatD b = axis == 0 ? MatD(len, m.cols()) : MatD(m.rows(), len);
  for (Eigen::Index i = 0; i < b.rows(); ++i)
    for (Eigen::Index j = 0; j < b.cols(); ++j) b(i, j) = axis == 0 ? m(begin + i, j) : m(i, begin + j);
  return b;
}

MatD matrix_with_split_dim(int axis, std::int64_t dim, std::int64_t other, std::uint64_t seed) {
  return axis == 0 ? gaussian(dim, other, seed) : gaussian(other, dim, seed);
}

// Split by `layout` and check every shard against the hand-computed ranges, then reassemble.
void check_split_assemble(const MatD& m, const Layout& layout, const std::vector<std::vector<Range>>& hand_ranges) {
  const auto shards = split(m, layout);
  RC_ASSERT(shards.size() == hand_ranges.size());
  for (std::size_t r = 0; r < shards.size(); ++r) {
    // concatenate this rank's hand ranges element by element
    std::vector<MatD> pieces;
    std::int64_t width = 0;
    for (const auto& range : hand_ranges[r]) {
      pieces.push_back(block_by_hand(m, layout.axis, range.begin, range.size()));
      width += range.size();
    }
    MatD expected = layout.axis == 0 ? MatD(width, m.cols()) : MatD(m.rows(), width);
    std::int64_t at = 0;
    for (const auto& p : pieces) {
      if (layout.axis == 0)
        expected.middleRows(at, p.rows()) = p;
      else
        expected.middleCols(at, p.cols()) = p;
      at += layout.axis == 0 ? p.rows() : p.cols();
    }
    RC_ASSERT_BIT_IDENTICAL(shards[r], expected, DType::fp32, "shard " + std::to_string(r) + " vs the hand-cut block");
  }
  RC_ASSERT_BIT_IDENTICAL(assemble(shards, layout), m, DType::fp32, "assemble(split(m)) vs m");
}

std::vector<std::vector<Range>> contiguous_ranges(const Sizes& sizes) {
  std::vector<std::vector<Range>> ranges;
  std::int64_t at = 0;
  for (auto s : sizes) {
    ranges.push_back(s > 0 ? std::vector<Range>{{at, at + s}} : std::vector<Range>{});
    at += s;
  }
  return ranges;
}

void check_ranges_equal(const Layout& layout, const std::vector<std::vector<Range>>& hand) {
  RC_ASSERT(layout.tp() == static_cast<int>(hand.size()));
  for (std::size_t r = 0; r < hand.size(); ++r) {
    const auto& got = layout.ranks[r];
    RC_ASSERT(got.size() == hand[r].size());
    for (std::size_t k = 0; k < got.size(); ++k) {
      RC_ASSERT(got[k].begin == hand[r][k].begin);
      RC_ASSERT(got[k].end == hand[r][k].end);
    }
  }
}

std::int64_t sum(const Sizes& s) {
  std::int64_t t = 0;
  for (auto v : s) t += v;
  return t;
}

}  // namespace

// =============================================================================================
// Comparator negative controls: the exact comparator must be able to fail.
// Kind: exact (the comparator reports every one-ulp change, a shape change, -0 vs +0).

BOOST_AUTO_TEST_SUITE(sharding_layout)

NSV_PROPERTY(exact_comparator_reports_a_one_ulp_change_anywhere, ()) {
  const auto rows = *rc::gen::inRange<std::int64_t>(1, 33);
  const auto cols = *rc::gen::inRange<std::int64_t>(1, 33);
  const MatD m = gaussian(rows, cols, *matrix_seeds());
  const auto i = *rc::gen::inRange<Eigen::Index>(0, m.size());
  RC_ASSERT(checks::bit_difference(m, m, DType::fp32).empty());
  const MatD changed = with_one_ulp_changed(m, i);
  RC_ASSERT(!checks::bit_difference(m, changed, DType::fp32).empty());
  const ElementDiff diff = compare_bits(m, changed, DType::fp32);
  RC_ASSERT(diff.mismatches == 1);
  RC_ASSERT(diff.row * m.cols() + diff.col == i);
  RC_ASSERT(diff.ulps == 1u);
}

BOOST_AUTO_TEST_CASE(exact_comparator_reports_shape_and_signed_zero) {
  MatD a = MatD::Zero(2, 3), b = MatD::Zero(3, 2);
  BOOST_TEST(!checks::bit_difference(a, b, DType::fp32).empty());
  MatD c = a;
  c(1, 2) = -0.0;
  BOOST_TEST(!checks::bit_difference(a, c, DType::fp32).empty());  // -0 and +0 are different bits
  MatD n = a;
  n(0, 0) = std::numeric_limits<double>::quiet_NaN();
  BOOST_TEST(checks::bit_difference(n, n, DType::fp32).empty());  // the same NaN bits are identical
}

// =============================================================================================
// L1 shards concatenate to the original; the sizes follow every rule of SPEC §2.2.
// Kind: exact (sizes are integers; split/assemble moves values without arithmetic).

BOOST_AUTO_TEST_CASE(L1_head_aligned_sizes_match_hand_figures) {
  // 8 KV groups over 3 ranks: 3, 3, 2 groups of 512 rows.
  BOOST_TEST(head_aligned_sizes(4096, 8, 3) == (Sizes{1536, 1536, 1024}), boost::test_tools::per_element());
  // tp > KV: ranks past the KV groups hold nothing.
  BOOST_TEST(head_aligned_sizes(256, 2, 4) == (Sizes{128, 128, 0, 0}), boost::test_tools::per_element());
  BOOST_TEST(head_aligned_sizes(1024, 8, 8) == Sizes(8, 128), boost::test_tools::per_element());
  Sizes sixteen(16, 0);
  for (int r = 0; r < 8; ++r) sixteen[static_cast<std::size_t>(r)] = 128;
  BOOST_TEST(head_aligned_sizes(1024, 8, 16) == sixteen, boost::test_tools::per_element());
  BOOST_TEST(head_aligned_sizes(96, 3, 2) == (Sizes{64, 32}), boost::test_tools::per_element());
  BOOST_CHECK_THROW(head_aligned_sizes(100, 8, 2), std::invalid_argument);  // not whole groups
}

BOOST_AUTO_TEST_CASE(L1_head_geometry_and_autotp_layout_match_hand_figures) {
  // Llama-3-8B's q_proj: 4096 rows of 32 heads of 128, 8 KV groups.
  const HeadGeometry q = head_geometry(4096, 32, 8, 0);
  BOOST_TEST(q.heads == 32);
  BOOST_TEST(q.kv_groups == 8);
  BOOST_TEST(q.head_dim == 128);
  BOOST_TEST(head_geometry(1024, 8, 0, 1).kv_groups == 8);  // no GQA: a KV group per head
  BOOST_TEST(head_geometry(1024, 0, 0, 0).head_dim == 0);   // no heads
  const auto names_field = [](const char* field) {
    return [field](const InvalidField& e) { return e.field() == field; };
  };
  BOOST_CHECK_EXCEPTION(head_geometry(100, 8, 0, 0), InvalidField, names_field("heads"));
  BOOST_CHECK_EXCEPTION(head_geometry(1024, 8, 3, 0), InvalidField, names_field("kv_heads"));
  BOOST_CHECK_EXCEPTION(head_geometry(1024, 0, 2, 0), InvalidField, names_field("kv_heads"));
  // Head-aligned when there are KV groups (8 over 3 ranks: 3, 3, 2 groups of 512 rows), the
  // grain rule otherwise (15 grains of 64 over 3 ranks, the 40 left over on the last).
  BOOST_TEST(autotp_layout(0, 4096, 3, 8, 1).widths() == (Sizes{1536, 1536, 1024}), boost::test_tools::per_element());
  BOOST_TEST(autotp_layout(1, 1000, 3, 0, 64).widths() == (Sizes{320, 320, 360}), boost::test_tools::per_element());
  BOOST_TEST(autotp_layout(1, 1000, 3, 0, 64).axis == 1);
}

BOOST_AUTO_TEST_CASE(L1_grain_sizes_match_hand_figures) {
  BOOST_TEST(grain_sizes(10, 4, 1) == (Sizes{3, 3, 2, 2}), boost::test_tools::per_element());
  // 1000 = 15 grains of 64 + 40: 5 grains each, the last rank takes the 40 left over.
  BOOST_TEST(grain_sizes(1000, 3, 64) == (Sizes{320, 320, 360}), boost::test_tools::per_element());
  // 4100 = 64 grains + 4: 22, 21, 21 grains, the last rank +4.
  BOOST_TEST(grain_sizes(4100, 3, 64) == (Sizes{1408, 1344, 1348}), boost::test_tools::per_element());
  // 11008 = 172 grains: 58, 57, 57.
  BOOST_TEST(grain_sizes(11008, 3, 64) == (Sizes{3712, 3648, 3648}), boost::test_tools::per_element());
  // fewer whole grains than ranks: empty ranks, everything left over on the last.
  BOOST_TEST(grain_sizes(50, 4, 64) == (Sizes{0, 0, 0, 50}), boost::test_tools::per_element());
  BOOST_TEST(grain_sizes(130, 4, 64) == (Sizes{64, 64, 0, 2}), boost::test_tools::per_element());
  BOOST_TEST(grain_sizes(3, 5, 1) == (Sizes{1, 1, 1, 0, 0}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(L1_autotp_layouts_of_a_llama_layer_match_hand_figures) {
  // Llama-3-8B: hidden 4096, 32 heads of 128, 8 KV heads, intermediate 14336; tp 3.
  ModelDims d;
  d.hidden = 4096;
  d.heads = 32;
  d.kv_heads = 8;
  d.head_dim = 128;
  d.intermediate = 14336;
  const auto params = llama_layer_params(d);
  auto widths = [&](const std::string& name, std::int64_t grain) {
    for (const auto& p : params)
      if (p.name == name) return autotp_layout(p, 3, grain).widths();
    throw std::logic_error("no " + name);
  };
  BOOST_TEST(widths("q_proj", 1) == (Sizes{1536, 1536, 1024}), boost::test_tools::per_element());
  BOOST_TEST(widths("k_proj", 1) == (Sizes{384, 384, 256}), boost::test_tools::per_element());
  BOOST_TEST(widths("v_proj", 1) == (Sizes{384, 384, 256}), boost::test_tools::per_element());
  BOOST_TEST(widths("o_proj", 1) == (Sizes{1536, 1536, 1024}), boost::test_tools::per_element());
  // 14336 = 3 * 4778 + 2 (grain 1); = 224 grains of 64: 75, 75, 74 (grain 64).
  BOOST_TEST(widths("gate_proj", 1) == (Sizes{4779, 4779, 4778}), boost::test_tools::per_element());
  BOOST_TEST(widths("down_proj", 1) == (Sizes{4779, 4779, 4778}), boost::test_tools::per_element());
  BOOST_TEST(widths("up_proj", 64) == (Sizes{4800, 4800, 4736}), boost::test_tools::per_element());
  for (const auto& p : params) {
    const auto l = autotp_layout(p, 3, 1);
    BOOST_TEST(l.axis == (p.name == "o_proj" || p.name == "down_proj" ? 1 : 0));
  }
}

BOOST_AUTO_TEST_CASE(L1_fused_qkv_matches_hand_ranges) {
  // 32 query heads and 8 KV heads of 16: Q 512 rows, K 128, V 128; tp 3 (8 groups: 3, 3, 2).
  const Sizes q = head_aligned_sizes(512, 8, 3), k = head_aligned_sizes(128, 8, 3), v = head_aligned_sizes(128, 8, 3);
  BOOST_TEST(q == (Sizes{192, 192, 128}), boost::test_tools::per_element());
  BOOST_TEST(k == (Sizes{48, 48, 32}), boost::test_tools::per_element());
  const Layout l = fused_layout(0, {q, k, v});
  BOOST_TEST(l.dim == 768);
  const std::vector<std::vector<Range>> hand = {
      {{0, 192}, {512, 560}, {640, 688}}, {{192, 384}, {560, 608}, {688, 736}}, {{384, 512}, {608, 640}, {736, 768}}};
  BOOST_REQUIRE(l.tp() == 3);
  for (int r = 0; r < 3; ++r) {
    const auto& got = l.ranks[static_cast<std::size_t>(r)];
    BOOST_REQUIRE(got.size() == 3);
    for (int p = 0; p < 3; ++p) {
      BOOST_TEST(got[static_cast<std::size_t>(p)].begin == hand[static_cast<std::size_t>(r)][static_cast<std::size_t>(p)].begin);
      BOOST_TEST(got[static_cast<std::size_t>(p)].end == hand[static_cast<std::size_t>(r)][static_cast<std::size_t>(p)].end);
    }
  }
  BOOST_TEST(l.widths() == (Sizes{288, 288, 192}), boost::test_tools::per_element());
}

NSV_PROPERTY(L1_head_aligned_sizes_follow_the_rule_and_shards_concatenate_to_the_original, ()) {
  const auto kv = *rc::gen::inRange<std::int64_t>(1, 17);
  const auto per_group = *rc::gen::inRange<std::int64_t>(1, 9);
  const int tp = *tp_degrees(12);
  const int axis = *axes();
  const std::int64_t dim = kv * per_group;
  const Sizes sizes = head_aligned_sizes(dim, kv, tp);
  RC_LOG() << "dim " << dim << " kv " << kv << " tp " << tp << " -> " << sizes_text(sizes) << "\n";
  RC_ASSERT(sizes == dealt_head_aligned(dim, kv, tp));
  RC_ASSERT(sum(sizes) == dim);
  RC_ASSERT(static_cast<int>(sizes.size()) == tp);
  for (int r = 0; r < tp; ++r) {
    if (r >= kv) RC_ASSERT(sizes[static_cast<std::size_t>(r)] == 0);  // zero width when tp > KV
    if (r < kv) RC_ASSERT(sizes[static_cast<std::size_t>(r)] > 0);
  }
  // uneven exactly when tp does not divide KV (among the ranks that hold something)
  const bool even = kv % tp == 0;
  const bool all_equal = std::all_of(sizes.begin(), sizes.end(), [&](auto s) { return s == sizes[0]; });
  RC_ASSERT(even == all_equal);
  const Layout layout = contiguous_layout(axis, sizes);
  check_ranges_equal(layout, contiguous_ranges(sizes));
  check_split_assemble(matrix_with_split_dim(axis, dim, *rc::gen::inRange<std::int64_t>(1, 6), *matrix_seeds()), layout,
                       contiguous_ranges(sizes));
}

NSV_PROPERTY(L1_grain_sizes_follow_the_rule_and_shards_concatenate_to_the_original, ()) {
  const auto dim = *rc::gen::inRange<std::int64_t>(1, 400);
  const int tp = *tp_degrees(12);
  const auto g = *grains(dim);
  const int axis = *axes();
  const Sizes sizes = grain_sizes(dim, tp, g);
  RC_LOG() << "dim " << dim << " tp " << tp << " grain " << g << " -> " << sizes_text(sizes) << "\n";
  RC_ASSERT(sizes == dealt_grains(dim, tp, g));
  RC_ASSERT(sum(sizes) == dim);
  for (int r = 0; r + 1 < tp; ++r) RC_ASSERT(sizes[static_cast<std::size_t>(r)] % g == 0);  // whole grains
  RC_ASSERT(sizes.back() % g == dim % g);  // the last rank also takes the remainder
  const Layout layout = contiguous_layout(axis, sizes);
  check_ranges_equal(layout, contiguous_ranges(sizes));
  check_split_assemble(matrix_with_split_dim(axis, dim, *rc::gen::inRange<std::int64_t>(1, 4), *matrix_seeds()), layout,
                       contiguous_ranges(sizes));
}

NSV_PROPERTY(L1_fused_qkv_splits_each_part_by_its_own_heads_and_concatenates_to_the_original, ()) {
  const auto kv = *rc::gen::inRange<std::int64_t>(1, 9);
  const auto group = *rc::gen::inRange<std::int64_t>(1, 5);
  const auto hd = *head_dims(8);
  const int tp = *tp_degrees(10);
  const std::int64_t qrows = kv * group * hd, kvrows = kv * hd;
  const Sizes q = head_aligned_sizes(qrows, kv, tp), k = head_aligned_sizes(kvrows, kv, tp), v = head_aligned_sizes(kvrows, kv, tp);
  const Layout layout = fused_layout(0, {q, k, v});
  RC_ASSERT(layout.dim == qrows + 2 * kvrows);
  // hand ranges: rank r holds its Q rows, then its K rows (offset by all of Q), then its V rows
  std::vector<std::vector<Range>> hand(static_cast<std::size_t>(tp));
  const Sizes dq = dealt_head_aligned(qrows, kv, tp), dk = dealt_head_aligned(kvrows, kv, tp);
  std::int64_t base = 0;
  for (const Sizes* part : {&dq, &dk, &dk}) {
    std::int64_t at = base;
    for (int r = 0; r < tp; ++r) {
      const auto s = (*part)[static_cast<std::size_t>(r)];
      if (s > 0) hand[static_cast<std::size_t>(r)].push_back({at, at + s});
      at += s;
    }
    base = at;
  }
  check_ranges_equal(layout, hand);
  for (int r = 0; r < tp; ++r)
    RC_ASSERT(layout.width(r) == dq[static_cast<std::size_t>(r)] + 2 * dk[static_cast<std::size_t>(r)]);
  check_split_assemble(gaussian(layout.dim, *rc::gen::inRange<std::int64_t>(1, 5), *matrix_seeds()), layout, hand);
}

// =============================================================================================
// L2 head-aligned shards hold whole heads, and for q under GQA exactly the query heads of the
// rank's KV groups. Kind: exact (integer ranges).

NSV_PROPERTY(L2_head_aligned_shards_hold_whole_heads_and_q_follows_its_kv_groups, ()) {
  ModelDims d;
  d.kv_heads = *rc::gen::inRange<std::int64_t>(1, 17);
  const auto group = *rc::gen::inRange<std::int64_t>(1, 9);
  d.heads = d.kv_heads * group;
  d.head_dim = *head_dims(256);
  d.hidden = *rc::gen::inRange<std::int64_t>(1, 5000);
  d.intermediate = *rc::gen::inRange<std::int64_t>(1, 20000);
  const int tp = *tp_degrees(16);
  const auto params = llama_layer_params(d);
  auto find = [&](const std::string& n) {
    for (const auto& p : params)
      if (p.name == n) return p;
    throw std::logic_error(n);
  };
  const Layout q = autotp_layout(find("q_proj"), tp), k = autotp_layout(find("k_proj"), tp), v = autotp_layout(find("v_proj"), tp),
               o = autotp_layout(find("o_proj"), tp);
  RC_ASSERT(o.axis == 1);
  for (int r = 0; r < tp; ++r) {
    const auto i = static_cast<std::size_t>(r);
    for (const Layout* l : {&q, &k, &v, &o}) {
      RC_ASSERT(l->ranks[i].size() <= 1u);
      for (const auto& range : l->ranks[i]) {
        RC_ASSERT(range.begin % d.head_dim == 0);  // starts on a head boundary
        RC_ASSERT(range.end % d.head_dim == 0);    // and ends on one: whole heads only
      }
    }
    // the KV heads rank r holds, from k_proj; its query heads must be exactly their groups
    const std::int64_t k0 = k.ranks[i].empty() ? 0 : k.ranks[i][0].begin / d.head_dim;
    const std::int64_t k1 = k.ranks[i].empty() ? 0 : k.ranks[i][0].end / d.head_dim;
    const std::int64_t h0 = q.ranks[i].empty() ? 0 : q.ranks[i][0].begin / d.head_dim;
    const std::int64_t h1 = q.ranks[i].empty() ? 0 : q.ranks[i][0].end / d.head_dim;
    RC_ASSERT(h1 - h0 == (k1 - k0) * group);
    if (k1 > k0) {
      RC_ASSERT(h0 == k0 * group);
      RC_ASSERT(h1 == k1 * group);
      for (std::int64_t h = h0; h < h1; ++h) RC_ASSERT(h / group >= k0 && h / group < k1);  // query head h uses KV head h/group
    }
    RC_ASSERT(v.width(r) == k.width(r));
    RC_ASSERT(o.width(r) == q.width(r));  // o_proj's input heads follow q's
  }
}

// =============================================================================================
// Communication ledger against hand counts (SPEC §3; byte model in communicator.hpp).
// Kind: exact (integer counts). Hand formulas are written out below, not taken from the library.

namespace {

struct Expected {
  std::uint64_t sent = 0, received = 0, messages = 0;
};

void check_ledger(const StrategyRun& run, const std::vector<Expected>& expected, const std::array<int, kAllCollectives.size()>& calls) {
  RC_ASSERT(run.ledger.ranks.size() == expected.size());
  for (std::size_t r = 0; r < expected.size(); ++r) {
    const auto& t = run.ledger.ranks[r];
    RC_LOG() << "rank " << r << ": sent " << t.bytes_sent << " (hand " << expected[r].sent << "), received " << t.bytes_received
             << " (hand " << expected[r].received << "), messages " << t.messages << " (hand " << expected[r].messages << ")\n";
    RC_ASSERT(t.bytes_sent == expected[r].sent);
    RC_ASSERT(t.bytes_received == expected[r].received);
    RC_ASSERT(t.messages == expected[r].messages);
  }
  for (std::size_t c = 0; c < calls.size(); ++c) RC_ASSERT(run.ledger.calls[c] == calls[c]);
}

constexpr std::size_t kGather = 0, kReduce = 1, kToAll = 2;

}  // namespace

NSV_PROPERTY(ledger_matches_hand_counts_for_every_strategy, ()) {
  const ShardCase c = *shard_cases(tp_degrees(8), 1, 24);
  const MatD g = c.matrix();
  const Layout layout = c.layout();
  const int tp = c.tp();
  NsConfig cfg;
  cfg.kernel = *rc::gen::arbitrary<Kernel>();
  cfg.steps = *rc::gen::inRange(0, 8);
  cfg.restart_at = *checks::restart_lists(cfg.steps);
  const std::uint64_t other = static_cast<std::uint64_t>(other_extent(g, c.axis));
  const std::uint64_t dim = static_cast<std::uint64_t>(c.rule.dim);
  const ShardedMatrix sm = shard_matrix(g, layout);
  const auto p = static_cast<std::uint64_t>(tp);
  std::vector<std::uint64_t> w;
  for (int r = 0; r < tp; ++r) w.push_back(static_cast<std::uint64_t>(layout.width(r)));

  // shard and per_head: no communication at all
  check_ledger(run_strategy(Strategy::shard, backend(), sm, cfg), std::vector<Expected>(p), {0, 0, 0});

  // gather: one all-gather; rank r sends its 4*w_r*other bytes to each of the tp-1 others and
  // receives everyone else's shard.
  {
    std::vector<Expected> e;
    for (int r = 0; r < tp; ++r) {
      const auto own = 4 * w[static_cast<std::size_t>(r)] * other;
      e.push_back({(p - 1) * own, 4 * dim * other - own, p - 1});
    }
    const auto run = run_strategy(Strategy::gather, backend(), sm, cfg);
    check_ledger(run, e, {1, 0, 0});
    // even split: each rank receives (tp-1)/tp of the 4mn-byte matrix
    if (std::all_of(w.begin(), w.end(), [&](auto x) { return x == w[0]; }))
      for (const auto& t : run.ledger.ranks) RC_ASSERT(t.bytes_received * p == (p - 1) * 4 * static_cast<std::uint64_t>(g.size()));
  }

  // owner: two all-to-alls; every other rank sends its shard to rank 0 and receives its block
  // back (one message each way when its shard is non-empty); rank 0 receives and sends all but
  // its own.
  {
    std::vector<Expected> e(p);
    for (int r = 1; r < tp; ++r) {
      const auto bytes = 4 * w[static_cast<std::size_t>(r)] * other;
      e[static_cast<std::size_t>(r)] = {bytes, bytes, bytes > 0 ? 1u : 0u};
      e[0].sent += bytes;
      e[0].received += bytes;
      e[0].messages += bytes > 0 ? 1 : 0;
    }
    check_ledger(run_strategy(Strategy::owner, backend(), sm, cfg), e, {0, 0, 2});
  }

  // gram_allreduce / gram_restart_allreduce: at tp = 1 the whole kernel, no communication.
  // Otherwise one scalar all-reduce (the norm) plus one k x k Gram all-reduce per step (k = the
  // unsharded length), or, for the restart variant on a non-square matrix, one at the start and
  // one at the restart (when 1 <= restart_at <= steps-1). Ring all-reduce: each rank sends and
  // receives 2(tp-1)/tp of the buffer (whole bytes, rounded down) in 2(tp-1) messages.
  for (Strategy s : {Strategy::gram_allreduce, Strategy::gram_restart_allreduce}) {
    int grams = 0;
    if (tp > 1) {
      const bool square = other == dim;
      if (s == Strategy::gram_allreduce || square)
        grams = cfg.steps;
      else
        grams = cfg.steps == 0 ? 0 : 1 + static_cast<int>(std::count_if(cfg.restart_at.begin(), cfg.restart_at.end(), [&](int s) { return s >= 1 && s <= cfg.steps - 1; }));
    }
    const int reduces = tp > 1 ? 1 + grams : 0;
    std::vector<Expected> e(p);
    if (tp > 1)
      for (auto& x : e) {
        const std::uint64_t scalar = 2 * (p - 1) * 4 / p, gram = 2 * (p - 1) * 4 * other * other / p;
        x.sent = x.received = scalar + static_cast<std::uint64_t>(grams) * gram;
        x.messages = static_cast<std::uint64_t>(reduces) * 2 * (p - 1);
      }
    RC_LOG() << strategy_name(s) << ": hand count " << reduces << " all-reduces (" << grams << " Gram + 1 scalar), steps "
             << cfg.steps << " restart_at " << restarts_text(cfg.restart_at) << "\n";
    check_ledger(run_strategy(s, backend(), sm, cfg), e, {0, reduces, 0});
  }
}

BOOST_AUTO_TEST_CASE(ledger_figures_for_the_default_configuration) {
  // 512 x 1024 fp32 at tp 4, split on dim 0, 5 steps, restart at 2.
  const MatD g = gaussian(512, 1024, 1);
  const Layout l = even_layout(0, 512, 4);
  const ShardedMatrix sm = shard_matrix(g, l);
  NsConfig cfg;
  cfg.steps = 0;  // the ledger does not depend on the work done; keep it cheap
  const auto gather = run_strategy(Strategy::gather, backend(), sm, cfg);
  // each rank receives 3/4 of 4 * 512 * 1024 bytes = 1.5 MiB
  for (const auto& t : gather.ledger.ranks) BOOST_TEST(t.bytes_received == 1572864u);
  cfg.steps = 5;
  const MatD small = gaussian(16, 32, 2);
  const ShardedMatrix ssm = shard_matrix(small, even_layout(0, 16, 4));
  const auto ar = run_strategy(Strategy::gram_allreduce, backend(), ssm, cfg);
  const auto rs = run_strategy(Strategy::gram_restart_allreduce, backend(), ssm, cfg);
  BOOST_TEST(ar.ledger.count(Collective::all_reduce) == 6);  // 5 Gram + 1 scalar
  BOOST_TEST(rs.ledger.count(Collective::all_reduce) == 3);  // 2 Gram + 1 scalar
  std::cout << "[figure] ledger: gather 512x1024 fp32 tp4 receives " << gather.ledger.ranks[0].bytes_received
            << " B/rank; gram_allreduce " << ar.ledger.count(Collective::all_reduce) << " all-reduces, gram_restart_allreduce "
            << rs.ledger.count(Collective::all_reduce) << " (5 steps, restart at 2)" << std::endl;
}

BOOST_AUTO_TEST_SUITE_END()
