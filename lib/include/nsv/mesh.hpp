#pragma once
// A two-dimensional device mesh: tensor parallelism cuts a matrix into shards
// (layout.hpp), and the data-parallel group partitions every TP shard again, as the optimizers
// that shard Muon's state cut it:
//   zero  DeepSpeed ZeRO's flat partition (stage 3's per-parameter partition,
//         partition_parameters.py _partition_param; stages 1/2 for a parameter alone in its
//         group): the shard flattened in torch's row-major order, padded to a multiple of dp and
//         cut into dp contiguous pieces of ceil(N / dp) elements; the padding belongs to nobody,
//         so the last pieces are shorter or empty. A piece can cut a row.
//   fsdp  FSDP2's Shard(0) (torch.chunk of dim 0, padded with empty chunks: _chunk_with_empty):
//         dp pieces of ceil(rows / dp) whole rows; the last pieces are shorter or empty.
// Rank (t, d) of the mesh, TP rank t and DP rank d, is mesh rank d * tp + t: the TP group of one
// DP index is tp consecutive ranks (Megatron's order, and split_into_tp_groups of lib/mpi/).
//
// A rank's piece is kept as a 1 x n row: its elements in the shard's row-major order, which is
// the one form a flat ZeRO piece and an FSDP2 row block share.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nsv/layout.hpp"
#include "nsv/matrix.hpp"

namespace nsv {

// Named "zero" and "fsdp" (field dp_partition) in the configuration schema: name_of,
// parse_named<DpPartition> (config_schema.hpp).
enum class DpPartition { zero, fsdp };

// dp consecutive chunks of ceil(n / dp) units covering [0, n), the last ones shorter or empty
// (torch.chunk's and ZeRO's rule). Throws nsv::InvalidField naming `dp` outside 1..kMaxDp.
inline constexpr int kMaxDp = 65536;
std::vector<Range> ceil_chunks(std::int64_t n, int dp);

struct MeshLayout {
  Layout tp;                 // the TP split of the whole matrix
  int dp = 1;
  DpPartition partition = DpPartition::zero;
  std::int64_t rows = 0, cols = 0;         // the whole matrix
  std::vector<std::vector<Range>> pieces;  // pieces[t][d]: the elements of shard t's row-major order DP rank d holds

  int tp_size() const { return tp.tp(); }
  int size() const { return tp.tp() * dp; }
  int mesh_rank(int t, int d) const { return d * tp.tp() + t; }
  int tp_rank(int mesh_rank) const { return mesh_rank % tp.tp(); }
  int dp_rank(int mesh_rank) const { return mesh_rank / tp.tp(); }
  std::pair<std::int64_t, std::int64_t> shard_shape(int t) const;
  const Range& piece(int mesh_rank) const;
  // Every piece is whole rows of its shard (an empty piece is none): each block is a matrix.
  bool rectangular() const;
  // The rows of shard t that DP rank d holds (requires rectangular()).
  Range piece_rows(int t, int d) const;
  // Mesh rank r's piece as the matrix it is (its rows of the shard x the shard's cols; requires
  // rectangular()), and the shape of the tensor a framework holds for it: ZeRO's flat (n), FSDP2's
  // block.
  std::pair<std::int64_t, std::int64_t> block_shape(int mesh_rank) const;
  std::vector<std::int64_t> piece_shape(int mesh_rank) const;
  // The piece as a matrix: ZeRO's flat piece as a 1 x n row, FSDP2's block (what NS of the piece
  // runs on).
  std::pair<std::int64_t, std::int64_t> piece_matrix_shape(int mesh_rank) const;
};

// Throws nsv::InvalidField naming `dp` (1..kMaxDp) or `shape` (a side < 0, or the layout's split
// axis not the matrix's).
MeshLayout mesh_layout(const Layout& tp, std::int64_t rows, std::int64_t cols, int dp, DpPartition);

// The mesh as one layout of tp * dp ranks in mesh-rank order, when its blocks tile one axis: every
// piece whole rows, and the TP split along the rows (or tp = 1, or dp = 1, where the TP layout
// itself is it), with no replicated range. Otherwise nullopt and `why` says why.
std::optional<Layout> composed_layout(const MeshLayout&, std::string* why = nullptr);

// Every mesh rank's piece of g (1 x n rows), and g from them.
std::vector<MatD> split_mesh(const MatD& g, const MeshLayout&);
MatD assemble_mesh(const std::vector<MatD>& pieces, const MeshLayout&);
// The same one level down: every mesh rank's piece of the TP shards, and the TP shards from the
// pieces (each piece's size checked against its range).
std::vector<MatD> pieces_of_shards(const std::vector<MatD>& shards, const MeshLayout&);
std::vector<MatD> shards_from_pieces(const std::vector<MatD>& pieces, const MeshLayout&);
// One piece of a shard, and a shard (rows x cols) from the concatenation of its pieces.
MatD flat_piece(const MatD& shard, const Range&);
MatD shard_from_flat(const MatD& concatenation, std::int64_t rows, std::int64_t cols);

}  // namespace nsv
