#include "nsv/layout.hpp"

#include <stdexcept>
#include <string>

#include "nsv/invalid_field.hpp"

namespace nsv {
namespace {

// The largest tensor-parallel degree any layout function accepts (nsv shard/sweep --tp).
constexpr int kMaxTp = 4096;

void check_tp(int tp) {
  // The command line's limit, here so that every front end has it (a layout holds tp ranges).
  if (tp < 1 || tp > kMaxTp) throw InvalidField("tp", "must be between 1 and " + std::to_string(kMaxTp) + ", got " + std::to_string(tp));
}

}  // namespace

std::vector<std::int64_t> head_aligned_sizes(std::int64_t dim, std::int64_t kv_groups, int tp) {
  check_tp(tp);
  if (kv_groups < 1 || dim % kv_groups != 0)
    throw std::invalid_argument("head-aligned split: dimension " + std::to_string(dim) +
                                " is not a whole number of " + std::to_string(kv_groups) + " KV groups");
  std::vector<std::int64_t> sizes;
  for (int r = 0; r < tp; ++r) {
    const std::int64_t units = kv_groups / tp + (r < kv_groups % tp ? 1 : 0);
    sizes.push_back(dim * units / kv_groups);
  }
  return sizes;
}

std::vector<std::int64_t> grain_sizes(std::int64_t dim, int tp, std::int64_t grain) {
  check_tp(tp);
  if (grain < 1) throw InvalidField("grain", "must be >= 1, got " + std::to_string(grain));
  const std::int64_t grains = dim / grain, rem = dim % grain;
  std::vector<std::int64_t> sizes;
  for (int r = 0; r < tp; ++r) sizes.push_back((grains / tp + (r < grains % tp ? 1 : 0)) * grain);
  sizes.back() += rem;
  return sizes;
}

std::vector<std::int64_t> autotp_sizes(std::int64_t dim, int tp, std::int64_t kv_heads, std::int64_t grain) {
  if (kv_heads > 0 && dim % kv_heads == 0) return head_aligned_sizes(dim, kv_heads, tp);
  return grain_sizes(dim, tp, grain);
}

bool Layout::fully_replicated() const {
  std::int64_t covered = 0;
  for (const auto& r : replicated) covered += r.size();
  return covered == dim && dim > 0;
}

std::int64_t Layout::width(int rank) const {
  std::int64_t w = 0;
  for (const auto& r : ranks.at(static_cast<std::size_t>(rank))) w += r.size();
  return w;
}

std::vector<std::int64_t> Layout::widths() const {
  std::vector<std::int64_t> w;
  for (int r = 0; r < tp(); ++r) w.push_back(width(r));
  return w;
}

Layout contiguous_layout(int axis, const std::vector<std::int64_t>& sizes) {
  return fused_layout(axis, {sizes});
}

Layout fused_layout(int axis, const std::vector<std::vector<std::int64_t>>& part_sizes) {
  if (part_sizes.empty() || part_sizes[0].empty()) throw std::invalid_argument("a layout needs at least one rank");
  std::vector<FusedPart> parts;
  for (const auto& sizes : part_sizes) {
    std::int64_t size = 0;
    for (std::int64_t s : sizes) size += s;
    parts.push_back({size, sizes});
  }
  return fused_layout(axis, static_cast<int>(part_sizes[0].size()), parts);
}

Layout fused_layout(int axis, int tp, const std::vector<FusedPart>& parts) {
  if (axis != 0 && axis != 1) throw std::invalid_argument("axis must be 0 (rows) or 1 (cols)");
  check_tp(tp);
  if (parts.empty()) throw std::invalid_argument("a fused layout needs at least one part");
  Layout layout;
  layout.axis = axis;
  layout.ranks.resize(static_cast<std::size_t>(tp));
  for (const auto& part : parts) {
    if (part.size < 0) throw std::invalid_argument("negative part size");
    if (part.rank_sizes.empty()) {  // replicated: every rank holds the whole part
      if (part.size > 0) {
        const Range whole{layout.dim, layout.dim + part.size};
        for (auto& pieces : layout.ranks) pieces.push_back(whole);
        layout.replicated.push_back(whole);
      }
      layout.dim += part.size;
      continue;
    }
    if (part.rank_sizes.size() != layout.ranks.size()) throw std::invalid_argument("every fused part needs one size per rank");
    std::int64_t sum = 0;
    for (std::size_t r = 0; r < part.rank_sizes.size(); ++r) {
      const std::int64_t s = part.rank_sizes[r];
      if (s < 0) throw std::invalid_argument("negative shard size");
      if (s > 0) layout.ranks[r].push_back({layout.dim, layout.dim + s});
      layout.dim += s;
      sum += s;
    }
    if (sum != part.size)
      throw std::invalid_argument("a fused part of " + std::to_string(part.size) + " is split into sizes summing to " +
                                  std::to_string(sum));
  }
  return layout;
}

Layout replicated_layout(int axis, std::int64_t dim, int tp) {
  if (dim < 1) throw std::invalid_argument("a replicated layout needs a positive dimension, got " + std::to_string(dim));
  return fused_layout(axis, tp, {FusedPart{dim, {}}});
}

Layout autotp_fused_layout(FusedKind kind, const std::vector<std::int64_t>& part_rows, int tp, std::int64_t kv_heads,
                           std::int64_t grain) {
  check_tp(tp);
  if (part_rows.empty()) throw std::invalid_argument("a fused layout needs at least one part");
  std::int64_t rows = 0;
  for (std::int64_t p : part_rows) {
    if (p < 1) throw std::invalid_argument("a fused part needs a positive size, got " + std::to_string(p));
    rows += p;
  }
  std::vector<FusedPart> parts;
  switch (kind) {
    case FusedKind::none: throw std::invalid_argument("autotp_fused_layout: not a fused matrix");
    case FusedKind::glm:
    case FusedKind::phi3:
      for (std::int64_t p : part_rows) parts.push_back({p, autotp_sizes(p, tp, kv_heads, grain)});
      break;
    case FusedKind::bloom: parts.push_back({rows, autotp_sizes(rows, tp, kv_heads, grain)}); break;
    case FusedKind::bigcode:
      if (part_rows.size() < 2) throw std::invalid_argument("a bigcode layout needs Q and at least one replicated part");
      parts.push_back({part_rows[0], autotp_sizes(part_rows[0], tp, kv_heads, grain)});
      for (std::size_t i = 1; i < part_rows.size(); ++i) parts.push_back({part_rows[i], {}});
      break;
    case FusedKind::gate_up:
      for (std::int64_t p : part_rows) parts.push_back({p, grain_sizes(p, tp, grain)});
      break;
  }
  return fused_layout(0, tp, parts);
}

Layout even_layout(int axis, std::int64_t dim, int tp) { return contiguous_layout(axis, grain_sizes(dim, tp, 1)); }

HeadGeometry head_geometry(std::int64_t dim, std::int64_t heads, std::int64_t kv_heads, int axis) {
  HeadGeometry g;
  if (heads == 0 && kv_heads == 0) return g;
  if (heads == 0) throw InvalidField("kv_heads", "needs heads > 0 (KV groups are groups of attention heads)");
  if (heads < 0 || dim % heads != 0)
    throw InvalidField("heads", std::to_string(heads) + " does not divide the " + std::to_string(dim) +
                                    (axis == 0 ? " rows" : " cols") + " of the split axis");
  g.heads = heads;
  g.kv_groups = kv_heads == 0 ? heads : kv_heads;
  if (g.kv_groups < 0 || heads % g.kv_groups != 0)
    throw InvalidField("kv_heads", std::to_string(g.kv_groups) + " does not divide the " + std::to_string(heads) + " heads");
  g.head_dim = dim / heads;
  return g;
}

FusedGeometry fused_geometry(FusedKind kind, std::int64_t rows, std::int64_t heads, std::int64_t kv_heads) {
  FusedGeometry g;
  if (kind == FusedKind::none) throw InvalidField("fused", "must name a fused layout");
  if (kind == FusedKind::gate_up) {
    if (heads != 0 || kv_heads != 0) throw InvalidField("heads", "a fused gate_up matrix has no heads, got " + std::to_string(heads));
    if (rows < 2 || rows % 2 != 0) throw InvalidField("shape", "a fused [gate; up] matrix needs an even row count, got " + std::to_string(rows));
    g.part_rows = {rows / 2, rows / 2};
    return g;
  }
  if (heads < 1) throw InvalidField("heads", "a fused q/k/v matrix needs its query head count, got " + std::to_string(heads));
  const std::int64_t kv = kv_heads == 0 ? (kind == FusedKind::bigcode ? 1 : heads) : kv_heads;
  if (kv < 1 || heads % kv != 0)
    throw InvalidField("kv_heads", std::to_string(kv) + " does not divide the " + std::to_string(heads) + " query heads");
  if (kind == FusedKind::bigcode && kv != 1)
    throw InvalidField("kv_heads", "the bigcode layout has one shared K and V head (multi-query), got " + std::to_string(kv));
  const std::int64_t units = heads + 2 * kv;
  if (rows % units != 0)
    throw InvalidField("shape", std::to_string(rows) + " rows are not " + std::to_string(units) + " heads (" + std::to_string(heads) +
                                   " query + 2 x " + std::to_string(kv) + " KV) of equal size");
  g.head_dim = rows / units;
  g.part_rows = {heads * g.head_dim, kv * g.head_dim, kv * g.head_dim};
  g.autotp_kv_heads = kind == FusedKind::bloom || kind == FusedKind::bigcode ? heads : kv;
  return g;
}

Layout autotp_layout(int axis, std::int64_t dim, int tp, std::int64_t kv_groups, std::int64_t grain) {
  const auto sizes = kv_groups > 0 ? head_aligned_sizes(dim, kv_groups, tp) : grain_sizes(dim, tp, grain);
  return contiguous_layout(axis, sizes);
}

AutoTpSplit autotp_split(FusedKind kind, int axis, std::int64_t dim, int tp, std::int64_t heads, std::int64_t kv_heads,
                         std::int64_t grain) {
  AutoTpSplit s;
  if (kind == FusedKind::none) {
    s.per_head = head_geometry(dim, heads, kv_heads, axis);
    s.heads = s.per_head.heads;
    s.kv_heads = s.per_head.kv_groups;
    s.layout = autotp_layout(axis, dim, tp, s.per_head.kv_groups, grain);
    return s;
  }
  if (axis != 0) throw InvalidField("axis", "must be 0 for a fused matrix: AutoTP fuses column-parallel (dim-0) projections only");
  const FusedGeometry f = fused_geometry(kind, dim, heads, kv_heads);
  s.per_head.head_dim = f.head_dim;
  s.per_head.heads = f.head_dim > 0 ? dim / f.head_dim : 0;
  s.per_head.kv_groups = f.autotp_kv_heads;
  s.heads = f.head_dim > 0 ? f.part_rows[0] / f.head_dim : 0;
  s.kv_heads = f.head_dim > 0 ? f.part_rows[1] / f.head_dim : 0;
  s.layout = autotp_fused_layout(kind, f.part_rows, tp, f.autotp_kv_heads, grain);
  return s;
}

Layout autotp_layout(const MuonParam& p, int tp, std::int64_t grain) {
  const std::int64_t dim = p.split_axis == 0 ? p.rows : p.cols;
  if (p.role == Role::replicated) return replicated_layout(p.split_axis, dim, tp);
  if (p.fused != FusedKind::none) {
    std::vector<std::int64_t> part_rows;
    for (const auto& s : p.parts) part_rows.push_back(s.rows);
    return autotp_fused_layout(p.fused, part_rows, tp, p.kv_groups, grain);
  }
  return contiguous_layout(p.split_axis, autotp_sizes(dim, tp, p.kv_groups, grain));
}

std::vector<MatD> split(const MatD& m, const Layout& layout) {
  const std::int64_t extent = layout.axis == 0 ? m.rows() : m.cols();
  if (extent != layout.dim)
    throw std::invalid_argument("layout covers " + std::to_string(layout.dim) + " along axis " + std::to_string(layout.axis) +
                                " but the matrix has " + std::to_string(extent));
  std::vector<MatD> shards;
  for (int r = 0; r < layout.tp(); ++r) {
    const std::int64_t w = layout.width(r);
    MatD s = layout.axis == 0 ? MatD(w, m.cols()) : MatD(m.rows(), w);
    std::int64_t at = 0;
    for (const auto& range : layout.ranks[static_cast<std::size_t>(r)]) {
      if (layout.axis == 0)
        s.middleRows(at, range.size()) = m.middleRows(range.begin, range.size());
      else
        s.middleCols(at, range.size()) = m.middleCols(range.begin, range.size());
      at += range.size();
    }
    shards.push_back(std::move(s));
  }
  return shards;
}

MatD assemble(const std::vector<MatD>& shards, const Layout& layout) {
  if (static_cast<int>(shards.size()) != layout.tp())
    throw std::invalid_argument("assemble: shards must hold one matrix per rank: the layout has " + std::to_string(layout.tp()) +
                                " rank(s), got " + std::to_string(shards.size()) + " shard(s)");
  const MatD& any = shards[0];
  const std::int64_t other = layout.axis == 0 ? any.cols() : any.rows();
  // Every shard's shape against the layout before anything is copied (a short shard would be read
  // out of bounds).
  for (int r = 0; r < layout.tp(); ++r) {
    const MatD& s = shards[static_cast<std::size_t>(r)];
    const std::int64_t w = layout.width(r);
    const std::int64_t rows = layout.axis == 0 ? w : other, cols = layout.axis == 0 ? other : w;
    if (s.rows() != rows || s.cols() != cols)
      throw std::invalid_argument("assemble: shards[" + std::to_string(r) + "] is " + std::to_string(s.rows()) + "x" +
                                  std::to_string(s.cols()) + ", but rank " + std::to_string(r) + "'s shard under this layout (axis " +
                                  std::to_string(layout.axis) + ", dim " + std::to_string(layout.dim) + ") is " + std::to_string(rows) +
                                  "x" + std::to_string(cols) + " (its " + (layout.axis == 0 ? "cols" : "rows") + " those of shards[0])");
  }
  MatD m = layout.axis == 0 ? MatD(layout.dim, other) : MatD(other, layout.dim);
  for (int r = 0; r < layout.tp(); ++r) {
    const MatD& s = shards[static_cast<std::size_t>(r)];
    std::int64_t at = 0;
    for (const auto& range : layout.ranks[static_cast<std::size_t>(r)]) {
      if (layout.axis == 0)
        m.middleRows(range.begin, range.size()) = s.middleRows(at, range.size());
      else
        m.middleCols(range.begin, range.size()) = s.middleCols(at, range.size());
      at += range.size();
    }
  }
  return m;
}

}  // namespace nsv
