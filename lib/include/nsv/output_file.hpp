#pragma once
// Every file nsv writes (the CLI's outputs, a sweep's OUT and OUT.partial, the report's data)
// goes through here, so that the rules hold for every output at once:
//   - a whole file is written to a fresh temporary beside it (created with O_EXCL | O_NOFOLLOW:
//     a symlink or FIFO planted at the temporary's name is never followed or opened) and renamed
//     over the target only once complete, so a failed run never leaves a file half-written;
//   - the target itself is never opened: a symlink or FIFO at its path is replaced, never
//     written through;
//   - a target that is one of the run's inputs (the same file under any name: its device and
//     inode, which InputFile records for every input it opens) is refused before anything is
//     written, with the input's role in the message;
//   - an append-only file (a sweep's OUT.partial) is opened with O_NOFOLLOW | O_NONBLOCK and must
//     be a regular file: a symlink is refused (never followed), a FIFO refused without blocking.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace nsv {

// Writes `contents` to `path` atomically (temporary + rename). Throws std::runtime_error naming
// the path, or std::invalid_argument when the path is one of the run's inputs.
void write_file_atomically(const std::string& path, const std::string& contents);

// Throws std::invalid_argument "<path> is the <what> this run reads (<input path>): writing
// there would destroy it; choose another <output>" when `path` exists and is (under any name) a
// file this process opened as a run input. `output` names the output in the message ("--out").
void refuse_run_input(const std::string& path, std::string_view output = "output");

// An append-only output file (rows appended as cases complete, crash-safe: one write(2) per
// line to an O_APPEND descriptor). The path must be a regular file or absent: a symlink, a FIFO,
// a folder or a device is refused (std::runtime_error naming it), as is a run input. With
// `truncate` the file is emptied after those checks.
class AppendFile {
 public:
  AppendFile(const std::string& path, bool truncate);
  ~AppendFile();
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  void append(const std::string& line);  // one write(2) of the whole line (must end in '\n')
  void cut_to(std::uint64_t bytes);      // drops everything past `bytes` (a torn last line)

 private:
  std::string path_;
  int fd_ = -1;
};

namespace detail {
// The run's files, by identity (InputFile and the writers above keep them; thread-safe).
void record_run_input(dev_t dev, ino_t ino, const std::string& path, std::string_view what);
void record_run_output(dev_t dev, ino_t ino);  // a file this process wrote: never one of its inputs
// "a named pipe (FIFO)", "a folder", ...: what a non-regular file is, for messages.
std::string file_kind_text(mode_t mode);
}  // namespace detail

}  // namespace nsv
