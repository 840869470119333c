// nsv_bench: raw GEMM rates (OpenBLAS, Eigen) and the CPU backend's Newton-Schulz on the shapes
// NS uses (SPEC issue 8). Single-threaded unless OMP_NUM_THREADS says otherwise (the batch
// benchmarks parallelise over matrices; OpenBLAS is always pinned to one thread per call, as the
// CPU backend does).
//
//   nsv_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//             --benchmark_out=bench.json --benchmark_out_format=json
//
// Names:
//   gemm/<lib>/<type>/<kind>/<p>x<q>   kind: pq_qp = [p,q]x[q,p] (the Gram shape, 2p^2q FLOPs),
//                                            pp_pp = [p,p]x[p,p] (2p^3), pp_pq = [p,p]x[p,q] (2p^2q),
//                                            syrk  = ssyrk/dsyrk of [p,q] (counted 2p^2q, as the
//                                                    plain algorithm does: it does half of that)
//   ns/<kernel>/<dtype>/<rows>x<cols>/batch:<k>
// Counters: GFLOPs (per call), GFLOP/s (real time), and for ns/* "x_sgemm": the rate as a fraction
// of the same run's single-thread SGEMM pq_qp rate on the same (p, q).
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "nsv/backend.hpp"
#include "nsv/kernels.hpp"

extern "C" void openblas_set_num_threads(int);
extern "C" char* openblas_get_config(void);
extern "C" char* openblas_get_corename(void);

namespace {

enum Lib { openblas = 0, eigen = 1 };
enum Kind { pq_qp = 0, pp_pp = 1, pp_pq = 2, syrk = 3 };
const char* kind_name[] = {"pq_qp", "pp_pp", "pp_pq", "syrk"};

struct Shape {
  int rows, cols;
};
const std::vector<Shape> kShapes = {{256, 256}, {512, 1024}, {1024, 1024}, {1024, 4096}, {4096, 4096}};

// Same-run SGEMM pq_qp rate per (p, q), GFLOP/s of the fastest repetition seen so far.
std::map<std::pair<int, int>, double>& sgemm_rates() {
  static std::map<std::pair<int, int>, double> m;
  return m;
}

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <class T>
RowMat<T> gaussian(int r, int c, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> d(0.0, 1.0);
  RowMat<T> m(r, c);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<T>(d(gen));
  return m;
}

void blas(int m, int n, int k, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
}
void blas(int m, int n, int k, const double* a, const double* b, double* c) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a, k, b, n, 0.0, c, n);
}
void blas_syrk(int n, int k, const float* a, float* c) {
  cblas_ssyrk(CblasRowMajor, CblasUpper, CblasNoTrans, n, k, 1.0f, a, k, 0.0f, c, n);
}
void blas_syrk(int n, int k, const double* a, double* c) {
  cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, n, k, 1.0, a, k, 0.0, c, n);
}

template <class T>
void BM_gemm(benchmark::State& state) {
  const auto lib = static_cast<Lib>(state.range(0));
  const auto kind = static_cast<Kind>(state.range(1));
  const int p = static_cast<int>(state.range(2)), q = static_cast<int>(state.range(3));
  // C[m,n] = A[m,k] B[k,n]
  int m = p, n = p, k = q;
  if (kind == pp_pp) k = p;
  if (kind == pp_pq) { n = q; k = p; }
  const auto a = gaussian<T>(m, k, 1);
  const auto b = gaussian<T>(k, n, 2);
  RowMat<T> c(m, n);
  for (auto _ : state) {
    if (lib == openblas) {
      if (kind == syrk) blas_syrk(m, k, a.data(), c.data());
      else blas(m, n, k, a.data(), b.data(), c.data());
    } else {
      if (kind == syrk) c.noalias() = a * a.transpose();
      else c.noalias() = a * b;
    }
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  const double gflop = 2.0 * m * n * double(k) / 1e9;
  state.counters["GFLOPs"] = gflop;
  state.counters["GFLOP/s"] = benchmark::Counter(gflop, benchmark::Counter::kIsIterationInvariantRate);
}

// Records the SGEMM rate for the NS benchmarks' x_sgemm counter (measured here, same process).
void measure_sgemm_reference(int p, int q) {
  auto& rates = sgemm_rates();
  if (rates.count({p, q})) return;
  const auto a = gaussian<float>(p, q, 1);
  const auto b = gaussian<float>(q, p, 2);
  RowMat<float> c(p, p);
  blas(p, p, q, a.data(), b.data(), c.data());  // warm-up
  double best = 1e300;
  const int reps = double(p) * p * q > 1e10 ? 2 : 5;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    blas(p, p, q, a.data(), b.data(), c.data());
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  rates[{p, q}] = 2.0 * p * p * double(q) / best / 1e9;
}

void BM_ns(benchmark::State& state) {
  nsv::NsConfig cfg;
  cfg.kernel = state.range(0) == 0 ? nsv::Kernel::standard : nsv::Kernel::gram;
  cfg.dtype = static_cast<nsv::DType>(state.range(1));
  cfg.accumulate = nsv::Accumulate::fp32;
  const int rows = static_cast<int>(state.range(2)), cols = static_cast<int>(state.range(3));
  const int batch = static_cast<int>(state.range(4));
  cfg.steps = static_cast<int>(state.range(5));
  cfg.products = state.range(6) == 0 ? nsv::Products::symmetric : nsv::Products::full;
  nsv::Batch inputs;
  for (int i = 0; i < batch; ++i) inputs.push_back(gaussian<double>(rows, cols, 100 + i).cast<float>().cast<double>());
  const auto backend = nsv::make_cpu_backend();
  const int p = std::min(rows, cols), q = std::max(rows, cols);
  measure_sgemm_reference(p, q);
  for (auto _ : state) {
    auto out = backend->newton_schulz(inputs, cfg);
    benchmark::DoNotOptimize(out.data());
  }
  const double gflop = double(nsv::ns_flops(cfg, rows, cols)) * batch / 1e9;
  state.counters["GFLOPs"] = gflop;
  state.counters["GFLOP/s"] = benchmark::Counter(gflop, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["sgemm_GFLOP/s"] = sgemm_rates()[{p, q}];
}

void register_all() {
  // Raw GEMMs.
  for (const auto& s : kShapes) {
    const int p = std::min(s.rows, s.cols), q = std::max(s.rows, s.cols);
    const bool huge = p >= 4096;
    for (int lib : {openblas, eigen}) {
      for (int t : {4, 8}) {  // float, double
        if (huge && t == 8 && lib == eigen) continue;  // minutes, and says nothing new
        for (int kind : {pq_qp, pp_pp, pp_pq, syrk}) {
          if (p == q && (kind == pp_pp || kind == pp_pq)) continue;  // same as pq_qp on a square
          if (lib == eigen && kind == syrk) continue;                // Eigen has no syrk product here
          std::string name = std::string("gemm/") + (lib == openblas ? "openblas" : "eigen") + "/" +
                             (t == 4 ? "f32" : "f64") + "/" + kind_name[kind] + "/" + std::to_string(p) + "x" +
                             std::to_string(q);
          auto* b = benchmark::RegisterBenchmark(name.c_str(), t == 4 ? BM_gemm<float> : BM_gemm<double>)
                        ->Args({lib, kind, p, q})
                        ->UseRealTime()
                        ->Unit(benchmark::kMillisecond);
          if (huge) b->Iterations(1)->Repetitions(lib == eigen ? 1 : 3);
          else b->MinTime(0.3);
        }
      }
    }
  }
  // Newton-Schulz through the CPU backend.
  const char* dnames[] = {"fp64", "fp32", "bf16", "fp16"};
  for (const auto& s : kShapes) {
    const bool huge = std::min(s.rows, s.cols) >= 4096;
    for (int kernel : {0, 1}) {
      for (int d : {0, 1, 2, 3}) {
        if (huge && d != 1) continue;
        std::string name = std::string("ns/") + (kernel == 0 ? "standard" : "gram") + "/" + dnames[d] + "/" +
                           std::to_string(s.rows) + "x" + std::to_string(s.cols) + "/batch:1";
        auto* b = benchmark::RegisterBenchmark(name.c_str(), BM_ns)
                      ->Args({kernel, d, s.rows, s.cols, 1, 5, 0})
                      ->UseRealTime()
                      ->Unit(benchmark::kMillisecond);
        if (huge) b->Iterations(1)->Repetitions(kernel == 0 ? 2 : 1);  // gram on a square runs the standard loop
        else if (std::int64_t(s.rows) * s.cols >= 1024 * 4096) b->Iterations(1);
        else b->MinTime(0.5);
      }
    }
  }
  // fp32 with products=full (both triangles of the n x n products, as PyTorch): what the
  // symmetric products save, side by side.
  for (const auto& s : kShapes) {
    if (std::min(s.rows, s.cols) >= 4096) continue;
    for (int kernel : {0, 1}) {
      std::string name = std::string("ns-full/") + (kernel == 0 ? "standard" : "gram") + "/fp32/" +
                         std::to_string(s.rows) + "x" + std::to_string(s.cols) + "/batch:1";
      auto* b = benchmark::RegisterBenchmark(name.c_str(), BM_ns)
                    ->Args({kernel, 1, s.rows, s.cols, 1, 5, 1})
                    ->UseRealTime()
                    ->Unit(benchmark::kMillisecond);
      if (std::int64_t(s.rows) * s.cols >= 1024 * 4096) b->Iterations(1);
      else b->MinTime(0.5);
    }
  }
  // A batch of small matrices (parallel over matrices when OMP_NUM_THREADS > 1).
  for (int kernel : {0, 1})
    for (int d : {0, 1, 2, 3}) {
      std::string name = std::string("ns/") + (kernel == 0 ? "standard" : "gram") + "/" + dnames[d] +
                         "/256x256/batch:8";
      benchmark::RegisterBenchmark(name.c_str(), BM_ns)
          ->Args({kernel, d, 256, 256, 8, 5, 0})
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond)
          ->MinTime(0.5);
      name = std::string("ns/") + (kernel == 0 ? "standard" : "gram") + "/" + dnames[d] + "/256x1024/batch:8";
      benchmark::RegisterBenchmark(name.c_str(), BM_ns)
          ->Args({kernel, d, 256, 1024, 8, 5, 0})
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond)
          ->MinTime(0.5);
    }
}

}  // namespace

int main(int argc, char** argv) {
  openblas_set_num_threads(1);
  benchmark::AddCustomContext("openblas_config", openblas_get_config());
  benchmark::AddCustomContext("openblas_corename", openblas_get_corename());
  if (const char* ct = std::getenv("OPENBLAS_CORETYPE")) benchmark::AddCustomContext("OPENBLAS_CORETYPE", ct);
  if (const char* omp = std::getenv("OMP_NUM_THREADS")) benchmark::AddCustomContext("OMP_NUM_THREADS", omp);
  benchmark::AddCustomContext("eigen_simd", Eigen::SimdInstructionSetsInUse());
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
