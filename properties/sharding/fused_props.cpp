// AutoTP's fused and expert layouts (issue 17): L1/L2 on every fused kind (the shards put back
// together are the matrix; head-aligned cuts hold whole heads and KV groups), S2 (gather, owner
// bit-identical) and S3 (per_head bit-identical where it applies, both kernels) on them, the
// negative control where per_head does not apply (Falcon-7B's bloom cut through heads), and the
// routed experts: expert parallelism is NS of each whole expert, AutoTP's sharding of one is not.
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "block_checks.hpp"
#include "check.hpp"
#include "fused_generators.hpp"
#include "generators/configs.hpp"
#include "nsv/metrics.hpp"
#include "nsv/per_head.hpp"
#include "nsv/strategies.hpp"
#include "sharding/sharding_support.hpp"

using namespace nsv;
using namespace nsv::checks::shard;

namespace {


// How many ranks hold index i of the split axis.
std::vector<int> holders(const Layout& l) {
  std::vector<int> n(static_cast<std::size_t>(l.dim), 0);
  for (const auto& pieces : l.ranks)
    for (const auto& p : pieces)
      for (std::int64_t i = p.begin; i < p.end; ++i) ++n[static_cast<std::size_t>(i)];
  return n;
}

bool in_replicated(const Layout& l, std::int64_t i) {
  for (const auto& r : l.replicated)
    if (r.begin <= i && i < r.end) return true;
  return false;
}

// Rank r's pieces inside [begin, end), as (offset, length).
std::vector<Range> pieces_in(const Layout& l, int r, std::int64_t begin, std::int64_t end) {
  std::vector<Range> out;
  for (const auto& p : l.ranks[static_cast<std::size_t>(r)])
    if (p.begin >= begin && p.end <= end) out.push_back(p);
  return out;
}

}  // namespace

// =============================================================================================
// L1 on every fused kind: split then assemble gives the matrix back bit for bit; every index of
// the axis is held by exactly one rank, or by every rank where the layout replicates it (only
// bigcode's K and V); within each sub-matrix (the whole axis for bloom) the ranks' pieces follow
// one another in rank order without gap or overlap.

BOOST_AUTO_TEST_SUITE(sharding_fused)

NSV_PROPERTY(L1_fused_shards_put_back_together_are_the_matrix_and_cover_each_row_once, ()) {
  const FusedCase c = *fused_cases();
  const Layout l = c.layout();
  const MatD g = c.matrix();
  RC_ASSERT(l.dim == c.rows());
  RC_ASSERT_BIT_IDENTICAL(assemble(split(g, l), l), g, DType::fp32, "assemble(split)");
  const auto n = holders(l);
  for (std::int64_t i = 0; i < l.dim; ++i) {
    const int expected = in_replicated(l, i) ? l.tp() : 1;
    RC_ASSERT(n[static_cast<std::size_t>(i)] == expected);
    RC_ASSERT(!in_replicated(l, i) || (c.kind == FusedKind::bigcode && i >= c.heads * c.head_dim));
  }
  // Sub-matrices (bloom: one, the whole axis) tiled in rank order.
  std::vector<std::pair<std::int64_t, std::int64_t>> spans;
  if (c.kind == FusedKind::bloom) {
    spans = {{0, l.dim}};
  } else {
    std::int64_t at = 0;
    for (std::int64_t p : c.geometry().part_rows) spans.push_back({at, at += p});
  }
  for (const auto& [begin, end] : spans) {
    if (in_replicated(l, begin)) continue;
    std::int64_t next = begin;
    for (int r = 0; r < l.tp(); ++r)
      for (const Range& p : pieces_in(l, r, begin, end)) {
        RC_ASSERT(p.begin == next);
        next = p.end;
      }
    RC_ASSERT(next == end);
  }
}

// L2 on the head-aligned fused kinds: glm and phi3 cut each of Q, K, V into whole KV groups
// (rank r: KV // tp + (r < KV % tp) groups, SPEC §2.2), so a rank's query heads are those of its
// KV heads; bigcode cuts Q into whole query heads; gate_up cuts gate and up alike (rank r's gate
// rows match its up rows).
NSV_PROPERTY(L2_fused_head_aligned_pieces_hold_whole_kv_groups_and_gate_matches_up, ()) {
  const FusedCase c = *fused_cases({FusedKind::glm, FusedKind::phi3, FusedKind::bigcode, FusedKind::gate_up});
  const Layout l = c.layout();
  const auto parts = c.geometry().part_rows;
  std::vector<std::int64_t> begin{0};
  for (std::int64_t p : parts) begin.push_back(begin.back() + p);
  for (int r = 0; r < l.tp(); ++r) {
    std::vector<std::int64_t> held;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      std::int64_t w = 0;
      for (const Range& p : pieces_in(l, r, begin[i], begin[i + 1])) w += p.size();
      held.push_back(w);
    }
    if (c.kind == FusedKind::gate_up) {
      RC_ASSERT(held[0] == held[1]);
      continue;
    }
    if (c.kind == FusedKind::bigcode) {  // Q in whole query heads; K and V whole on every rank
      const std::int64_t units = c.heads / c.tp + (r < c.heads % c.tp ? 1 : 0);
      RC_ASSERT(held[0] == units * c.head_dim);
      RC_ASSERT(held[1] == c.head_dim && held[2] == c.head_dim);
      continue;
    }
    const std::int64_t groups = c.kv / c.tp + (r < c.kv % c.tp ? 1 : 0);
    RC_ASSERT(held[1] == groups * c.head_dim);             // K: whole KV heads
    RC_ASSERT(held[2] == groups * c.head_dim);             // V: the same ones
    RC_ASSERT(held[0] == groups * (c.heads / c.kv) * c.head_dim);  // Q: the query heads of those KV heads
  }
}

// =============================================================================================
// S2 on every fused kind and the replicated (router) layout: gather and owner are bit-identical
// to NS of the whole fused matrix, both kernels, any dtype. Kind: exact.

NSV_PROPERTY(S2_gather_and_owner_equal_whole_on_every_fused_layout_bit_for_bit, ()) {
  const FusedCase c = *fused_cases();
  const Layout l = c.layout();
  const MatD g = c.matrix();
  NsConfig cfg = *nsv::checks::ns_configs();
  for (Kernel k : {Kernel::standard, Kernel::gram}) {
    cfg.kernel = k;
    const MatD whole = target_result(Target::whole, backend(), g, 0, cfg);
    for (Strategy s : {Strategy::gather, Strategy::owner})
      assert_blocks_identical(run_strategy(s, backend(), shard_matrix(g, l), cfg), whole, l,
                              std::string(strategy_name(s)) + " " + std::string(kernel_name(k)));
  }
}

// A router every rank holds whole: each rank's own NS (shard) is the whole matrix's, and the
// all-reduce strategies refuse it (they would count its rows tp times).
NSV_PROPERTY(S2_shard_of_a_replicated_matrix_is_whole_and_the_all_reduce_strategies_refuse_it, ()) {
  const auto experts = *rc::gen::inRange<std::int64_t>(1, 17);
  const auto hidden = *rc::gen::inRange<std::int64_t>(1, nsv::checks::max_dim() + 1);
  const int tp = *parallel_tp_degrees();
  const Layout l = replicated_layout(0, experts, tp);
  const MatD g = gaussian(experts, hidden, *matrix_seeds());
  const NsConfig cfg = *nsv::checks::ns_configs();
  RC_ASSERT(promise_on(Strategy::shard, l) == Promise::bit_identical);
  assert_blocks_identical(run_strategy(Strategy::shard, backend(), shard_matrix(g, l), cfg),
                          target_result(Target::whole, backend(), g, 0, cfg), l, "shard of a replicated router");
  for (Strategy s : {Strategy::gram_allreduce, Strategy::gram_restart_allreduce})
    RC_ASSERT(!inapplicable_reason(s, l, 0).empty());
}

// =============================================================================================
// S3 on fused q/k/v: per_head applies to every glm, phi3 and bigcode cut (every piece is whole
// heads: Q, K, V each split on KV-group or query-head boundaries, bigcode's K and V whole), and
// there it is bit-identical to per-head NS of the whole fused matrix, both kernels, any dtype.
// Kind: exact (each head an independent matrix).

NSV_PROPERTY(S3_per_head_applies_to_glm_phi3_bigcode_fused_qkv_and_equals_per_head_of_the_whole, ()) {
  const FusedCase c = *fused_cases({FusedKind::glm, FusedKind::phi3, FusedKind::bigcode});
  const Layout l = c.layout();
  const std::int64_t hd = c.geometry().head_dim;
  RC_ASSERT(hd == c.head_dim);
  RC_ASSERT(inapplicable_reason(Strategy::per_head, l, hd).empty());
  const MatD g = c.matrix();
  NsConfig cfg = *nsv::checks::ns_configs();
  for (Kernel k : {Kernel::standard, Kernel::gram}) {
    cfg.kernel = k;
    const MatD target = target_result(Target::per_head, backend(), g, hd, cfg);
    assert_blocks_identical(run_strategy(Strategy::per_head, backend(), shard_matrix(g, l, hd), cfg), target, l,
                            "per_head " + std::string(kernel_name(k)));
  }
}

// bloom cuts the fused rows as one dimension: per_head applies exactly when every piece lies on
// head boundaries, and is then exact too.
NSV_PROPERTY(S3_per_head_on_a_bloom_cut_applies_iff_the_pieces_are_whole_heads_and_is_then_exact, ()) {
  const FusedCase c = *fused_cases({FusedKind::bloom});
  const Layout l = c.layout();
  bool aligned = true;
  for (const auto& pieces : l.ranks)
    for (const auto& p : pieces) aligned = aligned && p.begin % c.head_dim == 0 && p.size() % c.head_dim == 0;
  RC_ASSERT(inapplicable_reason(Strategy::per_head, l, c.head_dim).empty() == aligned);
  RC_PRE(aligned);
  const MatD g = c.matrix();
  NsConfig cfg = *nsv::checks::ns_configs();
  for (Kernel k : {Kernel::standard, Kernel::gram}) {
    cfg.kernel = k;
    assert_blocks_identical(run_strategy(Strategy::per_head, backend(), shard_matrix(g, l, c.head_dim), cfg),
                            target_result(Target::per_head, backend(), g, c.head_dim, cfg), l, "per_head on bloom");
  }
}

// Negative control. Falcon-7B's query_key_value: 71 query heads and one KV head of 64 rows
// ([Q; K; V], 4672 rows). AutoTP cuts it as bloom by its num_kv_heads 71, which does not divide
// 4672, so by the grain rule: 584 rows per rank at tp 8, 9.125 heads. per_head refuses it, and
// orthogonalizing each rank's rows in blocks of 64 (what per-head NS of the shard would do if it
// ran) differs from per-head NS of the whole by more than 0.1 on the blocks that straddle heads.
// Scaled to head_dim 4 (the cut has the same proportions: 73 head-rows of 4 split by the grain rule).
BOOST_AUTO_TEST_CASE(S3_negative_control_falcon_7b_bloom_cut_straddles_heads) {
  const std::int64_t hd = 4, rows = 73 * hd, in = 24;
  const MatD g = gaussian(rows, in, 11);
  for (int tp : {2, 4, 8}) {
    const FusedGeometry f = fused_geometry(FusedKind::bloom, rows, 71, 1);
    BOOST_TEST(f.autotp_kv_heads == 71);
    const Layout l = autotp_fused_layout(FusedKind::bloom, f.part_rows, tp, f.autotp_kv_heads, 1);
    BOOST_TEST(!inapplicable_reason(Strategy::per_head, l, hd).empty(), "tp " << tp);
    for (Kernel k : {Kernel::standard, Kernel::gram}) {
      NsConfig cfg;
      cfg.kernel = k;
      const MatD target = target_result(Target::per_head, backend(), g, hd, cfg);
      double worst = 0;
      for (int r = 0; r < tp; ++r) {
        const Range piece = l.ranks[static_cast<std::size_t>(r)].front();
        if (piece.begin % hd == 0) continue;  // this rank's blocks start on a head
        const std::int64_t blocks = piece.size() / hd;
        const MatD mine = g.middleRows(piece.begin, blocks * hd);
        const MatD ns = per_head_ns(backend(), mine, blocks, cfg);
        worst = std::max(worst, rel_diff(ns, target.middleRows(piece.begin, blocks * hd)));
      }
      BOOST_TEST(worst > 0.1, "tp " << tp << " " << kernel_name(k) << ": straddling blocks differ by " << worst);
    }
  }
}

// =============================================================================================
// Routed experts. Expert parallelism: a rank holding whole experts orthogonalizes each one, which
// is NS of the unsharded expert, bit for bit (the batched call is the per-matrix kernel, K7).
// AutoTP's way shards every expert (w1/w3 by rows, w2 by columns, the grain rule): gather and
// owner are exact on it (S2), shard is not -- the negative control, > 0.1.

NSV_PROPERTY(expert_parallelism_is_ns_of_each_whole_expert_and_sharding_one_is_not, ()) {
  const auto experts = *rc::gen::inRange<std::int64_t>(1, 7);
  const auto rows = *rc::gen::inRange<std::int64_t>(8, nsv::checks::max_dim() + 1);
  const auto cols = *rc::gen::inRange<std::int64_t>(8, nsv::checks::max_dim() + 1);
  const int tp = *parallel_tp_degrees();
  NsConfig cfg = *nsv::checks::ns_configs();
  const std::uint64_t seed = *matrix_seeds();
  Batch all;
  for (std::int64_t e = 0; e < experts; ++e) all.push_back(gaussian(rows, cols, seed + static_cast<std::uint64_t>(e)));
  for (Kernel k : {Kernel::standard, Kernel::gram}) {
    cfg.kernel = k;
    // Rank r holds experts r, r + tp, ... (any assignment of whole experts is the same claim).
    for (int r = 0; r < tp; ++r) {
      Batch mine;
      for (std::int64_t e = r; e < experts; e += tp) mine.push_back(all[static_cast<std::size_t>(e)]);
      if (mine.empty()) continue;
      const Batch out = backend().newton_schulz(mine, cfg);
      for (std::size_t i = 0; i < mine.size(); ++i)
        RC_ASSERT_BIT_IDENTICAL(out[i], newton_schulz(backend(), mine[i], cfg), DType::fp32, "expert on rank " + std::to_string(r));
    }
    // Negative control, on S6's asserted domain (divergence_props.cpp: fp32, a balanced split of
    // the long axis, sides >= 4): AutoTP's grain-rule shard of one expert, NS per shard.
    NsConfig plain;
    plain.kernel = k;
    const MatD& g = all[0];
    const int axis = rows >= cols ? 0 : 1;
    const Layout l = contiguous_layout(axis, grain_sizes(axis == 0 ? rows : cols, tp, 1));
    const auto run = run_strategy(Strategy::shard, backend(), shard_matrix(g, l), plain);
    RC_ASSERT(rel_diff(assemble(run.outputs, l), newton_schulz(backend(), g, plain)) > 0.1);
  }
}

BOOST_AUTO_TEST_SUITE_END()
