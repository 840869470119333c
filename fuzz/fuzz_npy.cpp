// libFuzzer harness: nsv::read_npy on arbitrary bytes. A refusal (std::runtime_error or
// std::invalid_argument naming the file) is the expected answer to most inputs; a crash, a
// sanitizer report, a hang, an uncaught exception of another type, or an accepted array whose
// contents contradict its own header is a bug.
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

#include "nsv/npy.hpp"
#include "scratch_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = nsv::fuzz::write_scratch("input.npy", data, size);
  try {
    const nsv::NpyArray a = nsv::read_npy(path);
    std::size_t count = 1;
    for (long d : a.shape) count *= static_cast<std::size_t>(d);
    if (count != a.values.size() || (a.shape.size() != 2 && a.shape.size() != 3)) std::abort();
    const nsv::Batch b = a.batch();
    if (b.empty()) std::abort();
  } catch (const std::runtime_error&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
