// The storage library's settings, one struct per scenario section it owns (scenarios/README.md
// documents every key; each field's default here is the key's only default):
//   dataset.*   DatasetOptions     what the samples are
//   storage.*   StorageOptions     where they come from (the simulated storage's model, or a
//                                  directory's direct_io and cold)
//   loader.io_depth, io_threads, read_timeout, io_slice   IoOptions   how a directory is read
//
// Thread-safety: plain values.
#ifndef STALLSCOPE_STORAGE_STORAGE_OPTIONS_H_
#define STALLSCOPE_STORAGE_STORAGE_OPTIONS_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>

#include "base/cores.h"
#include "base/names.h"

namespace stallscope {

struct DatasetOptions {
  uint64_t samples = 10000;           // simulated/memory storage: how many samples
  uint64_t sample_size = 112 * 1024;  // bytes (the mean with a stdev)
  uint64_t sample_size_stdev = 0;     // bytes; {mean:, stdev:} form; 0 = all the same size
  std::string path;                   // storage.kind directory: the dataset root
  uint32_t classes = 100;             // labels for the training step

  bool operator==(const DatasetOptions&) const = default;
};

// The simulated storage's behaviour (storage/storage_model.h); also how the simulator models
// any storage, a directory's included.
struct SimulatedStorageOptions {
  double bandwidth_bytes_per_second = 0;  // storage.bandwidth; 0 = unlimited
  double latency_p50_seconds = 0;         // storage.latency.p50; 0 with p99 0 = no latency
  double latency_p99_seconds = 0;         // storage.latency.p99
  double iops = 0;                        // storage.iops; 0 = unlimited
  uint32_t max_inflight = 64;             // storage.max_inflight
  // A directory read `cold` (storage profiles only, `storage: {evict: ...}`): how long dropping
  // it from the page cache takes before each epoch. The loader's fetcher waits for the last
  // epoch's reads, then this long, before the next epoch's first read.
  double evict_seconds = 0;
  // A directory (storage profiles only, `storage: {cpu_per_read: ...}`): the loader's CPU time
  // per file read one at a time (open, read, close and their completion on the I/O thread,
  // `calibrate --dir`'s probe). The simulator shares it with the node's other busy threads:
  // on a host whose cores are all taken, a read's CPU part takes longer. 0 = not modelled.
  double cpu_per_read_seconds = 0;
  // A directory (storage profiles only, `storage: {host_per_read: ...}`): CPU time each read
  // costs the host's cores beside the reading thread's own (completion interrupts, wake-ups;
  // on a paravirtualized guest tens of microseconds), which `calibrate --dir` measures as the
  // work that busy threads on every core lose per read. The simulator runs it on the node's
  // cores as a piece of work of its own per read. 0 = not modelled.
  double host_per_read_seconds = 0;
  // A directory (storage profiles only, `storage: {read_wait_busy: ...}`): how much longer a
  // read one at a time took beside a thread on every core busy in 1 ms bursts (`calibrate --dir`):
  // the wait for a core after its completion and what the busy threads cost it. The simulator adds
  // it per thread more runnable than the node has cores (in place of cpu_per_read's share). 0 = not
  // measured.
  double read_wait_busy_seconds = 0;
  // The same beside busy threads on every core but one (`storage: {read_wait_partial: ...}`):
  // a free core does not spare the read its wait (this VM, 2026-12-06: one such thread on its 2
  // cores slowed reads one at a time from 70 to 95 us, both from 70 to 175). The simulator adds
  // it in proportion to the node's busy threads, 0 to cores - 1, where no thread waits for a
  // core. 0 = not measured.
  double read_wait_partial_seconds = 0;
  struct Faults {  // storage.faults
    double error_rate = 0, timeout_rate = 0, timeout = 1.0, truncate_rate = 0;
    double spike_rate = 0, spike = 0;
    double stall_every = 0, stall_for = 0;
    bool any() const {
      return error_rate > 0 || timeout_rate > 0 || truncate_rate > 0 || spike_rate > 0 ||
             (stall_every > 0 && stall_for > 0);
    }
    bool operator==(const Faults&) const = default;
  } faults{};
  // storage.write: how the simulated storage takes writes (checkpoints). Writes draw their
  // latency from `latency_*` (both 0: the reads' latency); with `shared` they take their bytes
  // from the reads' bandwidth bucket and max_inflight queue (one storage for both), else from
  // a bucket of their own of `bandwidth` (0: storage.bandwidth). Writes fail no fault.
  struct Write {
    double bandwidth = 0;
    double latency_p50 = 0, latency_p99 = 0;
    bool shared = true;
    bool operator==(const Write&) const = default;
  } write{};

  bool operator==(const SimulatedStorageOptions&) const = default;
};

enum class StorageKind { kSimulated, kDirectory, kMemory };
constexpr NameTable<StorageKind, 3> kStorageKindNames = {{{StorageKind::kSimulated, "simulated"},
                                                          {StorageKind::kDirectory, "directory"},
                                                          {StorageKind::kMemory, "memory"}}};
inline const char* NameOf(StorageKind k) { return NameOf(kStorageKindNames, k); }

struct StorageOptions {
  StorageKind kind = StorageKind::kSimulated;
  SimulatedStorageOptions model;  // simulated: its model; the simulator: any storage's
  bool direct_io = false;         // directory: O_DIRECT
  bool cold = false;              // directory: evict the page cache before each epoch
  // Where `model` came from, for the simulator's banner and JSON: empty = the scenario's
  // storage keys; else "profile FILE, DATE (...)" (storage.profile, which `stallscope calibrate
  // --dir` measures on a directory).
  std::string model_source;
  bool profile_cold = false, profile_direct = false;  // the read mode storage.profile measured
  double profile_io_slice = -1;  // seconds: the loader.io_slice it read with; -1: not recorded
  // The io_depth its pass over every file (the bandwidth) read with; 0: unknown.
  uint32_t profile_io_depth = 0;

  bool operator==(const StorageOptions&) const = default;
};

// The I/O defaults, chosen for the machine: one I/O thread per core this process may run on
// (UsableCores: its affinity mask), at most 16, and 16 files in
// flight per thread, at least 64 in all. One thread per core because opening and reading a
// page-cached file is CPU work done in the submitting thread's io_uring (about 2-4 us per
// 4 KiB file here), so one thread caps the rate near one core's; cold and large files need
// depth, not threads, and 64 in flight already reaches fio's rate on 1 MiB files (README).
inline uint32_t DefaultIoThreads() { return std::clamp(UsableCores(), 1u, 16u); }
inline uint32_t DefaultIoDepth() { return std::max(64u, 16 * DefaultIoThreads()); }

// How a directory is read (the loader's I/O keys).
struct IoOptions {
  uint32_t io_depth = DefaultIoDepth();  // reads in flight over all I/O threads (and a disk tier's)
  uint32_t io_threads = DefaultIoThreads();  // I/O threads, one io_uring each
  double read_timeout = 60;  // seconds: the deadline of one file's open and read; 0 = none
  // Seconds: the scheduler slice each I/O thread asks for (base/thread_slice.h; Linux 6.12 and
  // later), so a finished read is taken up without waiting out a worker's slice; 0 = the
  // kernel's default.
  double io_slice = 100e-6;

  bool operator==(const IoOptions&) const = default;
};

}  // namespace stallscope

#endif  // STALLSCOPE_STORAGE_STORAGE_OPTIONS_H_
