#pragma once
// How many directions a matrix spreads its energy over: the spectral summaries the report gives
// of gradients. NS pushes every singular value it can reach towards 1, so what a gradient's
// spectrum says about its update is how many singular values carry weight and how unevenly.
#include "nsv/matrix.hpp"

namespace nsv {

struct RankMeasures {
  // ||M||_F^2 / ||M||_2^2 = sum_i s_i^2 / s_1^2: the number of directions at the top singular
  // value's weight that would hold M's energy. 1 for rank one, k for k equal singular values.
  double stable_rank = 0;
  // exp(H(p)) with p_i = s_i / sum_j s_j and H the Shannon entropy in nats (Roy & Vetterli,
  // "The effective rank", EUSIPCO 2007): 1 for rank one, k for k equal singular values; it
  // counts small singular values more than the stable rank does.
  double effective_rank = 0;
  Eigen::Index min_side = 0;  // the largest either can be
};

// From M's float64 singular values (via the Gram matrix, rank_measures.cpp). Throws InvalidField("matrix", ...) for a zero matrix.
RankMeasures rank_measures(const MatD& m);

}  // namespace nsv
