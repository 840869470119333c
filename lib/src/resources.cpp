#include "nsv/resources.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fmt/format.h>
#include <limits>
#include <utility>

#include "nsv/invalid_field.hpp"

namespace nsv {
namespace {

constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();

std::uint64_t limit_of(int resource) {
  rlimit r{};
  if (::getrlimit(resource, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return kUnlimited;
  return static_cast<std::uint64_t>(r.rlim_cur);
}

std::uint64_t physical_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return kUnlimited;
  return saturating_product(static_cast<std::uint64_t>(pages), static_cast<std::uint64_t>(page));
}

std::string gib(std::uint64_t bytes) { return fmt::format("{:.3g} GiB", static_cast<double>(bytes) / double(1ull << 30)); }

}  // namespace

std::uint64_t saturating_product(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > kUnlimited / a) return kUnlimited;
  return a * b;
}

std::uint64_t usable_memory_bytes() { return std::min({physical_memory(), limit_of(RLIMIT_AS), limit_of(RLIMIT_DATA)}); }

std::uint64_t ns_working_bytes(std::int64_t rows, std::int64_t cols) {
  const auto r = static_cast<std::uint64_t>(std::max<std::int64_t>(rows, 0));
  const auto c = static_cast<std::uint64_t>(std::max<std::int64_t>(cols, 0));
  const std::uint64_t n = std::min(r, c);
  const std::uint64_t rectangles = saturating_product(3, saturating_product(r, c));
  const std::uint64_t squares = saturating_product(3, saturating_product(n, n));
  const std::uint64_t elements = rectangles > kUnlimited - squares ? kUnlimited : rectangles + squares;
  return saturating_product(elements, sizeof(double));
}

std::string memory_refusal(std::uint64_t bytes, const std::string& what) {
  const std::uint64_t usable = usable_memory_bytes();
  if (bytes <= usable) return "";
  return "asks for " + what + ", which needs about " + (bytes == kUnlimited ? std::string("more than 2^64 bytes") : gib(bytes)) +
         ", more than the " + gib(usable) + " this process may use (physical memory and ulimit): choose a smaller size";
}

void require_memory(std::uint64_t bytes, const std::string& field, const std::string& what) {
  if (std::string refusal = memory_refusal(bytes, what); !refusal.empty()) throw InvalidField(field, std::move(refusal));
}

}  // namespace nsv
