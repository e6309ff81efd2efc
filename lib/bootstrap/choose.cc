// Which bootstrap a process gets: what its launcher put in the environment decides.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "lib/base/error.h"
#include "lib/bootstrap/bootstrap_impl.h"

namespace hoshmem {
namespace {

// The launcher's namespace as the program started. Open MPI's MPI_Init, run under a launcher it
// does not know (oshrun), makes itself a singleton and overwrites PMIX_NAMESPACE: shmem_init would
// then join a job of one PE and say nothing.
char g_start_namespace[256];
int g_start_rank = -1;
__attribute__((constructor)) void remember_start_namespace() {
  if (const char *ns = getenv("PMIX_NAMESPACE"))
    snprintf(g_start_namespace, sizeof g_start_namespace, "%s", ns);
  if (const char *r = getenv("PMIX_RANK")) g_start_rank = atoi(r);
}

}  // namespace

std::unique_ptr<Bootstrap> make_bootstrap() {
  const char *ns = getenv("PMIX_NAMESPACE");
  if (g_start_namespace[0] && (!ns || strcmp(ns, g_start_namespace) != 0)) {
    // oshrun's namespace is the job's secret: not printed
    const bool oshrun = strncmp(g_start_namespace, "oshrun.", 7) == 0;
    set_error_identity(g_start_rank);  // the rank the launcher gave
    fatal("shmem_init",
          "PMIX_NAMESPACE changed after the program started (was %.60s, now %.60s): something "
          "(MPI_Init under oshrun?) replaced the launcher's job; start programs that use MPI "
          "with mpirun",
          oshrun ? "oshrun's" : g_start_namespace, ns ? ns : "unset");
  }
  // A PMIx launcher (oshrun, mpirun, prterun, srun --mpi=pmix) always exports the namespace and
  // rank; a PMI launcher (Hydra, srun --mpi=pmi2) the socket of its server. Without either there
  // is no one to talk to and the process runs as a singleton.
  if (getenv("PMIX_NAMESPACE") && getenv("PMIX_RANK")) return make_pmix_bootstrap();
  if (getenv("PMI_FD")) {
    // PMI-1 by default: Hydra and Slurm's pmi2 plugin serve both, and MPICH 4.0's Hydra has no
    // PMI-2 abort (shmem_global_exit's status would be lost).
    const char *v = getenv("HOSHMEM_PMI");
    if (!v || !*v || strcmp(v, "pmi1") == 0) return make_pmi_bootstrap(1);
    if (strcmp(v, "pmi2") == 0) return make_pmi_bootstrap(2);
    fatal("shmem_init", "HOSHMEM_PMI=%s: accepted values are pmi1 and pmi2", v);
  }
  if (getenv("PMI_PORT"))
    fatal("shmem_init", "the launcher offers PMI only through PMI_PORT; hoshmem speaks PMI through "
                        "PMI_FD (Hydra, srun --mpi=pmi2) or PMIx");
  return make_singleton_bootstrap();
}

}  // namespace hoshmem
