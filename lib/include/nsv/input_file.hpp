#pragma once
// Every input file (a .npy matrix or gradient, a coefficient file, a model config) is read
// through InputFile: only a regular file is accepted. A FIFO, a folder or a device is refused
// up front with a message naming the path and what it is; a FIFO is opened non-blocking, so it
// never hangs the run, and the check is made on the descriptor that is then read (no race
// between checking a path and opening it). Every run input is recorded by identity (device and
// inode), so that no output of the run can be written over it (nsv/output_file.hpp).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace nsv {

// What a file read is to the run: one of its inputs (recorded, so that no output replaces it), or
// an output of an earlier run that this one continues and replaces (a sweep's OUT and OUT.partial
// under --resume, report.json under --only): not recorded, and refused if it is a symlink.
enum class FileRole { run_input, earlier_output };

class InputFile {
 public:
  // what: how messages call the file, e.g. "coefficient file". Throws std::runtime_error
  // "<path>: cannot open the <what>: <reason>" or "<path>: the <what> is a folder, not a file".
  InputFile(const std::string& path, std::string_view what, FileRole role = FileRole::run_input);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  const std::string& path() const { return path_; }
  std::uint64_t size() const { return size_; }  // in bytes, when opened
  // Reads up to n bytes; fewer only at the end of the file. Throws on a read error.
  std::size_t read(void* dst, std::size_t n);
  // The rest of the file; throws if it holds more than max_bytes.
  std::string read_rest(std::uint64_t max_bytes);
  // Reads exactly n bytes at `offset` (pread: the position of read() is not moved); throws naming
  // the file when fewer are there.
  void read_at(std::uint64_t offset, void* dst, std::size_t n);

 private:
  std::string path_, what_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// The whole of a regular file of at most max_bytes bytes (default 64 MiB), as InputFile reads it.
std::string read_input_file(const std::string& path, std::string_view what, std::uint64_t max_bytes = std::uint64_t{64} << 20,
                            FileRole role = FileRole::run_input);

}  // namespace nsv
