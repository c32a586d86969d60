// BenchDir: how fast this host reads a real dataset directory (`stallscope bench-dir`).
//
// Every regular file below the directory (DirectoryStorage's listing: recursive, sorted) is
// read exactly once through the same io_uring reader the pipeline uses, `io_depth` files in
// flight, each into its own block-aligned buffer. Measured: files/s, bytes/s, per-file
// latency (submission to completion) percentiles, a file-size histogram, and the process's
// CPU time per file.
//
// Thread-safety: one call at a time per directory.
#ifndef STALLSCOPE_APP_BENCH_DIR_H_
#define STALLSCOPE_APP_BENCH_DIR_H_

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeline/options.h"
#include "storage/directory_storage.h"

namespace stallscope {

struct BenchDirResult {
  std::string path;
  uint64_t files = 0, bytes = 0, skipped = 0;
  double seconds = 0;
  double files_per_second = 0, bytes_per_second = 0;
  double latency_p50 = 0, latency_p99 = 0, latency_p999 = 0;
  double cpu_seconds_per_file = 0;
  double evict_seconds = 0;  // cold: dropping the directory from the page cache first (untimed)
  bool io_uring = true, direct = false;
  // Files per power-of-two size bucket: bucket k holds sizes in [2^k, 2^(k+1)) (0: empty files).
  std::vector<uint64_t> size_histogram;
  std::vector<double> latencies;  // each file read, seconds (not in the JSON)
};

// Throws StorageError (a bad directory) before reading anything. `shard`: read only the files
// whose index in the listing is rank, rank + ranks, … (a multi-client benchmark's share; `files`
// and the histogram are still the whole directory's). `before_read` runs after the set-up,
// just before the timed read (a multi-client benchmark's start barrier).
BenchDirResult BenchDirectory(const DirectoryStorageOptions& options, const RankShard& shard = {},
                              const std::function<void()>& before_read = {});

// The clients of a multi-client benchmark as one: files and bytes summed, the time the
// slowest took (they start together), rates over it, latency percentiles over every file.
// kOneAfterAnother: passes that ran in turn (the probe's), their times summed instead.
enum class Passes { kTogether, kOneAfterAnother };
BenchDirResult CombineClients(const std::vector<BenchDirResult>& clients,
                              Passes passes = Passes::kTogether);

// The simulator's storage model of a directory read the way `o` reads it (cold, direct_io,
// io_depth, io_threads), fitted from three timed reads (`calibrate --dir`): every file at
// o.io.io_depth in flight gives the bandwidth (bytes/s); up to `probe_files` of them (an even
// spread of the listing), read one at a time on one thread, again until kProbeSeconds of reads
// (kProbePasses passes at most), give the latency: the pooled reads' p50, and
// their p99 at most kMaxTailRatio × p50 (the model's bandwidth bucket refills during a read's
// latency, so a read at a time takes about max(latency, transfer), as on the device); every
// file's first block at o.io.io_depth in flight gives the IOPS (files/s). Page-cached (not
// cold): the files are read once first, untimed, so every timed read finds them cached; cold:
// each timed read starts from an evicted page cache. The model fits the scenario's io_depth
// best at or below the depth it was measured at.
inline constexpr double kMaxTailRatio = 4;
inline constexpr double kProbeSeconds = 1;
inline constexpr int kProbePasses = 16;
// Then the probe again beside a thread on every core busy in 1 ms bursts, as a loader's
// workers are (MeasureReadsUnderLoad), gives what a read costs a busy host: host_per_read and
// read_wait_busy.
struct DirectoryFit {
  SimulatedStorageOptions model;
  BenchDirResult deep, probe, small;  // the three timed reads
  int probe_passes = 1;               // the probe's passes over its files (pooled in probe)
  double cpu_per_read_busy = 0;       // the busy threads' lost core time per read
  std::vector<double> passes;         // files/s of each pass over every file, the kept one deep
};
// `o` read one file at a time on one thread (io_depth 1, one I/O thread): the probe's reads.
DirectoryStorageOptions OneAtATime(DirectoryStorageOptions o);

// The profile's probe as a series of passes (FitDirectoryStorage's latency, and advise --verify's
// reads between its runs): each pass reads the next spread of `probe_files` files of the
// directory (1, 1 + ranks, ...; then 2, ...) one at a time on one thread, read as `o` reads
// (cold, direct_io), each file evicted first where cold, as an epoch reads each file once.
class DirectoryPace {
 public:
  explicit DirectoryPace(const DirectoryStorageOptions& o, uint64_t probe_files = 400);
  // One pass. `every_file`: evict every file of the directory first, not only the pass's (the
  // model's evict_seconds: what a run's epoch does).
  const BenchDirResult& Pass(bool every_file = false);
  // The passes so far as one (CombineClients, one after another); at least one pass first.
  BenchDirResult Pooled() const;
  double Seconds() const;  // the passes' read time so far
  const std::vector<BenchDirResult>& passes() const { return passes_; }
  uint64_t ranks() const { return ranks_; }

 private:
  DirectoryStorageOptions one_;
  DirectoryStorage storage_;
  uint64_t ranks_ = 1;
  std::vector<BenchDirResult> passes_;
};

// `load_rounds`: MeasureReadsUnderLoad's rounds (a test under a throttle that leaves the cores
// idle, where the measure changes no prediction, may take fewer).
DirectoryFit FitDirectoryStorage(const DirectoryStorageOptions& o, uint64_t probe_files = 400,
                                 int load_rounds = 7);

// The probe under load, a round at a time (MeasureReadsUnderLoad's rounds; advise --verify takes
// one between its runs). A round, alternated: the probe (`one`: depth 1, one I/O thread; the
// files of `shard`) alone, a thread on every core busy in 1 ms bursts alone, and the probe beside
// them, then beside such threads on every core but one (2 cores or more); each side reads for
// 0.2 s at least. The rounds' reads and times are summed, as a run's long stretch of reads
// averages a busy host's spells.
class ReadsUnderLoad {
 public:
  ReadsUnderLoad(const DirectoryStorageOptions& one, const RankShard& shard);
  void Round();
  int rounds() const { return rounds_; }  // rounds that counted (every side read something)
  // Sets cpu_per_read_busy (the cores' time the busy threads on every core lost while the probe
  // read, per read), m's read_wait_busy and read_wait_partial (the probe's time per read beside
  // them, and beside one fewer, less its time alone) and host_per_read (cpu_per_read_busy less
  // m.cpu_per_read_seconds); nothing where no round counted.
  void Apply(double& cpu_per_read_busy, SimulatedStorageOptions& m) const;

 private:
  struct Reads {
    double seconds = 0, reads = 0;
  };
  Reads ReadFor(const std::function<void()>& start, const std::function<void()>& end);

  DirectoryStorageOptions one_;
  RankShard shard_;
  DirectoryStorage storage_;
  unsigned cores_;
  int rounds_ = 0;
  double lost_ = 0, busy_reads_ = 0, busy_time_ = 0, alone_reads_ = 0, alone_time_ = 0;
  double partial_reads_ = 0, partial_time_ = 0;
};

// `rounds` rounds of ReadsUnderLoad (fewer where two rounds took over 10 s), applied to f.
void MeasureReadsUnderLoad(const DirectoryStorageOptions& one, const RankShard& shard,
                           DirectoryFit& f, int rounds = 7);

// The storage profile file's text (config/node_profile.h) for a fit of `d`'s directory, read
// as `d` reads it: what `calibrate --dir` writes and `storage.profile` reads.
std::string DirectoryProfileYaml(const DirectoryStorageOptions& d, const DirectoryFit& fit);

nlohmann::json BenchDirToJson(const BenchDirResult& r);
std::string FormatBenchDir(const BenchDirResult& r);

}  // namespace stallscope

#endif  // STALLSCOPE_APP_BENCH_DIR_H_
