// softhca WQE log (SOFTHCA_WQE_LOG=<prefix>): every send WQE the model executes, as the program
// wrote it, appended to <prefix>.<pid> as one line of text per WQE, for comparing what different
// programs write for the same operation (tests/wqe_compare_test.sh). Off by default.
#pragma once
#include <cstdint>

#include "model.h"

namespace softhca {

// True when SOFTHCA_WQE_LOG is set (read once).
bool wqe_log_on();
// Records one WQE of `qp` that starts at BB `start`: its `len` raw bytes (ds * 16, through the
// ring's wrap) with the QP's type and number. Lines: "wqe <RC|UD|DCI> <qpn hex> <index> <hex>".
void wqe_log(const Qp* qp, uint32_t start, const uint8_t* bytes, uint32_t len);

}  // namespace softhca
