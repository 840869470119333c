// libFuzzer harness: the grads.json description of a gradient folder (engine/src/grads_description.cpp)
// on arbitrary bytes. Accepted dimensions must be in range; refusals are std::invalid_argument.
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "nsv/engine/grads_description.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const nsv::ModelDims defaults{"seed-llama", 256, 8, 8, 32, 512, 1, 128, false};
  try {
    const auto d = nsv::engine::parse_grads_description(text, "grads.json", defaults);
    for (std::int64_t v : {d.dims.hidden, d.dims.heads, d.dims.kv_heads, d.dims.head_dim, d.dims.intermediate, d.dims.vocab})
      if (v < 1 || v > (std::int64_t{1} << 20)) std::abort();
    if (d.dims.heads % d.dims.kv_heads != 0) std::abort();
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
