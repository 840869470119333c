#pragma once
// How a mesh's ledger is made of its groups' ledgers, shared by the plans (mesh_strategies.cpp)
// and the execution (mesh_execution.cpp), so that the two count the same way.
#include <algorithm>
#include <array>
#include <vector>

#include "nsv/communicator.hpp"
#include "nsv/mesh.hpp"

namespace nsv::detail {

using Calls = std::array<int, kAllCollectives.size()>;

inline Calls max_calls(const Calls& a, const Calls& b) {
  Calls out{};
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = std::max(a[i], b[i]);
  return out;
}

// A group's rows into the mesh ledger: group rank i is mesh rank members[i].
inline void add_rows(Ledger& mesh, const Ledger& group, const std::vector<int>& members) {
  for (std::size_t i = 0; i < members.size(); ++i) {
    RankTraffic& to = mesh.ranks[static_cast<std::size_t>(members[i])];
    const RankTraffic& from = group.ranks[i];
    to.bytes_sent += from.bytes_sent;
    to.bytes_received += from.bytes_received;
    to.messages += from.messages;
  }
}

// The mesh ranks of DP group t (in DP order) and of TP group d (in TP order).
inline std::vector<int> dp_members(const MeshLayout& m, int t) {
  std::vector<int> out;
  for (int d = 0; d < m.dp; ++d) out.push_back(m.mesh_rank(t, d));
  return out;
}

inline std::vector<int> tp_members(const MeshLayout& m, int d) {
  std::vector<int> out;
  for (int t = 0; t < m.tp_size(); ++t) out.push_back(m.mesh_rank(t, d));
  return out;
}

}  // namespace nsv::detail
