// libFuzzer harness: nsv::load_model_config (a Hugging Face config.json) on arbitrary bytes,
// then the layer's Muon matrices it implies. Refusals are std::invalid_argument or
// std::runtime_error naming the file; anything else is a bug.
#include <cstdint>
#include <stdexcept>

#include "nsv/model_config.hpp"
#include "scratch_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = nsv::fuzz::write_scratch("config.json", data, size);
  try {
    (void)nsv::load_model_config(path);
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {
  }
  return 0;
}
