#include "nsv/rank_measures.hpp"

#include <cmath>

#include "nsv/invalid_field.hpp"
#include "nsv/metrics.hpp"

namespace nsv {

RankMeasures rank_measures(const MatD& m) {
  const Eigen::VectorXd s = singular_values(m);
  const double total = s.sum();
  if (!(total > 0)) throw InvalidField("matrix", "must have a nonzero singular value to have a rank measure");
  double entropy = 0;
  for (const double v : s)
    if (v > 0) entropy -= (v / total) * std::log(v / total);
  RankMeasures r;
  r.stable_rank = s.squaredNorm() / (s(0) * s(0));
  r.effective_rank = std::exp(entropy);
  r.min_side = s.size();
  return r;
}

}  // namespace nsv
