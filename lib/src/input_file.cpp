#include "nsv/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace nsv {
namespace {

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a named pipe (FIFO)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

InputFile::InputFile(const std::string& path, std::string_view what) : path_(path), what_(what) {
  const auto refuse = [&](const std::string& why) { throw std::runtime_error(path_ + ": " + why); };
  const auto not_regular = [&](mode_t mode) {
    refuse("the " + what_ + " is " + kind_of(mode) + ", not a regular file: give the path of a file");
  };
  // stat first, so that a device is never opened (opening one can have effects); then check the
  // descriptor itself, in case the path was replaced in between.
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    const int err = errno;
    refuse("cannot open the " + what_ + ": " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) not_regular(st.st_mode);
  fd_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd_ < 0) {
    const int err = errno;
    refuse("cannot open the " + what_ + ": " + std::strerror(err));
  }
  const int stat_error = ::fstat(fd_, &st) != 0 ? errno : 0;
  if (stat_error != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    if (stat_error != 0) refuse("cannot read the " + what_ + ": " + std::strerror(stat_error));
    not_regular(st.st_mode);
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::size_t InputFile::read(void* dst, std::size_t n) {
  auto* out = static_cast<char*>(dst);
  std::size_t done = 0;
  while (done < n) {
    const ::ssize_t got = ::read(fd_, out + done, n - done);
    if (got == 0) break;
    if (got < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      throw std::runtime_error(path_ + ": cannot read the " + what_ + ": " + std::strerror(err));
    }
    done += static_cast<std::size_t>(got);
  }
  return done;
}

std::string InputFile::read_rest(std::uint64_t max_bytes) {
  std::string text;
  char chunk[65536];
  for (std::size_t got; (got = read(chunk, sizeof chunk)) > 0;) {
    if (text.size() + got > max_bytes)
      throw std::runtime_error(path_ + ": the " + what_ + " is larger than " + std::to_string(max_bytes) +
                               " bytes, more than such a file can hold");
    text.append(chunk, got);
  }
  return text;
}

std::string read_input_file(const std::string& path, std::string_view what, std::uint64_t max_bytes) {
  InputFile in(path, what);
  return in.read_rest(max_bytes);
}

}  // namespace nsv
