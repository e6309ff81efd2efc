/* Open MPI's mpi.h for the Bazel build. Debian installs it in /usr/lib/x86_64-linux-gnu/openmpi/
 * include (what `mpicc --showme:compile` adds), a directory Bazel refuses as an include path
 * (outside its execution root); Debian's libopenmpi-dev also links it as
 * /usr/include/x86_64-linux-gnu/openmpi, under a system directory the compiler already searches.
 * Only mpi.h is wanted: that directory also holds Open MPI's own shmem.h (OSHMEM), which must not
 * shadow hoshmem's. */
#include <openmpi/mpi.h>
