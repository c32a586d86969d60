// MpiJob: this process's place in a multi-rank run started by an MPI launcher (`mpirun -np N
// stallscope run ...`, `srun`), and the few collectives a run needs: the per-step barrier of
// synchronous steps, agreement on set-up errors, and gathering every rank's result at rank 0.
// Open MPI does the launching and the rendezvous; stallscope writes no transport of its own.
//
// A process not started by a launcher never initializes MPI: FromLauncher() returns nullptr
// and a run is one rank, as before.
//
// Thread-safety: MPI is initialized with MPI_THREAD_FUNNELED; every method is called from
// main's thread (the pipeline's device thread is main's thread).
#ifndef STALLSCOPE_APP_MPI_JOB_H_
#define STALLSCOPE_APP_MPI_JOB_H_

#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/options.h"
#include "storage/storage_model.h"

namespace stallscope {

// Raised on a rank whose peer refused its set-up (AnyRankRefused; rank 0 has printed why).
struct PeerRefused {};

class MpiJob final : public StepSync {
 public:
  // The job when this process was started by an MPI launcher (Open MPI's
  // OMPI_COMM_WORLD_SIZE, PMI_SIZE of Hydra and Slurm's PMI2, PMIX_RANK), initializing MPI
  // on the first call; nullptr otherwise. MPI is finalized at exit.
  static MpiJob* FromLauncher();

  int rank() const { return rank_; }
  int size() const { return size_; }
  // This rank's index among the ranks on its host, and their number (MPI_COMM_TYPE_SHARED).
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  // Hosts in the job (groups of ranks that share memory).
  int hosts() const { return hosts_; }
  // A SharedStorageBudget in memory this host's ranks share (an MPI-3 shared window,
  // allocated on first use), zeroed: a fresh storage's budget. Collective: every rank calls
  // it, once per storage, when no rank uses the previous one.
  SharedStorageBudget* FreshHostStorageBudget();
  // Set-up errors agreed across ranks: true when any rank's `error` is not empty; rank 0 then
  // prints the first one (naming the rank when it is not rank 0's own), and every rank should
  // exit 2. Collective: every rank calls it once per check.
  bool AnyRankRefused(const std::string& error);
  RankShard shard() const { return {static_cast<uint32_t>(rank_), static_cast<uint32_t>(size_)}; }

  // StepSync: an all-reduce (bitwise or) of the flags, which is also the step's barrier.
  uint32_t Arrive(uint64_t step, uint32_t flags) override;
  // True on every rank when any rank passed true.
  bool AnyRank(bool flag);
  // Rank 0's `bytes` bytes at `data` copied to every rank's `data`.
  void Broadcast(void* data, size_t bytes);
  // Every rank's `text` at rank 0, in rank order; an empty vector on the other ranks.
  std::vector<std::string> GatherAtRoot(const std::string& text);
  // Ends every rank of the job (a rank that cannot go on while the others wait in a
  // collective): MPI_Abort with `code`.
  [[noreturn]] void Abort(int code);

 private:
  MpiJob() = default;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
  int hosts_ = 1;
  SharedStorageBudget* budget_ = nullptr;
};

}  // namespace stallscope

#endif  // STALLSCOPE_APP_MPI_JOB_H_
