#pragma once
// Options of the CUDA/cuBLAS backend (lib/cuda/), beyond the plain make_cuda_backend() of
// backend.hpp.
//
// What the CUDA backend computes (SPEC §1.5 with cuBLAS): operands in the compute dtype's
// storage (fp64, fp32, bf16 or fp16 on the device), every GEMM accumulated in fp32 (fp64 for
// fp64; cuBLAS with reduced-precision reductions disallowed) and rounded once to the dtype,
// every elementwise result rounded to the dtype. Accumulate::compute (PyTorch's CPU GEMM) has
// no GPU counterpart and is refused with std::invalid_argument. The Frobenius normalization
// runs on the device with the CPU reference's semantics; the norm's sum of squares is formed
// in double in a fixed order (a tree, where the CPU sums sequentially), so CPU and GPU agree
// within rounding, not bit for bit.
//
// In a build without CUDA every factory here throws std::runtime_error saying so, like
// make_cuda_backend().
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "nsv/backend.hpp"

namespace nsv {

struct CudaOptions {
  // fp32 GEMMs on TF32 tensor cores (operands rounded to 10 explicit mantissa bits, fp32
  // accumulation). Off: IEEE fp32 GEMMs. Affects the fp32 dtype only.
  bool tf32 = false;
  // Same-shape matrices of one Backend::newton_schulz call run together, each product one
  // cublasGemmStridedBatchedEx call. Off: every matrix runs alone, one cublasGemmEx per product.
  // Off is the default because it is what the determinism contract (D) of backend.hpp needs by
  // construction: cuBLAS may pick a different algorithm for a different batch count, so a
  // matrix's bits could depend on its neighbours. tools/gpu/run_gpu_checks.sh measures whether
  // they do (reports/gpu/per_head_batching.csv).
  bool batched = false;
};

std::unique_ptr<Backend> make_cuda_backend(const CudaOptions& options);
// make_cuda_backend(false) is make_cuda_backend().
std::unique_ptr<Backend> make_cuda_backend(bool tf32);

// Backend names: "cuda" followed by any of "-tf32", "-batched" (or "-loop", the default), e.g.
// "cuda", "cuda-tf32", "cuda-batched", "cuda-tf32-batched". Throws std::invalid_argument for
// anything else.
inline CudaOptions parse_cuda_backend_name(std::string_view name) {
  constexpr std::string_view prefix = "cuda";
  if (name.substr(0, prefix.size()) != prefix)
    throw std::invalid_argument("unknown CUDA backend name '" + std::string(name) +
                                "': expected cuda[-tf32][-batched]");
  CudaOptions o;
  std::string_view rest = name.substr(prefix.size());
  while (!rest.empty()) {
    if (rest.front() != '-')
      throw std::invalid_argument("unknown CUDA backend name '" + std::string(name) +
                                  "': expected cuda[-tf32][-batched]");
    rest.remove_prefix(1);
    const std::string_view token = rest.substr(0, rest.find('-'));
    rest.remove_prefix(token.size());
    if (token == "tf32")
      o.tf32 = true;
    else if (token == "batched")
      o.batched = true;
    else if (token == "loop")
      o.batched = false;
    else
      throw std::invalid_argument("unknown CUDA backend option '" + std::string(token) + "' in '" + std::string(name) +
                                  "': expected tf32, batched or loop");
  }
  return o;
}

inline std::string cuda_backend_name(const CudaOptions& o) {
  std::string n = "cuda";
  if (o.tf32) n += "-tf32";
  if (o.batched) n += "-batched";
  return n;
}

#if !defined(NSV_HAVE_CUDA_BACKEND)
// Built without CUDA: make_cuda_backend() throws, saying why.
inline std::unique_ptr<Backend> make_cuda_backend(const CudaOptions&) { return make_cuda_backend(); }
inline std::unique_ptr<Backend> make_cuda_backend(bool) { return make_cuda_backend(); }
#endif

}  // namespace nsv
