// The mpirun command line the multi-rank tests launch with (Open MPI): root allowed, sanitized
// builds' leak checks told about Open MPI's own allocations, every rank free to use every core.
#ifndef STALLSCOPE_TESTS_MPIRUN_H_
#define STALLSCOPE_TESTS_MPIRUN_H_

#include <cstdlib>
#include <string>

namespace stallscope::cli {

// mpirun for `ranks` ranks, root allowed; `quiet`: none of its own banners (-q, which also
// hides its note on which rank died).
inline std::string Mpirun(int ranks, bool quiet = true) {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  // Sanitized builds: Open MPI's own allocations are not ours to report (lsan_openmpi.supp).
  setenv("OMPI_MCA_mca_base_component_disable_dlclose", "1", 1);
  const char* lsan = std::getenv("LSAN_OPTIONS");
  const std::string ours = std::string("suppressions=") + LSAN_OPENMPI_SUPP +
                           ":fast_unwind_on_malloc=0:print_suppressions=0";
  if (!lsan || std::string(lsan).find(ours) == std::string::npos) {
    setenv("LSAN_OPTIONS", (lsan && *lsan ? std::string(lsan) + ":" : "").append(ours).c_str(), 1);
  }
  // --bind-to none: Open MPI would bind each rank to one core, and the loader's threads with it.
  return std::string("mpirun --oversubscribe --bind-to none ") + (quiet ? "-q " : "") + "-np " +
         std::to_string(ranks);
}

}  // namespace stallscope::cli

#endif  // STALLSCOPE_TESTS_MPIRUN_H_
