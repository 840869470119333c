#include "nsv/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <utility>

namespace nsv {
namespace {

using FileId = std::pair<dev_t, ino_t>;

struct RunFiles {
  std::mutex mutex;
  std::map<FileId, std::pair<std::string, std::string>> inputs;  // id -> (path, what)
  std::set<FileId> outputs;
};

RunFiles& run_files() {
  static RunFiles files;
  return files;
}

[[noreturn]] void refuse(const std::string& path, const std::string& why) { throw std::runtime_error(path + ": " + why); }

}  // namespace

namespace detail {

void record_run_input(dev_t dev, ino_t ino, const std::string& path, std::string_view what) {
  RunFiles& f = run_files();
  const std::lock_guard<std::mutex> lock(f.mutex);
  if (f.outputs.count({dev, ino}) == 0) f.inputs.insert_or_assign({dev, ino}, std::pair{path, std::string(what)});
}

void record_run_output(dev_t dev, ino_t ino) {
  RunFiles& f = run_files();
  const std::lock_guard<std::mutex> lock(f.mutex);
  f.outputs.insert({dev, ino});
  f.inputs.erase({dev, ino});
}

std::string file_kind_text(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a named pipe (FIFO)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

}  // namespace detail

namespace {

void refuse_input_id(const std::string& path, const struct stat& st, std::string_view output) {
  RunFiles& f = run_files();
  const std::lock_guard<std::mutex> lock(f.mutex);
  const auto it = f.inputs.find({st.st_dev, st.st_ino});
  if (it == f.inputs.end()) return;
  const auto& [input, what] = it->second;
  throw std::invalid_argument(path + " is the " + what + " this run reads" + (input == path ? "" : " (" + input + ")") +
                              ": writing the " + std::string(output) + " there would destroy it; choose another " +
                              std::string(output) + " file");
}

}  // namespace

void refuse_run_input(const std::string& path, std::string_view output) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) refuse_input_id(path, st, output);
}

void write_file_atomically(const std::string& path, const std::string& contents) {
  namespace fs = std::filesystem;
  refuse_run_input(path);
  const fs::path target(path);
  // A name of this process alone (pid and a counter), created exclusively and never through a
  // symlink: whatever sits at a temporary's name is refused, not followed or truncated.
  static std::atomic<unsigned> counter{0};
  const fs::path tmp = target.parent_path() / ("." + target.filename().string() + ".nsv-tmp-" + std::to_string(::getpid()) + "-" +
                                               std::to_string(counter++));
  // Every failure keeps the errno of the call that failed (before close/remove can overwrite it),
  // removes the temporary and leaves the target as it was: it is only ever replaced by rename.
  const auto give_up = [&](int fd, int err, const std::string& what) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    refuse(path, what + ": " + std::strerror(err));
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int err = errno;
    refuse(path, std::string("cannot write (does the folder exist and is it writable?): ") + std::strerror(err));
  }
  for (std::size_t done = 0; done < contents.size();) {
    const ::ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      give_up(fd, err, "write failed");
    }
    done += static_cast<std::size_t>(n);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) give_up(fd, errno, "write failed");
  if (::fsync(fd) != 0) give_up(fd, errno, "write failed");
  if (::close(fd) != 0) give_up(-1, errno, "write failed");
  if (::rename(tmp.c_str(), target.c_str()) != 0) give_up(-1, errno, "cannot replace the file");
  detail::record_run_output(st.st_dev, st.st_ino);
}

AppendFile::AppendFile(const std::string& path, bool truncate) : path_(path) {
  const auto not_regular = [&](mode_t mode) {
    refuse(path, "is " + detail::file_kind_text(mode) + ", not a regular file: nsv never writes through or to one; remove it "
                 "or choose another output");
  };
  struct stat before {};
  if (::lstat(path.c_str(), &before) == 0 && !S_ISREG(before.st_mode)) not_regular(before.st_mode);  // never opened
  // O_NONBLOCK: a FIFO with no reader fails (ENXIO) instead of blocking, one with a reader opens
  // and is refused below; O_NOFOLLOW: a symlink (even a dangling one, which O_CREAT would create
  // the target of) is refused. O_TRUNC would empty the file before it is checked: ftruncate below.
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0644);
  if (fd_ < 0) {
    const int err = errno;
    struct stat st {};  // replaced since the check above
    if ((err == ELOOP || err == ENXIO || err == EISDIR) && ::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      not_regular(st.st_mode);
    refuse(path, std::string("cannot open for writing: ") + std::strerror(err));
  }
  struct stat st {};
  const int stat_error = ::fstat(fd_, &st) != 0 ? errno : 0;
  const auto close_and_refuse = [&](const std::string& why) {
    ::close(fd_);
    fd_ = -1;
    refuse(path, why);
  };
  if (stat_error != 0) close_and_refuse(std::string("cannot open for writing: ") + std::strerror(stat_error));
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    not_regular(st.st_mode);
  }
  try {
    refuse_input_id(path, st, "output");
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
  if (::fcntl(fd_, F_SETFL, O_APPEND) != 0) close_and_refuse(std::string("cannot open for writing: ") + std::strerror(errno));
  if (truncate && ::ftruncate(fd_, 0) != 0) close_and_refuse(std::string("cannot empty the file: ") + std::strerror(errno));
  detail::record_run_output(st.st_dev, st.st_ino);
}

AppendFile::~AppendFile() {
  if (fd_ >= 0) ::close(fd_);
}

void AppendFile::append(const std::string& line) {
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const ::ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      refuse(path_, std::string("cannot write: ") + std::strerror(errno));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

void AppendFile::cut_to(std::uint64_t bytes) {
  if (::ftruncate(fd_, static_cast<off_t>(bytes)) != 0) refuse(path_, std::string("cannot drop the partial last line: ") + std::strerror(errno));
}

}  // namespace nsv
