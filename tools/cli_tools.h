// The command-line wiring (CLI11) of stallscope's tool commands — gen, bench-dir,
// bench-checkpoint, calibrate, kernels, report — beside tools/stallscope.cc, which wires run,
// simulate, sweep and validate. Each Add* adds one subcommand whose options fill the command's
// options struct (app/commands.h).
#ifndef STALLSCOPE_TOOLS_CLI_TOOLS_H_
#define STALLSCOPE_TOOLS_CLI_TOOLS_H_

#include <CLI/CLI.hpp>

#include "app/advise_command.h"
#include "app/commands.h"

namespace stallscope::cli {

CLI::App* AddGen(CLI::App& app, GenCommandOptions& gen_o);
CLI::App* AddBenchDir(CLI::App& app, BenchDirCommandOptions& bench);
CLI::App* AddBenchCheckpoint(CLI::App& app, BenchCheckpointCommandOptions& bc);
CLI::App* AddCalibrate(CLI::App& app, CalibrateCommandOptions& co);
CLI::App* AddKernels(CLI::App& app, KernelsCommandOptions& ko);
CLI::App* AddReport(CLI::App& app, ReportCommandOptions& rep);
CLI::App* AddAdvise(CLI::App& app, AdviseCommandOptions& ao);

}  // namespace stallscope::cli

#endif  // STALLSCOPE_TOOLS_CLI_TOOLS_H_
