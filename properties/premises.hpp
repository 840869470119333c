#pragma once
// The premises of the kernel properties, checked, so that a case outside a property's premise is
// classified (and counted in the run's distribution), never failed or silently passed.
//
// Every first-order rounding bound (tolerances.hpp) assumes the iteration stays in its basin of
// attraction under rounding: the first-order regime of oracle.hpp, where the rounding-widened
// band of K5 stays below the last step's repelling fixed point. Outside it (bf16; the Gram loop in
// half precision on rank-deficient or ill-conditioned inputs, whose noise on a tiny singular
// value is sqrt(u), not u) an output may diverge or land anywhere in the basin, and the linearized
// bound says nothing. Divergence itself is a claim: it may only happen outside the regime.
#include <rapidcheck.h>

#include <initializer_list>

#include "nsv/kernels.hpp"
#include "nsv/matrix.hpp"
#include "oracle.hpp"

namespace nsv::props {

// True when an output diverged (non-finite, or a singular value past the repelling fixed point)
// and that was allowed, i.e. g is outside the first-order regime of cfg; fails the property when
// an output diverged inside it.
inline bool diverged_where_allowed(const MatD& g, const NsConfig& cfg, std::initializer_list<const MatD*> outputs) {
  bool any = false;
  for (const MatD* o : outputs) any = any || diverged(*o, cfg);
  if (!any) return false;
  RC_CLASSIFY(true, "diverged (outside the first-order regime: bound not applicable)");
  if (first_order_regime(g, cfg))
    RC_FAIL("an output diverged although the rounding-widened band stays inside the basin of attraction");
  return true;
}

// True (and the case classified) when g is outside the first-order regime of any of the configs:
// a first-order bound does not apply to the case.
inline bool outside_first_order_regime(const MatD& g, std::initializer_list<const NsConfig*> configs) {
  for (const NsConfig* cfg : configs)
    if (!first_order_regime(g, *cfg)) {
      RC_CLASSIFY(true, "outside the first-order regime (finite output): bound not applicable");
      return true;
    }
  return false;
}

}  // namespace nsv::props
