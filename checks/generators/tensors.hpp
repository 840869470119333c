#pragma once
// Named tensors for the safetensors properties: names with multi-byte UTF-8, every dtype the
// reader takes, shapes of 0 to 3 dimensions (empty ones included), values exactly representable
// in their dtype (so a round trip must keep their bits), infinities and subnormals included.
#include <rapidcheck.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "generators/floats.hpp"
#include "nsv/dtype.hpp"
#include "nsv/safetensors.hpp"

namespace nsv::checks {

// A name of 1..12 pieces: ASCII, the separators HF names use, and 2-, 3- and 4-byte UTF-8.
inline rc::Gen<std::string> tensor_names() {
  static const std::vector<std::string> pieces = {"a", "z", "q_proj", ".", "_", "-", "0", "7", "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98\x80", " "};
  return rc::gen::map(rc::gen::container<std::vector<std::string>>(rc::gen::elementOf(pieces)), [](const std::vector<std::string>& parts) {
    std::string s = "t";
    for (std::size_t i = 0; i < parts.size() && i < 12; ++i) s += parts[i];
    return s;
  });
}

inline rc::Gen<DType> tensor_dtypes() { return rc::gen::element(DType::fp64, DType::fp32, DType::bf16, DType::fp16); }

// A value of dtype d, exactly: drawn as a double (fp64) or a float rounded to d.
inline rc::Gen<double> values_of(DType d) {
  if (d == DType::fp64) return floats<double>({.allow_inf = true, .allow_subnormal = true, .max_magnitude = 1e300});
  return rc::gen::map(floats<float>({.allow_inf = true, .allow_subnormal = true, .max_magnitude = 1e30f}),
                      [d](float f) { return double(round_to(d, f)); });
}

inline rc::Gen<Tensor> tensors() {
  return rc::gen::mapcat(rc::gen::pair(tensor_names(), tensor_dtypes()), [](const std::pair<std::string, DType>& nd) {
    const auto shapes = rc::gen::mapcat(rc::gen::inRange<std::size_t>(0, 4), [](std::size_t rank) {
      return rc::gen::container<std::vector<std::int64_t>>(rank, rc::gen::inRange<std::int64_t>(0, 6));
    });
    return rc::gen::mapcat(shapes, [nd](const std::vector<std::int64_t>& shape) {
                             std::int64_t n = 1;
                             for (auto d : shape) n *= d;
                             return rc::gen::map(rc::gen::container<std::vector<double>>(static_cast<std::size_t>(n), values_of(nd.second)),
                                                 [nd, shape](std::vector<double> v) { return Tensor{nd.first, nd.second, shape, std::move(v)}; });
                           });
  });
}

// 1..6 tensors with distinct names (a suffix makes them distinct).
inline rc::Gen<std::vector<Tensor>> tensor_sets() {
  const auto sets = rc::gen::mapcat(rc::gen::inRange<std::size_t>(1, 7),
                                    [](std::size_t n) { return rc::gen::container<std::vector<Tensor>>(n, tensors()); });
  return rc::gen::map(sets, [](std::vector<Tensor> ts) {
    for (std::size_t i = 0; i < ts.size(); ++i) ts[i].name += "#" + std::to_string(i);
    return ts;
  });
}

inline rc::Gen<std::map<std::string, std::string>> metadata_maps() {
  return rc::gen::mapcat(rc::gen::inRange<std::size_t>(0, 3), [](std::size_t n) {
    return rc::gen::container<std::map<std::string, std::string>>(n, tensor_names(), tensor_names());
  });
}

}  // namespace nsv::checks
