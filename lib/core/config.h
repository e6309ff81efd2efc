// lib/core: the environment variables hoshmem reads, parsed once at shmem_init. Every variable is
// listed in one table (config.cc) which also feeds SHMEM_INFO=1; docs/user-guide.md has the same
// table for users (//test/docs checks that every variable read here is in it).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace hoshmem {

struct Config {
  uint64_t symmetric_size;  // SHMEM_SYMMETRIC_SIZE
  bool debug;               // SHMEM_DEBUG
  bool info;                // SHMEM_INFO
  bool version;             // SHMEM_VERSION
  std::string atomics;      // HOSHMEM_ATOMICS: auto | sw | hw
  std::string coherent;     // HOSHMEM_COHERENT: auto | on | off
  uint64_t heap_base;       // HOSHMEM_HEAP_BASE: where the heap goes on every PE (0: anywhere)
  std::string heap_pages;   // HOSHMEM_HEAP_PAGES: auto | 4k | 2m | 1g
  bool share_globals;       // HOSHMEM_SHARE_GLOBALS
  std::string wait;         // HOSHMEM_WAIT: auto | spin | yield | sleep
  uint64_t sleep_timeout_us;  // HOSHMEM_SLEEP_TIMEOUT_US (0: the wait policy's own)
  std::string put_copy;       // HOSHMEM_PUT_COPY: auto | avx512 | avx2 | sse2 | generic
  std::string device;         // HOSHMEM_DEVICE: name[:port], empty for the first active port
  int ib_gid_index;           // HOSHMEM_IB_GID_INDEX (-1: auto)
  int ib_tc;                  // HOSHMEM_IB_TC (-1: auto)
  int ib_sl;                  // HOSHMEM_IB_SL (-1: auto)
  std::string transport;      // HOSHMEM_TRANSPORT: auto | rc | dc | ud
  uint64_t dci_count;         // HOSHMEM_DCI_COUNT: DC initiators per lane
  uint64_t pes_per_node;      // HOSHMEM_PES_PER_NODE (0: as the launcher places them)
  uint64_t ud_window;         // HOSHMEM_UD_WINDOW: datagrams in flight per peer
  uint64_t ud_rto_us;         // HOSHMEM_UD_RTO_US: first retransmission timeout
  uint64_t ud_give_up_ms;     // HOSHMEM_UD_GIVE_UP_MS: a silent peer is declared dead after this
  bool ud_progress_thread;    // HOSHMEM_UD_PROGRESS_THREAD
  std::string acc;            // HOSHMEM_ACC: auto | owner | caller | nic
  std::string am;             // HOSHMEM_AM: auto | ud | ring | off
  std::string progress;       // HOSHMEM_PROGRESS: pe | node (who serves a node's UD messages)
  std::string lock;           // HOSHMEM_LOCK: auto | mcs | hybrid
  std::string lock_home;      // HOSHMEM_LOCK_HOME: hash | pe0
  uint64_t lock_policy;       // HOSHMEM_LOCK_POLICY: migrate after this many (0: always)
};

// Reads and validates every variable; a bad value is fatal with the accepted range.
Config load_config();

// One line per variable: name, value in effect, where it came from, what it does.
void print_config(const Config &config, FILE *out);

}  // namespace hoshmem
