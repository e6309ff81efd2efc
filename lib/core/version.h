// lib/core: the library's own version (the OpenSHMEM version it implements is in shmem.h).
#pragma once
#define HOSHMEM_VERSION "0.1.0"
