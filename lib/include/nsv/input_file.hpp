#pragma once
// Every input file (a .npy matrix or gradient, a coefficient file, a model config) is read
// through InputFile: only a regular file is accepted. A FIFO, a folder or a device is refused
// up front with a message naming the path and what it is; a FIFO is opened non-blocking, so it
// never hangs the run, and the check is made on the descriptor that is then read (no race
// between checking a path and opening it).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace nsv {

class InputFile {
 public:
  // what: how messages call the file, e.g. "coefficient file". Throws std::runtime_error
  // "<path>: cannot open the <what>: <reason>" or "<path>: the <what> is a folder, not a file".
  InputFile(const std::string& path, std::string_view what);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  const std::string& path() const { return path_; }
  std::uint64_t size() const { return size_; }  // in bytes, when opened
  // Reads up to n bytes; fewer only at the end of the file. Throws on a read error.
  std::size_t read(void* dst, std::size_t n);
  // The rest of the file; throws if it holds more than max_bytes.
  std::string read_rest(std::uint64_t max_bytes);

 private:
  std::string path_, what_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// The whole of a regular file of at most max_bytes bytes (default 64 MiB), as InputFile reads it.
std::string read_input_file(const std::string& path, std::string_view what, std::uint64_t max_bytes = std::uint64_t{64} << 20);

}  // namespace nsv
