#pragma once
// An NS configuration as JSON, the one spelling every `nsv` output and the audit use.
#include <nlohmann/json.hpp>

#include "nsv/kernels.hpp"

namespace nsv {

// {kernel, steps, dtype, accumulate, products, coeffs, restart_at (the restart list, an array)}
nlohmann::json config_json(const NsConfig&);

}  // namespace nsv
