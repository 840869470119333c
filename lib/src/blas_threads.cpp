#include "nsv/blas_threads.hpp"

#include <mutex>

extern "C" {
void openblas_set_num_threads(int);
int openblas_get_num_threads(void);
}

namespace nsv {
namespace {

struct Pin {
  std::mutex lock;
  int open_scopes = 0;  // OneBlasThread scopes alive
  int restore_to = 0;   // the count the first of them found
};
Pin& pin() {
  static Pin p;
  return p;
}

}  // namespace

OneBlasThread::OneBlasThread() {
  Pin& p = pin();
  const std::lock_guard guard(p.lock);
  if (p.open_scopes++ == 0) {
    p.restore_to = openblas_get_num_threads();
    if (p.restore_to != 1) openblas_set_num_threads(1);
  }
}

OneBlasThread::~OneBlasThread() {
  Pin& p = pin();
  const std::lock_guard guard(p.lock);
  if (--p.open_scopes == 0 && p.restore_to != 1) openblas_set_num_threads(p.restore_to);
}

}  // namespace nsv
