#include "exec_knobs.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace softhca {

long env_knob(const char* name, long def, long lo, long hi) {
  const char* e = getenv(name);
  if (!e || !*e) return def;
  char* end;
  long v = strtol(e, &end, 0);
  if (*end || v < lo || v > hi) {
    fprintf(stderr, "softhca: %s=%s rejected: accepted range is %ld..%ld\n", name, e, lo, hi);
    exit(1);
  }
  return v;
}

uint64_t env_knob_us(const char* name, double hi_us) {
  const char* e = getenv(name);
  if (!e || !*e) return 0;
  char* end;
  double v = strtod(e, &end);
  // !(v >= 0) also catches NaN; strtod accepts "inf", which the upper bound rejects.
  if (*end || end == e || !(v >= 0) || v > hi_us) {
    fprintf(stderr, "softhca: %s=%s rejected: accepted range is 0..%.0f (microseconds, fractions allowed)\n",
            name, e, hi_us);
    exit(1);
  }
  return uint64_t(std::llround(v * 1000));
}

namespace {

ExecKnobs load() {
  ExecKnobs k;
  if (const char* e = getenv("SOFTHCA_DOORBELL"); e && *e) {
    if (!strcmp(e, "trap")) k.doorbell_trap = true;
    else if (strcmp(e, "poll")) {
      fprintf(stderr, "softhca: SOFTHCA_DOORBELL=%s rejected: accepted values are poll, trap\n", e);
      exit(1);
    }
  }
  k.doorbell_spin_us = uint32_t(env_knob("SOFTHCA_DOORBELL_SPIN_US", 100, 0, 1000000));
  k.doorbell_in_fault = env_knob("SOFTHCA_DOORBELL_IN_FAULT", 1, 0, 1) != 0;
  // SOFTHCA_CHAOS=1 turns every timing knob on; each can still be set on its own (0 turns it off).
  bool chaos = env_knob("SOFTHCA_CHAOS", 0, 0, 1) != 0;
  k.defer = env_knob("SOFTHCA_DEFER", chaos, 0, 1) != 0;
  k.defer_us = uint32_t(env_knob("SOFTHCA_DEFER_US", 20, 0, 10000000));
  k.completion_delay_us = uint32_t(env_knob("SOFTHCA_COMPLETION_DELAY_US", chaos ? 50 : 0, 0, 1000000));
  k.late_source = env_knob("SOFTHCA_LATE_SOURCE", chaos, 0, 1) != 0;
  k.reorder = env_knob("SOFTHCA_REORDER", chaos, 0, 1) != 0;
  // Not part of SOFTHCA_CHAOS: it changes no order and exposes no data race, only the latency of
  // a thread woken through a completion channel (see wakeup.h).
  k.event_delay_ns = env_knob_us("SOFTHCA_EVENT_DELAY_US", 10e6);
  return k;
}

}  // namespace

const ExecKnobs& exec_knobs() {
  static ExecKnobs k = load();
  return k;
}

}  // namespace softhca

namespace softhca {
namespace {
// Read (and bad values rejected) when the library loads, not first inside a post.
const bool g_loaded = (exec_knobs(), true);
}  // namespace
}  // namespace softhca
