// The protocol, on a private duplicate of the communicator (so its tags meet no other traffic):
//   worker -> rank 0, tag kToCoordinator: [int64 item][int64 status][result bytes]
//            status kAsk (no result yet: the worker's first message), kDone, kFailed (the bytes
//            are the error text);
//   rank 0 -> worker, tag kToWorker: [int64 next item], or kNoMore.
// Rank 0's coordinator thread polls with MPI_Iprobe and a short sleep instead of a blocking
// receive, which Open MPI implements as a busy loop that would take a core from the workers.
#include "nsv/work_pool.hpp"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace nsv {
namespace {

constexpr int kToCoordinator = 1, kToWorker = 2;
constexpr std::int64_t kAsk = 0, kDone = 1, kFailed = 2, kNoMore = -1;

std::string message(std::int64_t item, std::int64_t status, const std::string& body) {
  std::string m(16 + body.size(), '\0');
  std::memcpy(m.data(), &item, 8);
  std::memcpy(m.data() + 8, &status, 8);
  std::memcpy(m.data() + 16, body.data(), body.size());
  return m;
}

void send_bytes(const std::string& bytes, int to, int tag, MPI_Comm comm) {
  if (bytes.size() > static_cast<std::size_t>(INT32_MAX)) throw std::runtime_error("a work item's result exceeds 2 GiB");
  MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, to, tag, comm);
}

void coordinate(MPI_Comm comm, std::size_t items, const std::function<void(std::size_t, std::string&&)>& consume,
                PoolOutcome& outcome) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  std::size_t next = 0;
  int working = size;
  while (working > 0) {
    int ready = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kToCoordinator, comm, &ready, &st);
    if (!ready) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    int length = 0;
    MPI_Get_count(&st, MPI_BYTE, &length);
    std::string m(static_cast<std::size_t>(length), '\0');
    MPI_Recv(m.data(), length, MPI_BYTE, st.MPI_SOURCE, kToCoordinator, comm, MPI_STATUS_IGNORE);
    std::int64_t item = 0, status = 0;
    std::memcpy(&item, m.data(), 8);
    std::memcpy(&status, m.data() + 8, 8);
    if (status == kDone) {
      consume(static_cast<std::size_t>(item), m.substr(16));
    } else if (status == kFailed) {
      ++outcome.failed;
      if (outcome.first_error.empty()) outcome.first_error = m.substr(16);
    }
    const std::int64_t assign = next < items ? static_cast<std::int64_t>(next++) : kNoMore;
    if (assign == kNoMore) --working;
    MPI_Send(&assign, 1, MPI_INT64_T, st.MPI_SOURCE, kToWorker, comm);
  }
}

void work(MPI_Comm comm, const std::function<std::string(std::size_t)>& compute) {
  std::string m = message(0, kAsk, "");
  for (;;) {
    send_bytes(m, 0, kToCoordinator, comm);
    std::int64_t item = kNoMore;
    MPI_Recv(&item, 1, MPI_INT64_T, 0, kToWorker, comm, MPI_STATUS_IGNORE);
    if (item == kNoMore) return;
    try {
      m = message(item, kDone, compute(static_cast<std::size_t>(item)));
    } catch (const std::exception& e) {
      m = message(item, kFailed, e.what());
    }
  }
}

// The outcome as rank 0 knows it, on every process.
void share(MPI_Comm comm, PoolOutcome& outcome) {
  std::int64_t head[2] = {static_cast<std::int64_t>(outcome.failed), static_cast<std::int64_t>(outcome.first_error.size())};
  MPI_Bcast(head, 2, MPI_INT64_T, 0, comm);
  outcome.failed = static_cast<std::size_t>(head[0]);
  outcome.first_error.resize(static_cast<std::size_t>(head[1]));
  MPI_Bcast(outcome.first_error.data(), static_cast<int>(head[1]), MPI_CHAR, 0, comm);
}

}  // namespace

PoolOutcome run_work_pool(MPI_Comm parent, std::size_t items, const std::function<std::string(std::size_t)>& compute,
                          const std::function<void(std::size_t, std::string&&)>& consume) {
  MPI_Comm comm;
  MPI_Comm_dup(parent, &comm);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  PoolOutcome outcome;
  std::thread coordinator;
  if (rank == 0) coordinator = std::thread([&] { coordinate(comm, items, consume, outcome); });
  work(comm, compute);
  if (coordinator.joinable()) coordinator.join();
  share(comm, outcome);
  MPI_Comm_free(&comm);
  return outcome;
}

void broadcast_from_root(MPI_Comm comm, std::vector<std::string>& values) {
  std::uint64_t n = values.size();
  MPI_Bcast(&n, 1, MPI_UINT64_T, 0, comm);
  values.resize(n);
  for (std::string& v : values) {
    std::uint64_t length = v.size();
    MPI_Bcast(&length, 1, MPI_UINT64_T, 0, comm);
    if (length > static_cast<std::uint64_t>(INT32_MAX)) throw std::runtime_error("a broadcast value exceeds 2 GiB");
    v.resize(length);
    MPI_Bcast(v.data(), static_cast<int>(length), MPI_BYTE, 0, comm);
  }
}

void broadcast_from_root(MPI_Comm comm, std::vector<std::size_t>& values) {
  std::uint64_t n = values.size();
  MPI_Bcast(&n, 1, MPI_UINT64_T, 0, comm);
  std::vector<std::uint64_t> v(values.begin(), values.end());
  v.resize(n);
  MPI_Bcast(v.data(), static_cast<int>(n), MPI_UINT64_T, 0, comm);
  values.assign(v.begin(), v.end());
}

}  // namespace nsv
