#pragma once
// Spearman's rank correlation, for the training study (report.json "training": how the update
// difference goes with the gradient's effective and stable rank over checkpoints).
#include <vector>

namespace nsv::engine {

// Ranks 1..n of v, ties given their mean rank.
std::vector<double> ranks(const std::vector<double>& v);
// Pearson's correlation; 0 where either side is constant.
double pearson(const std::vector<double>& x, const std::vector<double>& y);
// Spearman's rank correlation: Pearson's on the ranks (ties at their mean rank).
double spearman(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace nsv::engine
