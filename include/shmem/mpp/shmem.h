/* hoshmem: <mpp/shmem.h>, the header name of SGI and Cray SHMEM that many programs and test
 * suites include. It is <shmem.h>. */
#include "../shmem.h"
