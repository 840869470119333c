// libFuzzer harness: `nsv sweep --resume` reading an interrupted sweep's rows (OUT.partial) for a
// fixed small plan (the one fuzz/corpus/sweep_resume/sweep.csv was written by: nsv sweep --shapes 8x8 --tp 1,2
// --axis 0,1 --kernel standard,gram --strategy shard,gather --steps 1 --fused none,gate_up). Every kept row must be one
// of the plan's cases; refusals are std::invalid_argument (a damaged file) or std::runtime_error.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "nsv/engine/sweep_plan.hpp"
#include "nsv/engine/sweep_resume.hpp"
#include "scratch_file.hpp"

namespace {

const nsv::engine::SweepPlan& plan() {
  static const nsv::engine::SweepPlan p = [] {
    nsv::engine::SweepSpec spec;
    spec.shapes = {"8x8"};
    spec.tps = {1, 2};
    spec.axes = {0, 1};
    spec.kernels = {"standard", "gram"};
    spec.strategies = {"shard", "gather"};
    spec.steps = {1};
    spec.fused = {"none", "gate_up"};
    return nsv::engine::plan_sweep(spec);
  }();
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string partial = nsv::fuzz::write_scratch("sweep.csv.partial", data, size);
  const std::string out = partial.substr(0, partial.size() - std::string(".partial").size());
  std::filesystem::remove(out);
  try {
    const nsv::engine::SweepFile f = nsv::engine::open_sweep_file(out, /*resume=*/true, plan());
    std::size_t kept = 0;
    for (const auto& row : f.rows) kept += row.has_value();
    if (kept != f.resumed || f.rows.size() != plan().cases.size()) std::abort();
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {
  }
  return 0;
}
