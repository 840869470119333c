// Linked when the library is built without a CUDA toolkit: asking for the CUDA backend then
// fails with a message that says how to get one.
#include <stdexcept>

#include "nsv/backend.hpp"

namespace nsv {

bool cuda_backend_available(std::string* why_not) {
  if (why_not) *why_not = "nsverify was built without CUDA (no CUDA toolkit was found at configure time)";
  return false;
}

std::unique_ptr<Backend> make_cuda_backend() {
  std::string why;
  cuda_backend_available(&why);
  throw std::runtime_error("backend cuda: " + why);
}

}  // namespace nsv
