#include "nsv/render/config_json.hpp"

namespace nsv {

nlohmann::json config_json(const NsConfig& cfg) {
  return {{"kernel", kernel_name(cfg.kernel)}, {"steps", cfg.steps}, {"dtype", dtype_name(cfg.dtype)},
          {"accumulate", accumulate_name(cfg.accumulate)}, {"products", products_name(cfg.products)},
          {"coeffs", cfg.coeffs.name}, {"restart_at", cfg.restart_at}};
}

}  // namespace nsv
