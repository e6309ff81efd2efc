/* hoshmem: <mpp/shmemx.h>, the extensions header under the SGI/Cray SHMEM name. It is <shmemx.h>. */
#include "../shmemx.h"
