#include "app/mpi_job.h"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <thread>

namespace stallscope {
namespace {

bool StartedByLauncher() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(v)) return true;
  }
  return false;
}

void Check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string("MPI: ") + what + " failed");
}

MPI_Comm host_comm = MPI_COMM_NULL;
MPI_Win budget_window = MPI_WIN_NULL;

void FinalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (budget_window != MPI_WIN_NULL) MPI_Win_free(&budget_window);
  if (host_comm != MPI_COMM_NULL) MPI_Comm_free(&host_comm);
  MPI_Finalize();
}

}  // namespace

MpiJob* MpiJob::FromLauncher() {
  static MpiJob* job = []() -> MpiJob* {
    if (!StartedByLauncher()) return nullptr;
    int provided = 0;
    Check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    std::atexit(FinalizeAtExit);
    auto* j = new MpiJob();
    MPI_Comm_rank(MPI_COMM_WORLD, &j->rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &j->size_);
    Check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, j->rank_, MPI_INFO_NULL,
                              &host_comm),
          "MPI_Comm_split_type");
    MPI_Comm_rank(host_comm, &j->local_rank_);
    MPI_Comm_size(host_comm, &j->local_size_);
    const int first = j->local_rank_ == 0 ? 1 : 0;
    Check(MPI_Allreduce(&first, &j->hosts_, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    return j;
  }();
  return job;
}

// The step barrier: a non-blocking all-reduce of the stop flags, tested in a loop that sleeps
// between tests once the first few microseconds have passed. A blocking MPI_Allreduce polls
// a core at full speed while it waits (Open MPI's shared-memory transport), and a rank waiting
// for a slower one would take that core from the loaders of the ranks it waits for.
uint32_t MpiJob::Arrive(uint64_t, uint32_t flags) {
  unsigned in = flags, out = 0;
  MPI_Request request;
  Check(MPI_Iallreduce(&in, &out, 1, MPI_UNSIGNED, MPI_BOR, MPI_COMM_WORLD, &request),
        "MPI_Iallreduce");
  const auto start = std::chrono::steady_clock::now();
  for (int done = 0;;) {
    Check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) break;
    if (std::chrono::steady_clock::now() - start > std::chrono::microseconds(20)) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  return out;
}

bool MpiJob::AnyRank(bool flag) {
  int in = flag ? 1 : 0, out = 0;
  Check(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  return out != 0;
}

bool MpiJob::AnyRankRefused(const std::string& error) {
  if (!AnyRank(!error.empty())) return false;
  const std::vector<std::string> all = GatherAtRoot(error);
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].empty()) continue;
    if (r == 0) {
      std::fprintf(stderr, "stallscope: %s\n", all[r].c_str());
    } else {
      std::fprintf(stderr, "stallscope: rank %zu: %s\n", r, all[r].c_str());
    }
    break;
  }
  return true;
}

SharedStorageBudget* MpiJob::FreshHostStorageBudget() {
  if (!budget_) {
    void* base = nullptr;
    const MPI_Aint bytes = local_rank_ == 0 ? sizeof(SharedStorageBudget) : 0;
    Check(MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, host_comm, &base, &budget_window),
          "MPI_Win_allocate_shared");
    MPI_Aint size = 0;
    int unit = 0;
    Check(MPI_Win_shared_query(budget_window, 0, &size, &unit, &base), "MPI_Win_shared_query");
    budget_ = static_cast<SharedStorageBudget*>(base);
  }
  Check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");  // the previous storage is gone everywhere
  if (local_rank_ == 0) new (budget_) SharedStorageBudget();
  Check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");  // zeroed before any rank reads from it
  return budget_;
}

void MpiJob::Broadcast(void* data, size_t bytes) {
  Check(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
}

std::vector<std::string> MpiJob::GatherAtRoot(const std::string& text) {
  const int length = static_cast<int>(text.size());
  std::vector<int> lengths(rank_ == 0 ? size_ : 0);
  Check(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD),
        "MPI_Gather");
  std::vector<int> offsets(lengths.size());
  int total = 0;
  for (size_t r = 0; r < lengths.size(); ++r) {
    offsets[r] = total;
    total += lengths[r];
  }
  std::string all(static_cast<size_t>(total), '\0');
  Check(MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                    MPI_CHAR, 0, MPI_COMM_WORLD),
        "MPI_Gatherv");
  std::vector<std::string> out;
  for (size_t r = 0; r < lengths.size(); ++r) out.push_back(all.substr(offsets[r], lengths[r]));
  return out;
}

void MpiJob::Abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();  // not reached
}

}  // namespace stallscope
