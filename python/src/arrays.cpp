#include "arrays.hpp"

#include <cstring>
#include <stdexcept>

#include "nsv/input_limits.hpp"

namespace nsv::python {
namespace {

std::string shape_text(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

// The array itself when it already is one (no copy), else numpy's conversion of it (lists,
// tensors exposing __array__).
py::array as_array(const py::handle& obj, const std::string& name) {
  py::array a = py::module_::import("numpy").attr("asarray")(obj);
  const char kind = a.dtype().kind();
  if (kind != 'f' || (a.itemsize() != 4 && a.itemsize() != 8))
    throw std::invalid_argument(name + ": expected a float32 or float64 array, got dtype " +
                                py::str(a.dtype()).cast<std::string>());
  return a;
}

// A big-endian (non-native) array converted to native order by numpy, value for value: its bytes
// are never read as native floats. A copy: made once the shape has passed the limits.
py::array native(py::array a) {
  if (!a.dtype().attr("isnative").cast<bool>()) a = a.attr("astype")(a.dtype().attr("newbyteorder")("="));
  return a;
}

// Element (i, j) of matrix k of a float array with arbitrary strides.
template <class T>
void copy_matrix(const py::array& a, py::ssize_t k, MatD& out) {
  const auto* base = static_cast<const char*>(a.data());
  const bool batch = a.ndim() == 3;
  const py::ssize_t sk = batch ? a.strides(0) : 0, si = a.strides(batch ? 1 : 0), sj = a.strides(batch ? 2 : 1);
  for (Eigen::Index i = 0; i < out.rows(); ++i)
    for (Eigen::Index j = 0; j < out.cols(); ++j) {
      T v;
      std::memcpy(&v, base + k * sk + i * si + j * sj, sizeof(T));
      out(i, j) = static_cast<double>(v);
    }
}

// The array's shape as the library's limits read it, checked for `use`.
void require_shape(const py::array& a, const std::string& name, Use use) {
  const bool batch = a.ndim() == 3;
  const InputShape shape{batch ? a.shape(0) : 1, a.shape(batch ? 1 : 0), a.shape(batch ? 2 : 1), batch};
  if (use == Use::ns) require_ns_shape(name, shape);
  else require_copyable(name, shape);
}

py::array two_d(const py::handle& obj, const std::string& name) {
  py::array a = as_array(obj, name);
  if (a.ndim() != 2) throw std::invalid_argument(name + ": expected a 2-D array, got shape " + shape_text(a));
  return a;
}

MatD matrix_at(const py::array& a, py::ssize_t k) {
  const bool batch = a.ndim() == 3;
  MatD m(a.shape(batch ? 1 : 0), a.shape(batch ? 2 : 1));
  if (a.itemsize() == 4) copy_matrix<float>(a, k, m);
  else copy_matrix<double>(a, k, m);
  return m;
}

}  // namespace

bool is_float64(const py::handle& obj, const std::string& name) { return as_array(obj, name).itemsize() == 8; }

MatD matrix_from(const py::handle& obj, const std::string& name, Use use) {
  const py::array a = two_d(obj, name);
  require_shape(a, name, use);
  return matrix_at(native(a), 0);
}

void require_ns_matrix(const py::handle& obj, const std::string& name) { require_shape(two_d(obj, name), name, Use::ns); }

Batch batch_from(const py::handle& obj, const std::string& name, bool* three_d, Use use) {
  py::array a = as_array(obj, name);
  if (a.ndim() != 2 && a.ndim() != 3)
    throw std::invalid_argument(name + ": expected a 2-D matrix or a 3-D batch of matrices, got shape " + shape_text(a));
  require_shape(a, name, use);
  a = native(a);
  if (three_d) *three_d = a.ndim() == 3;
  Batch b;
  const py::ssize_t count = a.ndim() == 3 ? a.shape(0) : 1;
  for (py::ssize_t k = 0; k < count; ++k) b.push_back(matrix_at(a, k));
  return b;
}

namespace {
template <class T>
py::array to_array(const MatrixViews& b, bool three_d) {
  const py::ssize_t rows = b.empty() ? 0 : b[0]->rows(), cols = b.empty() ? 0 : b[0]->cols();
  for (const MatD* m : b)
    if (m->rows() != rows || m->cols() != cols) throw std::invalid_argument("a batch of matrices of different shapes has no array");
  py::array_t<T> out = three_d ? py::array_t<T>({static_cast<py::ssize_t>(b.size()), rows, cols}) : py::array_t<T>({rows, cols});
  T* dst = out.mutable_data();
  for (const MatD* m : b)
    for (Eigen::Index i = 0; i < m->size(); ++i) *dst++ = static_cast<T>(m->data()[i]);
  return out;
}
}  // namespace

MatrixViews views_of(const Batch& b) {
  MatrixViews views;
  for (const MatD& m : b) views.push_back(&m);
  return views;
}

py::array matrix_to_array(const MatD& m, bool float64) {
  const MatrixViews one{&m};
  return float64 ? to_array<double>(one, false) : to_array<float>(one, false);
}

py::array batch_to_array(const Batch& b, bool float64) {
  return float64 ? to_array<double>(views_of(b), true) : to_array<float>(views_of(b), true);
}

}  // namespace nsv::python
