#include "app/mpi_job.h"

#include <mpi.h>

#include <cstdlib>
#include <stdexcept>

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

void FinalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
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
    MPI_Comm host;
    Check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, j->rank_, MPI_INFO_NULL, &host),
          "MPI_Comm_split_type");
    MPI_Comm_rank(host, &j->local_rank_);
    MPI_Comm_size(host, &j->local_size_);
    MPI_Comm_free(&host);
    return j;
  }();
  return job;
}

bool MpiJob::Arrive(uint64_t, bool stopping) { return AnyRank(stopping); }

bool MpiJob::AnyRank(bool flag) {
  int in = flag ? 1 : 0, out = 0;
  Check(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  return out != 0;
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
