// libFuzzer harness: nsv::load_model_config (a Hugging Face config.json) on arbitrary bytes,
// then the audit of what it implies, at a tp and dp taken from the input (the audit's limits:
// layers x experts, the mesh's matrices per step, FLOP counts that must fit 64 bits). Refusals are
// std::invalid_argument (InvalidField among them) or std::runtime_error (std::overflow_error among
// them) naming what is wrong; anything else is a bug.
#include <cstdint>
#include <stdexcept>

#include "nsv/analysis/audit.hpp"
#include "nsv/analysis/model_config.hpp"
#include "scratch_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = nsv::fuzz::write_scratch("config.json", data, size);
  try {
    const nsv::ModelConfig model = nsv::load_model_config(path);
    nsv::AuditOptions o;
    o.tp = size > 0 ? 1 + data[0] % 16 : 8;
    o.dp = size > 1 ? 1 + data[1] % 4 : 1;
    (void)nsv::run_audit(model, o);
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {
  }
  return 0;
}
