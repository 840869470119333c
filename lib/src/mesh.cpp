#include "nsv/mesh.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "nsv/config_schema.hpp"
#include "nsv/invalid_field.hpp"

namespace nsv {
namespace {

constexpr NamedValue<DpPartition> kDpPartitionNames[] = {
    {DpPartition::zero, "zero", "ZeRO's flat pieces of the row-major shard, which can cut rows"},
    {DpPartition::fsdp, "fsdp", "FSDP2's dim-0 row pieces"},
};
constexpr NameTable<DpPartition> kDpPartitionTable{"dp_partition", kDpPartitionNames};

std::string shape_text(std::int64_t rows, std::int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

// Rows [begin, end) of the concatenation of `ranges` (a shard's rows in the whole matrix), as
// ranges of the whole matrix.
std::vector<Range> rows_of_concatenation(const std::vector<Range>& ranges, Range rows) {
  std::vector<Range> out;
  std::int64_t at = 0;
  for (const Range& r : ranges) {
    const std::int64_t lo = std::max(rows.begin, at), hi = std::min(rows.end, at + r.size());
    if (lo < hi) out.push_back({r.begin + (lo - at), r.begin + (hi - at)});
    at += r.size();
  }
  return out;
}

}  // namespace

const NameTable<DpPartition>& name_table(std::type_identity<DpPartition>) { return kDpPartitionTable; }

std::vector<Range> ceil_chunks(std::int64_t n, int dp) {
  if (dp < 1 || dp > kMaxDp)
    throw InvalidField("dp", "must be between 1 and " + std::to_string(kMaxDp) + ", got " + std::to_string(dp));
  if (n < 0) throw InvalidField("shape", "must have sides >= 0, got a length of " + std::to_string(n));
  const std::int64_t chunk = (n + dp - 1) / dp;
  std::vector<Range> out;
  for (int d = 0; d < dp; ++d) {
    const std::int64_t begin = std::min(n, chunk * d);
    out.push_back({begin, std::min(n, begin + chunk)});
  }
  return out;
}

std::pair<std::int64_t, std::int64_t> MeshLayout::shard_shape(int t) const {
  const std::int64_t w = tp.width(t);
  return tp.axis == 0 ? std::pair{w, cols} : std::pair{rows, w};
}

const Range& MeshLayout::piece(int m) const {
  return pieces.at(static_cast<std::size_t>(tp_rank(m))).at(static_cast<std::size_t>(dp_rank(m)));
}

bool MeshLayout::rectangular() const {
  for (int t = 0; t < tp_size(); ++t) {
    const std::int64_t c = shard_shape(t).second;
    for (const Range& p : pieces[static_cast<std::size_t>(t)])
      if (p.size() > 0 && (p.begin % c != 0 || p.end % c != 0)) return false;
  }
  return true;
}

Range MeshLayout::piece_rows(int t, int d) const {
  const auto [r, c] = shard_shape(t);
  // FSDP2 deals rows; so is a shard without columns dealt, whose flat pieces are all empty and so
  // name no rows (with dp = 1 its one block is the whole shard, rows x 0).
  if (partition == DpPartition::fsdp || c == 0) return ceil_chunks(r, dp).at(static_cast<std::size_t>(d));
  const Range& p = pieces.at(static_cast<std::size_t>(t)).at(static_cast<std::size_t>(d));
  if (p.size() == 0) return {0, 0};
  if (p.begin % c != 0 || p.end % c != 0) throw std::logic_error("piece_rows: the piece cuts a row");
  return {p.begin / c, p.end / c};
}

std::pair<std::int64_t, std::int64_t> MeshLayout::block_shape(int m) const {
  return {piece_rows(tp_rank(m), dp_rank(m)).size(), shard_shape(tp_rank(m)).second};
}

std::vector<std::int64_t> MeshLayout::piece_shape(int m) const {
  if (partition == DpPartition::zero) return {piece(m).size()};
  const auto [rows, cols] = block_shape(m);
  return {rows, cols};
}

std::pair<std::int64_t, std::int64_t> MeshLayout::piece_matrix_shape(int m) const {
  if (partition == DpPartition::zero) return {1, piece(m).size()};
  return block_shape(m);
}

MeshLayout mesh_layout(const Layout& tp, std::int64_t rows, std::int64_t cols, int dp, DpPartition partition) {
  if (rows < 0 || cols < 0) throw InvalidField("shape", "must have sides >= 0, got " + shape_text(rows, cols));
  if ((tp.axis == 0 ? rows : cols) != tp.dim)
    throw InvalidField("shape", shape_text(rows, cols) + " does not match the TP layout, which splits a length of " +
                                    std::to_string(tp.dim) + " along axis " + std::to_string(tp.axis));
  MeshLayout m{tp, dp, partition, rows, cols, {}};
  for (int t = 0; t < tp.tp(); ++t) {
    const auto [r, c] = m.shard_shape(t);
    std::vector<Range> pieces = ceil_chunks(partition == DpPartition::zero ? r * c : r, dp);
    if (partition == DpPartition::fsdp)
      for (Range& p : pieces) p = {p.begin * c, p.end * c};
    m.pieces.push_back(std::move(pieces));
  }
  return m;
}

std::optional<Layout> composed_layout(const MeshLayout& m, std::string* why) {
  const auto refuse = [why](std::string reason) -> std::optional<Layout> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (m.tp.has_replicas()) return refuse("the TP layout replicates a range on every rank, which a DP partition cannot tile");
  if (!m.rectangular())
    return refuse("a ZeRO piece cuts a row of its shard, so the blocks are not matrices; gather over DP first (dp_gather, dp_owner)");
  if (m.dp == 1) return m.tp;
  Layout out;
  out.axis = 0;
  out.dim = m.rows;
  out.ranks.resize(static_cast<std::size_t>(m.size()));
  if (m.tp_size() > 1 && m.tp.axis != 0)
    return refuse("TP splits the columns and the DP partition the rows: the blocks form a grid that no single axis tiles; "
                  "gather over DP first (dp_gather, dp_owner)");
  for (int t = 0; t < m.tp_size(); ++t) {
    const std::vector<Range> shard_rows = m.tp_size() == 1 ? std::vector<Range>{{0, m.rows}} : m.tp.ranks[static_cast<std::size_t>(t)];
    for (int d = 0; d < m.dp; ++d)
      out.ranks[static_cast<std::size_t>(m.mesh_rank(t, d))] = rows_of_concatenation(shard_rows, m.piece_rows(t, d));
  }
  return out;
}

MatD flat_piece(const MatD& shard, const Range& piece) {
  if (piece.begin < 0 || piece.end > shard.size() || piece.size() < 0)
    throw std::invalid_argument("flat_piece: elements " + std::to_string(piece.begin) + ".." + std::to_string(piece.end) +
                                " of a shard of " + std::to_string(shard.size()));
  return Eigen::Map<const MatD>(shard.data() + piece.begin, 1, piece.size());
}

MatD shard_from_flat(const MatD& concatenation, std::int64_t rows, std::int64_t cols) {
  if (concatenation.size() != rows * cols)
    throw std::invalid_argument("shard_from_flat: " + std::to_string(concatenation.size()) + " elements for a " +
                                shape_text(rows, cols) + " shard");
  return Eigen::Map<const MatD>(concatenation.data(), rows, cols);
}

std::vector<MatD> pieces_of_shards(const std::vector<MatD>& shards, const MeshLayout& m) {
  if (static_cast<int>(shards.size()) != m.tp_size())
    throw std::invalid_argument("pieces_of_shards: " + std::to_string(shards.size()) + " shards for " + std::to_string(m.tp_size()) +
                                " TP ranks");
  std::vector<MatD> pieces;
  for (int r = 0; r < m.size(); ++r) pieces.push_back(flat_piece(shards[static_cast<std::size_t>(m.tp_rank(r))], m.piece(r)));
  return pieces;
}

std::vector<MatD> shards_from_pieces(const std::vector<MatD>& pieces, const MeshLayout& m) {
  if (static_cast<int>(pieces.size()) != m.size())
    throw std::invalid_argument("shards_from_pieces: " + std::to_string(pieces.size()) + " pieces for a mesh of " +
                                std::to_string(m.size()) + " ranks");
  std::vector<MatD> shards;
  for (int t = 0; t < m.tp_size(); ++t) {
    const auto [r, c] = m.shard_shape(t);
    MatD flat(1, r * c);
    for (int d = 0; d < m.dp; ++d) {
      const MatD& p = pieces[static_cast<std::size_t>(m.mesh_rank(t, d))];
      const Range& where = m.pieces[static_cast<std::size_t>(t)][static_cast<std::size_t>(d)];
      if (p.size() != where.size())
        throw std::invalid_argument("shards_from_pieces: mesh rank " + std::to_string(m.mesh_rank(t, d)) + " holds " +
                                    std::to_string(p.size()) + " elements, its piece is " + std::to_string(where.size()));
      flat.middleCols(where.begin, where.size()) = Eigen::Map<const MatD>(p.data(), 1, p.size());
    }
    shards.push_back(shard_from_flat(flat, r, c));
  }
  return shards;
}

std::vector<MatD> split_mesh(const MatD& g, const MeshLayout& m) {
  if (g.rows() != m.rows || g.cols() != m.cols)
    throw std::invalid_argument("split_mesh: a " + shape_text(g.rows(), g.cols()) + " matrix on a mesh layout of " +
                                shape_text(m.rows, m.cols));
  return pieces_of_shards(split(g, m.tp), m);
}

MatD assemble_mesh(const std::vector<MatD>& pieces, const MeshLayout& m) { return assemble(shards_from_pieces(pieces, m), m.tp); }

}  // namespace nsv
