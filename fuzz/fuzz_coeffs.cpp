// libFuzzer harness: nsv::load_schedule (a user's coefficient file) on arbitrary bytes. Accepted
// schedules must hold finite triples only; refusals are std::invalid_argument.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

#include "nsv/coeffs.hpp"
#include "scratch_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = nsv::fuzz::write_scratch("coeffs.txt", data, size);
  try {
    const nsv::CoeffSchedule s = nsv::load_schedule(path);
    if (s.triples.empty()) std::abort();
    for (const auto& t : s.triples)
      if (!std::isfinite(t.a) || !std::isfinite(t.b) || !std::isfinite(t.c)) std::abort();
    (void)s.at_step(1000);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
