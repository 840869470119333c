// nsv_gpu_bench: Newton-Schulz throughput of the CUDA backend against cuBLAS's own GEMM rate,
// measured in the same run, per dtype.
//
//   nsv_gpu_bench [--out DIR] [--quick]
//
// For each GPU compute mode (fp64, fp32 IEEE, fp32 TF32, bf16, fp16):
//   gemm   an 8192^3 GEMM (the "peak" the NS rate is compared with) and the NS-shaped
//          4096 x 14336 x 4096 GEMM (p x p times p x q, the largest product of NS on 4096x14336),
//          both as the backend calls cuBLAS; median of 10 timed calls after 2 warm-ups.
//   ns     NS (5 steps, keller) of Gaussian 4096x4096 and 4096x14336 matrices, standard and gram
//          kernels, input already on the device, normalization included: median of 5 timed runs
//          after 1 warm-up. GFLOP/s counts the plain algorithm's FLOPs (ns_flops), so a gram
//          kernel's rate is "equivalent" work per second and comparable with standard's.
//   e2e    Backend::newton_schulz of the 4096x14336 matrix (gram), host conversions and PCIe
//          copies included, one call after one warm-up.
// Writes DIR/bench.csv and DIR/bench.md (default DIR: reports/gpu) and prints the table.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cuda_internal.hpp"
#include "device.hpp"
#include "nsv/backend.hpp"
#include "nsv/cuda_backend.hpp"
#include "nsv/kernels.hpp"
#include "nsv/metrics.hpp"

using namespace nsv;

namespace {

struct Mode {
  const char* name;
  DType dtype;
  bool tf32;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}
double minimum(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end()); }

MatD gaussian(Eigen::Index rows, Eigen::Index cols, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n(0.0, 1.0);
  MatD m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = n(rng);
  return m;
}

struct Row {
  std::string kind, mode, kernel, shape;
  double median_ms = 0, min_ms = 0, gflops = 0, fraction_of_peak = 0;
  std::string note;
};

}  // namespace

int main(int argc, char** argv) {
  std::string out_dir = "reports/gpu";
  bool quick = false, small = false;  // --small: tiny sizes, to smoke-test the program itself
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--out") && i + 1 < argc)
      out_dir = argv[++i];
    else if (!std::strcmp(argv[i], "--quick"))
      quick = true;
    else if (!std::strcmp(argv[i], "--small"))
      small = true;
    else {
      std::fprintf(stderr, "usage: nsv_gpu_bench [--out DIR] [--quick] [--small]\n");
      return 2;
    }
  }
  std::string why;
  if (!cuda_backend_available(&why)) {
    std::fprintf(stderr, "nsv_gpu_bench: %s\n", why.c_str());
    return 3;
  }
  const auto& dev = cuda::probe_device();
  std::printf("device: %s (cc %d.%d, %d SMs), driver %d, runtime %d, cuBLAS %d\n", dev.name.c_str(), dev.cc_major,
              dev.cc_minor, dev.sm_count, dev.driver_version, dev.runtime_version, dev.cublas_version);

  const std::vector<Mode> modes = {{"fp64", DType::fp64, false},
                                   {"fp32", DType::fp32, false},
                                   {"fp32-tf32", DType::fp32, true},
                                   {"bf16", DType::bf16, false},
                                   {"fp16", DType::fp16, false}};
  const std::int64_t peak_n = small ? 256 : quick ? 4096 : 8192;
  std::vector<std::pair<Eigen::Index, Eigen::Index>> shapes = {{4096, 4096}, {4096, 14336}};
  if (small) shapes = {{128, 128}, {128, 448}};
  const std::int64_t ns_gemm_m = shapes.back().first, ns_gemm_n = shapes.back().second;
  const int gemm_warmup = 2, gemm_repeats = quick ? 3 : 10, ns_warmup = 1, ns_repeats = quick ? 2 : 5;

  std::printf("generating inputs...\n");
  std::vector<MatD> inputs;
  for (std::size_t s = 0; s < shapes.size(); ++s)
    inputs.push_back(gaussian(shapes[s].first, shapes[s].second, 1000 + s));

  std::vector<Row> rows;
  auto print_row = [](const Row& r) {
    std::printf("%-6s %-10s %-9s %-16s median %9.3f ms  min %9.3f ms  %9.1f GFLOP/s  %5.1f%% of peak %s\n",
                r.kind.c_str(), r.mode.c_str(), r.kernel.c_str(), r.shape.c_str(), r.median_ms, r.min_ms, r.gflops,
                100.0 * r.fraction_of_peak, r.note.c_str());
    std::fflush(stdout);
  };

  for (const Mode& mode : modes) {
    const CudaOptions options{mode.tf32, false};
    // cuBLAS GEMM peak for this mode, in the same run.
    const auto peak_ms =
        cuda_detail::time_gemm_ms(options, mode.dtype, peak_n, peak_n, peak_n, gemm_warmup, gemm_repeats);
    const double peak_flops = 2.0 * static_cast<double>(peak_n) * peak_n * peak_n;
    const double peak_gflops = peak_flops / (median(peak_ms) * 1e-3) / 1e9;
    rows.push_back({"gemm", mode.name, "-", std::to_string(peak_n) + "^3", median(peak_ms), minimum(peak_ms),
                    peak_gflops, 1.0, "peak reference"});
    print_row(rows.back());
    {
      const std::int64_t m = ns_gemm_m, n = ns_gemm_n, k = ns_gemm_m;
      const auto ms = cuda_detail::time_gemm_ms(options, mode.dtype, m, n, k, gemm_warmup, gemm_repeats);
      const double g = 2.0 * m * n * k / (median(ms) * 1e-3) / 1e9;
      rows.push_back({"gemm", mode.name, "-",
                      std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k), median(ms), minimum(ms),
                      g, g / peak_gflops, "NS-shaped product"});
      print_row(rows.back());
    }
    for (std::size_t s = 0; s < shapes.size(); ++s) {
      for (Kernel kernel : {Kernel::standard, Kernel::gram}) {
        NsConfig cfg;
        cfg.kernel = kernel;
        cfg.dtype = mode.dtype;
        const auto timing = cuda_detail::time_device_ns(options, inputs[s], cfg, ns_warmup, ns_repeats);
        const double flops = static_cast<double>(ns_flops(cfg, shapes[s].first, shapes[s].second));
        const double g = flops / (median(timing.ms) * 1e-3) / 1e9;
        std::ostringstream note;
        note.precision(4);
        note << "Frobenius norm " << timing.result.norm() << (all_finite(timing.result) ? "" : " NON-FINITE");
        rows.push_back({"ns", mode.name, std::string(kernel_name(kernel)),
                        std::to_string(shapes[s].first) + "x" + std::to_string(shapes[s].second), median(timing.ms),
                        minimum(timing.ms), g, g / peak_gflops, note.str()});
        print_row(rows.back());
      }
    }
    {  // end to end through the Backend interface, host work and transfers included
      const auto backend = make_cuda_backend(options);
      NsConfig cfg;
      cfg.kernel = Kernel::gram;
      cfg.dtype = mode.dtype;
      const MatD& g = inputs.back();
      (void)newton_schulz(*backend, g, cfg);
      const auto t0 = std::chrono::steady_clock::now();
      const MatD x = newton_schulz(*backend, g, cfg);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const double flops = static_cast<double>(ns_flops(cfg, g.rows(), g.cols()));
      const double gf = flops / (ms * 1e-3) / 1e9;
      rows.push_back({"e2e", mode.name, "gram", std::to_string(g.rows()) + "x" + std::to_string(g.cols()), ms, ms, gf,
                      gf / peak_gflops, all_finite(x) ? "host conversions + PCIe included" : "NON-FINITE"});
      print_row(rows.back());
    }
  }

  std::ofstream csv(out_dir + "/bench.csv");
  csv << "kind,mode,kernel,shape,median_ms,min_ms,gflops,fraction_of_gemm_peak,note\n";
  for (const auto& r : rows)
    csv << r.kind << "," << r.mode << "," << r.kernel << "," << r.shape << "," << r.median_ms << "," << r.min_ms << ","
        << r.gflops << "," << r.fraction_of_peak << ",\"" << r.note << "\"\n";
  std::ofstream md(out_dir + "/bench.md");
  md << "# CUDA backend benchmark\n\nDevice: " << dev.name << " (compute capability " << dev.cc_major << "."
     << dev.cc_minor << ", " << dev.sm_count << " SMs), driver " << dev.driver_version << ", CUDA runtime "
     << dev.runtime_version << ", cuBLAS " << dev.cublas_version << ".\n\n"
     << "NS: 5 steps, keller coefficients, Gaussian input already on the device, normalization included; GFLOP/s "
        "counts the plain algorithm's FLOPs (nsv::ns_flops). Peak: a "
     << peak_n << "^3 cuBLAS GEMM in the same mode, same run.\n\n"
     << "| kind | mode | kernel | shape | median ms | min ms | GFLOP/s | of GEMM peak | note |\n"
     << "|---|---|---|---|---:|---:|---:|---:|---|\n";
  md.setf(std::ios::fixed);
  for (const auto& r : rows) {
    md.precision(3);
    md << "| " << r.kind << " | " << r.mode << " | " << r.kernel << " | " << r.shape << " | " << r.median_ms << " | "
       << r.min_ms << " | ";
    md.precision(0);
    md << r.gflops << " | ";
    md.precision(1);
    md << 100.0 * r.fraction_of_peak << "% | " << r.note << " |\n";
  }
  std::printf("wrote %s/bench.csv and %s/bench.md\n", out_dir.c_str(), out_dir.c_str());
  return 0;
}
