#include "kernel_under_test.hpp"

#include <stdexcept>

namespace nsv::checks {
namespace {

[[noreturn]] void lacks(const KernelUnderTest& impl, unsigned ability) {
  throw std::logic_error("a property asked " + impl.name() + " for what it " + ability_words(ability));
}

}  // namespace

std::string ability_words(unsigned needs) {
  std::string out;
  auto add = [&out](const char* words) { out += (out.empty() ? "" : "; ") + std::string(words); };
  if (needs & kBatches) add("takes no batches");
  if (needs & kMixedBatches) add("takes no batches of mixed shapes");
  if (needs & kAnyConfig) add("runs only its own configuration");
  if (needs & kThreadCount) add("has no thread count to set");
  if (needs & kCallerBuffer) add("takes its input by value (it never sees the caller's buffer)");
  return out;
}

Batch KernelUnderTest::run_batch(const Batch&, const NsConfig&) const { lacks(*this, kBatches); }
MatD KernelUnderTest::run_at_offset(const MatD&, int, const NsConfig&) const { lacks(*this, kCallerBuffer); }
void KernelUnderTest::set_threads(int) const { lacks(*this, kThreadCount); }
ObservedCall KernelUnderTest::run_observed(const MatD&, const NsConfig&) const { lacks(*this, kCallerBuffer); }

}  // namespace nsv::checks
