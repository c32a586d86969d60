// The commands of the `stallscope` CLI (DESIGN.md), one function per command, each in its own
// file in app/. tools/stallscope.cc parses the command line into these option structs and calls
// them through RunGuarded (app/errors.h), which turns every error into its message and exit code.
//
// Every command returns its exit code: 0 success, 1 the run failed, 2 bad usage or input
// (nothing was run); an interrupted `run` returns 128 + the signal.
//
// Thread-safety: each command is called once, from main's thread.
#ifndef STALLSCOPE_APP_COMMANDS_H_
#define STALLSCOPE_APP_COMMANDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/options.h"
#include "storage/directory_storage.h"
#include "storage/generate.h"

namespace stallscope {

struct HostMeasurement;  // sim/host_model.h

// Where results go, for `run` and `simulate` alike.
struct OutputOptions {
  std::string json;            // --json: the result document
  std::string trace;           // --trace: a Chrome trace-event timeline
  std::string metrics_listen;  // --metrics-listen: empty = no server
  std::string linger = "0s";   // --linger: keep serving the final metrics this long
  std::string push_gateway;    // --push-gateway: empty = no push
  bool quiet = false;          // no banner, no progress line
  // Multi-rank runs: this rank (the metrics' and trace's `rank`; -1 for one rank) and the offset
  // its --metrics-listen port takes (its local rank on its host).
  int rank = -1;
  unsigned metrics_port_offset = 0;
  // false: collect the trace but write no file (a multi-rank run's other ranks; rank 0
  // gathers their events and writes the one trace).
  bool write_files = true;
};

struct RunCommandOptions {
  std::string scenario;
  std::vector<std::string> variants;  // empty = all
  std::vector<std::string> sets;      // --set KEY=VALUE
  OutputOptions out;
};
int RunCommand(const RunCommandOptions& options);

struct SimulateCommandOptions {
  RunCommandOptions run;
  bool against_run = false;       // also run each variant for real and compare idle
  bool max_accelerators = false;  // search the largest cluster that keeps AU >= au
  double au = 0.9;
  std::string node_profile;  // --node-profile: as --set cluster.node.profile=FILE
};
int SimulateCommand(const SimulateCommandOptions& options);

struct SweepCommandOptions {
  std::string scenario;
  std::vector<std::string> variants, sets, grids;
  bool simulate = false;
  std::string node_profile;  // --node-profile (with --simulate)
  std::string csv;           // default: SCENARIO-NAME-sweep.csv
  std::string json;
  bool quiet = false;
};
int SweepCommand(const SweepCommandOptions& options);

int ValidateCommand(const std::string& scenario, bool keys = false);

struct CalibrateCommandOptions {
  std::string output;                  // -o: the profile file; empty = stdout
  std::string sample_size = "112KiB";  // the samples the rates are measured on
  uint32_t image_size = 224;           // jpeg-decode's output side
  int trials = 7;
  bool quiet = false;
  // --dir: measure a directory's storage instead, read as a scenario reads it (a storage
  // profile for storage.profile).
  std::string dir;
  bool cold = false, direct = false;
  uint32_t io_depth = IoOptions{}.io_depth, io_threads = IoOptions{}.io_threads;
  std::string io_slice;  // the I/O threads' scheduler slice (loader.io_slice); empty: its default
};
int CalibrateCommand(const CalibrateCommandOptions& options);
// What `calibrate` (no --dir) measures and writes: this host as a node profile's text (m gets
// the measurement, for its spreads). Also advise --verify's node where a scenario names none.
std::string MeasureHostProfile(uint64_t sample_size, uint32_t image_size, int trials,
                               HostMeasurement& m);

struct GenCommandOptions {
  std::string dir;
  uint64_t samples = 0;
  std::string size;  // raw: SIZE[:STDEV] (default 112KiB); jpeg: WxH (default 256x256)
  std::string format = "raw";
  uint32_t classes = GenerateOptions{}.classes;
  uint64_t seed = GenerateOptions{}.seed;
  bool quiet = false;
};
int GenCommand(const GenCommandOptions& options);

struct BenchDirCommandOptions {
  DirectoryStorageOptions storage;  // the directory and how it is read
  std::string json;
  // The training loop (with --batch or --workload): the real pipeline on the emulated device.
  uint32_t batch = 0;  // 0: no training loop
  std::string step_time = "0";
  uint32_t workers = 2;
  std::string workload;               // resnet50 | unet3d | cosmoflow
  std::string preprocess = "auto";    // auto: jpeg-decode when the files are JPEGs, else none
  std::string preprocess_cost = "0";  // extra CPU work per sample (loader.preprocess.cost)
  std::string normalize_on = "host";  // loader.preprocess.normalize_on
};
int BenchDirCommand(const BenchDirCommandOptions& options);

struct KernelsCommandOptions {
  std::string sizes = "1024,4096,8192";
  std::string shapes;  // extra MxNxK shapes for the bf16 tensor-core rungs, comma-separated
  std::string json;
  std::string profile;  // a directory: ncu on every rung (app/kernel_profile.h)
  bool quiet = false;
};
int KernelsCommand(const KernelsCommandOptions& options);

struct ReportCommandOptions {
  std::vector<std::string> inputs;
  std::string output = "report.html";
  bool quiet = false;
};
int ReportCommand(const ReportCommandOptions& options);

// `bench-checkpoint DIR`: write a checkpoint with fsync, evict it, read it back; MLPerf
// Storage v2.0's checkpoint benchmark (app/bench_checkpoint.h).
struct BenchCheckpointCommandOptions {
  std::string dir;
  std::string model;  // an MLPerf Storage v2.0 preset (kCheckpointPresets): the job's size
  std::string size;   // the job's size (overrides the model's); one of the two is needed
  // Ranks the checkpoint is split over, each writing its share to its own file: threads of
  // this process (default 1); under mpirun the job's ranks (the default; another count is
  // refused).
  std::optional<uint32_t> ranks;
  uint32_t runs = 5;                                 // MLPerf Storage's 5
  std::string block;                                 // empty: CheckpointOptions's block
  uint32_t io_depth = CheckpointOptions{}.io_depth;  // writes (and reads) in flight per rank
  bool direct = false;                               // O_DIRECT
  bool fsync = CheckpointOptions{}.fsync;            // --no-fsync clears it
  bool read_into_buffer = false;                     // read back into the snapshot buffer
  std::string step_time;                             // with max_stall: the frequency advice
  std::string max_stall;                             // a share of the run: "5%" or 0.05
  std::string json;
  bool quiet = false;  // no progress line and no description above the table
};
int BenchCheckpointCommand(const BenchCheckpointCommandOptions& options);

}  // namespace stallscope

#endif  // STALLSCOPE_APP_COMMANDS_H_
