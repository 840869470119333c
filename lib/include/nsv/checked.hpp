#pragma once
// Counters of the model and the audit that a large but legal config could overflow: products and
// sums that throw std::overflow_error naming what was counted instead of wrapping.
#include <cstdint>
#include <stdexcept>
#include <string>

namespace nsv::detail {

template <class T>
T checked_mul(T a, T b, const std::string& what) {
  T r{};
  if (__builtin_mul_overflow(a, b, &r)) throw std::overflow_error(what + " does not fit in 64 bits");
  return r;
}

template <class T>
T checked_add(T a, T b, const std::string& what) {
  T r{};
  if (__builtin_add_overflow(a, b, &r)) throw std::overflow_error(what + " does not fit in 64 bits");
  return r;
}

}  // namespace nsv::detail
