#include "nsv/mpi_same_plan.hpp"

#include <cstdint>
#include <fmt/format.h>
#include <stdexcept>
#include <vector>

namespace nsv {
namespace {

// Every rank's text, in rank order, on every rank.
std::vector<std::string> all_gather(MPI_Comm comm, const std::string& mine) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  const int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm);
  std::size_t total = 0;
  for (int r = 0; r < size; ++r) {
    offsets[static_cast<std::size_t>(r)] = static_cast<int>(total);
    total += static_cast<std::size_t>(lengths[static_cast<std::size_t>(r)]);
  }
  std::string all(total, '\0');
  MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, comm);
  std::vector<std::string> out;
  for (int r = 0; r < size; ++r)
    out.push_back(all.substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]),
                             static_cast<std::size_t>(lengths[static_cast<std::size_t>(r)])));
  return out;
}

std::string differences(const nlohmann::json& there, const nlohmann::json& root) {
  std::string out;
  for (const auto& [key, value] : there.items()) {
    const auto at_root = root.find(key);
    if (at_root != root.end() && *at_root == value) continue;
    out += fmt::format("{}{} is {} there and {} on rank 0", out.empty() ? "" : "; ", key, value.dump(),
                       at_root == root.end() ? "absent" : at_root->dump());
  }
  for (const auto& [key, value] : root.items())
    if (!there.contains(key)) out += fmt::format("{}{} is absent there and {} on rank 0", out.empty() ? "" : "; ", key, value.dump());
  return out;
}

}  // namespace

void require_same_plan_on_every_rank(MPI_Comm comm, const nlohmann::json& plan) {
  const std::vector<std::string> plans = all_gather(comm, plan.dump());
  for (std::size_t r = 1; r < plans.size(); ++r)
    if (plans[r] != plans[0])
      throw std::invalid_argument(fmt::format("rank {} of {} was started with another plan than rank 0: {}; start every rank with the "
                                              "same arguments and inputs",
                                              r, plans.size(), differences(nlohmann::json::parse(plans[r]), nlohmann::json::parse(plans[0]))));
}

std::string bytes_digest(const void* data, std::size_t size) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a offset basis
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 1099511628211ull;  // FNV prime
  return fmt::format("{:016x}", h);
}

}  // namespace nsv
