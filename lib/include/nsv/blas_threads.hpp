#pragma once
// The library's BLAS and LAPACK calls on one OpenBLAS thread; the user's code on the process's own.
//
// The reference's bits are those of single-threaded GEMMs (cpu_backend.cpp), and a bound or premise
// taken from a spectrum (lapack_spectra.cpp) is the same on every machine only if its LAPACK call is:
// OpenBLAS's bits change with its thread count. That count is process-wide, and a user's numpy or
// torch kernel checked in the same process runs on the same OpenBLAS. Pinning it to one thread for
// good would slow the user's kernel inside the check and the user's program after it. So each of
// the library's calls holds one thread for its duration,
// and the process's count is left as it is everywhere else.
namespace nsv {

// While alive, OpenBLAS on one thread. Nested and concurrent scopes (runs side by side on OpenMP
// threads, the reference called from the user's code) share one pin: the first to open sets one
// thread, the last to close restores the count the first found. Nothing else in the process may
// change the count meanwhile (a check calls the user's code between its own calls, never beside them).
class OneBlasThread {
 public:
  OneBlasThread();
  ~OneBlasThread();
  OneBlasThread(const OneBlasThread&) = delete;
  OneBlasThread& operator=(const OneBlasThread&) = delete;
};

}  // namespace nsv
