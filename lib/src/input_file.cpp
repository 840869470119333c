#include "nsv/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "nsv/output_file.hpp"

namespace nsv {

InputFile::InputFile(const std::string& path, std::string_view what, FileRole role) : path_(path), what_(what) {
  const auto refuse = [&](const std::string& why) { throw std::runtime_error(path_ + ": " + why); };
  const auto not_regular = [&](mode_t mode) {
    refuse("the " + what_ + " is " + detail::file_kind_text(mode) + ", not a regular file: give the path of a file");
  };
  // stat first, so that a device is never opened (opening one can have effects); then check the
  // descriptor itself, in case the path was replaced in between. An earlier output is never read
  // through a symlink (lstat, O_NOFOLLOW): it is about to be replaced or appended to.
  const bool own = role == FileRole::earlier_output;
  struct stat st {};
  if ((own ? ::lstat(path_.c_str(), &st) : ::stat(path_.c_str(), &st)) != 0) {
    const int err = errno;
    refuse("cannot open the " + what_ + ": " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) not_regular(st.st_mode);
  fd_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (own ? O_NOFOLLOW : 0));
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
  if (!own) detail::record_run_input(st.st_dev, st.st_ino, path_, what_);
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

void InputFile::read_at(std::uint64_t offset, void* dst, std::size_t n) {
  auto* out = static_cast<char*>(dst);
  std::size_t done = 0;
  while (done < n) {
    const ::ssize_t got = ::pread(fd_, out + done, n - done, static_cast<off_t>(offset + done));
    if (got == 0) throw std::runtime_error(path_ + ": the " + what_ + " is truncated (it shrank while being read)");
    if (got < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      throw std::runtime_error(path_ + ": cannot read the " + what_ + ": " + std::strerror(err));
    }
    done += static_cast<std::size_t>(got);
  }
}

std::string read_input_file(const std::string& path, std::string_view what, std::uint64_t max_bytes, FileRole role) {
  InputFile in(path, what, role);
  return in.read_rest(max_bytes);
}

}  // namespace nsv
