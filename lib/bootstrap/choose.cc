// Which bootstrap a process gets: what its launcher put in the environment decides.
#include <cstdlib>
#include <cstring>

#include "lib/base/error.h"
#include "lib/bootstrap/bootstrap_impl.h"

namespace hoshmem {

std::unique_ptr<Bootstrap> make_bootstrap() {
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
