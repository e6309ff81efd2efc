#!/usr/bin/env python3
"""UCX's mlx5 WQEs against hoshmem's, field by field (run by wqe_compare_test.sh).

The model (test/softhca) and hoshmem's WQE writers (lib/transport/ib/wqe.cc) were written by the
same team: a misreading of the mlx5 formats shared by both would pass every other test. UCX's
rc_mlx5 and dc_mlx5 transports write their WQEs themselves too, and run unmodified on the model.
This runs ucx_perftest (server + client, each process a node of its own) and hoshmem's
tests/wqe_ops.c over the model with SOFTHCA_WQE_LOG set in the requester (the perftest client,
hoshmem's PE 0), takes one WQE per operation from each log, decodes both with the layouts of
rdma-core's <infiniband/mlx5dv.h> (and the masked-atomic segments of the PRM) and compares every
field. A field either must be equal, or may differ for a reason listed in LEGIT below (indices,
QP numbers, keys, addresses, signalling and fence bits, the target's DCT/LID/MAC/GID); a
difference of choice between the two programs is listed in EXPECTED with its reason, and must
occur (an expectation that no longer holds fails too, so the list stays true). Operand fields are
also checked against the values both programs used (ucx_perftest's stream tests send 0 until
their last, "sentinel", operation, which carries 2: compare 0, swap 2, add 2; add_lat adds 1;
tests/wqe_ops.c uses the same values), so byte order is checked absolutely, not only relatively.

  wqe_compare.py --oshrun OSHRUN --ops WQE_OPS --softlib DIR [--configs a,b] [--keep DIR]
"""

import argparse
import glob
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

# ---------------------------------------------------------------------------------------------
# What runs

# op: (UCX UCT test arguments, hoshmem call in tests/wqe_ops.c, known operand values)
OPS = {
    "put_inline": (["-t", "put_bw", "-D", "short", "-s", "8"], "shmem_long_p(2)",
                   {"inline.data": "0200000000000000"}),
    "put_zcopy": (["-t", "put_bw", "-D", "zcopy", "-s", "1024"], "shmem_putmem(1024 bytes, heap)",
                  {"data[0].byte_count": 1024}),
    "get": (["-t", "get", "-D", "bcopy", "-s", "8"], "shmem_getmem(8 bytes, into heap)",
            {"data[0].byte_count": 8}),
    "add64": (["-t", "add_lat", "-s", "8"], "shmem_longlong_atomic_add(1)",
              {"atomic.add": 1, "atomic.compare": 0, "data[0].byte_count": 8}),
    "add64_again": (["-t", "add_lat", "-s", "8"],
                    "a 2nd shmem_longlong_atomic_add(1) (RC: from the fetch-add template)",
                    {"atomic.add": 1, "atomic.compare": 0, "data[0].byte_count": 8}),
    "fadd64": (["-t", "fadd", "-s", "8"], "shmem_longlong_atomic_fetch_add(2)",
               {"atomic.add": 2, "atomic.compare": 0, "data[0].byte_count": 8}),
    "cswap64": (["-t", "cswap", "-s", "8"], "shmem_longlong_atomic_compare_swap(0, 2)",
                {"atomic.swap": 2, "atomic.compare": 0, "data[0].byte_count": 8}),
    "swap64": (["-t", "swap", "-s", "8"], "shmem_longlong_atomic_swap(2)",
               {"atomic.swap": 2, "atomic.compare": 0, "atomic.swap_mask": 0xffffffffffffffff,
                "atomic.compare_mask": 0, "data[0].byte_count": 8}),
    "add32": (["-t", "add_mr", "-s", "4"], "shmem_int_atomic_add(2)",
              {"atomic.add": 2, "atomic.field_boundary": 0, "data[0].byte_count": 4}),
    "fadd32": (["-t", "fadd", "-s", "4"], "shmem_int_atomic_fetch_add(2)",
               {"atomic.add": 2, "atomic.field_boundary": 0, "data[0].byte_count": 4}),
    "cswap32": (["-t", "cswap", "-s", "4"], "shmem_int_atomic_compare_swap(0, 2)",
                {"atomic.swap": 2, "atomic.compare": 0, "atomic.swap_mask": 0xffffffff,
                 "atomic.compare_mask": 0xffffffff, "data[0].byte_count": 4}),
    "swap32": (["-t", "swap", "-s", "4"], "shmem_int_atomic_swap(2)",
               {"atomic.swap": 2, "atomic.compare": 0, "atomic.swap_mask": 0xffffffff,
                "atomic.compare_mask": 0, "data[0].byte_count": 4}),
}
ALL_OPS = list(OPS)
AV_OPS = ["put_inline", "fadd64", "cswap32"]  # enough to see a 48-byte vector before each kind

# name: (hoshmem transport, UCX transport, model knobs, UCX-only env, hoshmem-only env, ops, note)
CONFIGS = {
    "rc": ("rc", "rc_mlx5", {}, {}, {}, ALL_OPS, "InfiniBand port, RC"),
    "dc": ("dc", "dc_mlx5", {}, {}, {}, ALL_OPS,
           "InfiniBand port, DC: a 16-byte (compact) address vector in both"),
    "dc_av48": ("dc", "dc_mlx5", {"SOFTHCA_COMPACT_AV": "0"}, {}, {}, AV_OPS,
                "device without compact_address_vector: the 48-byte vector, no GRH"),
    # A port that requires a GRH and RoCE: both programs take the vector's GRH part from an
    # address handle (the model's ibv_create_ah, as rdma-core's mlx5_create_ah builds it); UCX is
    # told hoshmem's settings (hop limit 64; RoCE: GID 3, the RoCE v2 IPv4 one hoshmem picks,
    # SL 3, traffic class 106), so the fields compare equal where both chose the same.
    "dc_ib_grh": ("dc", "dc_mlx5", {"SOFTHCA_LINK": "ib-grh"},
                  {"UCX_IB_IS_GLOBAL": "y", "UCX_DC_MLX5_HOP_LIMIT": "64"}, {}, AV_OPS,
                  "InfiniBand port that requires a GRH: the 48-byte vector with GRH"),
    "dc_roce": ("dc", "dc_mlx5", {"SOFTHCA_LINK": "roce"},
                {"UCX_IB_GID_INDEX": "3", "UCX_DC_MLX5_SL": "3",
                 "UCX_DC_MLX5_TRAFFIC_CLASS": "106", "UCX_DC_MLX5_HOP_LIMIT": "64"},
                {"HOSHMEM_IB_GID_INDEX": "3", "HOSHMEM_IB_SL": "3", "HOSHMEM_IB_TC": "106"},
                AV_OPS, "RoCE port: the 48-byte vector, RoCE v2"),
}

# ---------------------------------------------------------------------------------------------
# What may differ

# Fields whose values legitimately differ between two programs doing the same operation.
LEGIT = {
    "ctrl.wqe_index": "position in each program's send queue",
    "ctrl.qpn": "each program's own QP",
    "ctrl.fence": "ordering is each program's business (fence mode bits)",
    "ctrl.ce": "signalling is each program's business (UCX asks a CQE for most WQEs)",
    "av.dc_key": "each program's DC access key (UCX: 0x1ee7a330)",
    "av.dct": "the target's DCT number",
    "av.rlid": "the target's LID (RoCE: the UDP source port the address handle chose)",
    "av.rmac": "the target's MAC",
    "av.rgid": "the target's GID",
    "raddr.raddr": "the target word's address",
    "raddr.rkey": "the target's key",
    "data.lkey": "the local buffer's key",
    "data.addr": "the local buffer",
    "inline.pad": "bytes after inline data, up to the 16-byte boundary, are not read",
}

# Differences of choice (config, op or "*", field): reason. Each must occur.
EXPECTED = {
    ("dc_roce", "*", "av.flow_label"):
        "UCX gives its RoCE address handles flow label 0xfffff, hoshmem 0: the same 20 bits of "
        "grh_gid_fl, each program's choice (on RoCE v2 it only feeds ECMP hashing)",
}

# ---------------------------------------------------------------------------------------------
# Decoding (rdma-core mlx5dv.h layouts, big-endian fields)

OPCODES = {0x00: "NOP", 0x08: "RDMA_WRITE", 0x09: "RDMA_WRITE_IMM", 0x0a: "SEND",
           0x0b: "SEND_IMM", 0x10: "RDMA_READ", 0x11: "ATOMIC_CS", 0x12: "ATOMIC_FA",
           0x14: "ATOMIC_MASKED_CS", 0x15: "ATOMIC_MASKED_FA"}
RADDR_OPS = {0x08, 0x09, 0x10, 0x11, 0x12, 0x14, 0x15}


class DecodeError(Exception):
    pass


def be(b, off, n):
    if off + n > len(b):
        raise DecodeError("WQE ends at byte %d, field at %d..%d" % (len(b), off, off + n))
    return int.from_bytes(b[off:off + n], "big")


def decode(qtype, b):
    """The WQE's fields in order: [(name, value, width in bytes or None for raw bytes)]."""
    f = []

    def add(name, value, width=None):
        f.append((name, value, width))

    w0 = be(b, 0, 4)
    opmod, opcode = w0 >> 24, w0 & 0xff
    add("ctrl.opcode", opcode, 1)
    add("ctrl.opmod", opmod, 1)
    add("ctrl.wqe_index", (w0 >> 8) & 0xffff, 2)
    w1 = be(b, 4, 4)
    ds = w1 & 0x3f
    add("ctrl.qpn", w1 >> 8, 3)
    add("ctrl.ds", ds, 1)
    add("ctrl.qpn_ds.reserved", (w1 >> 6) & 3, 1)
    add("ctrl.signature", b[8], 1)
    add("ctrl.dci_stream_channel_id", be(b, 9, 2), 2)
    fm = b[11]
    add("ctrl.fence", fm >> 5, 1)
    add("ctrl.fm_ce_se.bit4", (fm >> 4) & 1, 1)
    add("ctrl.ce", (fm >> 2) & 3, 1)
    add("ctrl.se", (fm >> 1) & 1, 1)
    add("ctrl.fm_ce_se.bit0", fm & 1, 1)
    add("ctrl.imm", be(b, 12, 4), 4)
    if len(b) != ds * 16:
        raise DecodeError("logged %d bytes for ds %d" % (len(b), ds))
    off = 16
    if qtype in ("DCI", "UD"):  # mlx5_wqe_av
        dqp = be(b, off + 8, 4)
        extended = dqp >> 31
        add("av.dc_key", be(b, off, 8), 8)
        add("av.extended", extended, 1)
        add("av.dqp_dct.reserved", (dqp >> 24) & 0x7f, 1)
        add("av.dct", dqp & 0xffffff, 3)
        add("av.stat_rate", b[off + 12] >> 4, 1)
        add("av.sl", b[off + 12] & 0xf, 1)
        add("av.fl_mlid", b[off + 13], 1)
        add("av.rlid", be(b, off + 14, 2), 2)
        if extended:
            g = be(b, off + 28, 4)
            add("av.reserved0", be(b, off + 16, 4), 4)
            add("av.rmac", b[off + 20:off + 26].hex(), None)
            add("av.tclass", b[off + 26], 1)
            add("av.hop_limit", b[off + 27], 1)
            add("av.grh_gid_fl.bit31", g >> 31, 1)
            add("av.grh", (g >> 30) & 1, 1)
            add("av.grh_gid_fl.bits29_28", (g >> 28) & 3, 1)
            add("av.sgid_index", (g >> 20) & 0xff, 1)
            add("av.flow_label", g & 0xfffff, 3)
            add("av.rgid", b[off + 32:off + 48].hex(), None)
            off += 48
        else:
            off += 16
    if opcode in RADDR_OPS:  # mlx5_wqe_raddr_seg
        add("raddr.raddr", be(b, off, 8), 8)
        add("raddr.rkey", be(b, off + 8, 4), 4)
        add("raddr.reserved", be(b, off + 12, 4), 4)
        off += 16
    if opcode in (0x11, 0x12):  # mlx5_wqe_atomic_seg
        add("atomic.swap" if opcode == 0x11 else "atomic.add", be(b, off, 8), 8)
        add("atomic.compare", be(b, off + 8, 8), 8)
        off += 16
    elif opcode in (0x14, 0x15):  # extended atomics: opmod 0x8 | log2(bytes) - 2
        if opmod not in (0x8, 0x9):
            raise DecodeError("extended atomic with opmod 0x%x (not 4 or 8 bytes)" % opmod)
        n = 4 if opmod == 0x8 else 8
        if opcode == 0x14:  # masked compare-swap: swap, compare, swap mask, compare mask
            for i, name in enumerate(("swap", "compare", "swap_mask", "compare_mask")):
                add("atomic." + name, be(b, off + i * n, n), n)
            off += 16 if n == 4 else 32
        else:  # masked fetch-add: add, field boundary (4 bytes: then 8 reserved)
            add("atomic.add", be(b, off, n), n)
            add("atomic.field_boundary", be(b, off + n, n), n)
            if n == 4:
                add("atomic.reserved", be(b, off + 8, 8), 8)
            off += 16
    # Gather list: inline segments (mlx5_wqe_inl_data_seg + data) and data pointers.
    k = 0
    while off < ds * 16:
        bc = be(b, off, 4)
        if bc & 0x80000000:  # MLX5_INLINE_SEG
            n = bc & 0x3ff
            end = off + 4 + n
            padded = (end + 15) & ~15
            if padded > len(b):
                raise DecodeError("inline data runs past the WQE")
            add("inline.byte_count", bc, 4)
            add("inline.data", b[off + 4:end].hex(), None)
            add("inline.pad", b[end:padded].hex(), None)
            off = padded
        else:  # mlx5_wqe_data_seg
            add("data[%d].byte_count" % k, bc, 4)
            add("data[%d].lkey" % k, be(b, off + 4, 4), 4)
            add("data[%d].addr" % k, be(b, off + 8, 8), 8)
            off += 16
            k += 1
    return f


def legit_reason(field):
    return LEGIT.get(re.sub(r"\[\d+\]", "", field))


def show(field, value, width):
    if width is None:
        return value if value else "-"
    if field == "ctrl.opcode":
        return "0x%02x %s" % (value, OPCODES.get(value, "?"))
    if width == 1 or field == "ctrl.wqe_index":
        return str(value)
    return "0x%0*x" % (2 * width, value)


# ---------------------------------------------------------------------------------------------
# Logs

def read_log(paths):
    """SOFTHCA_WQE_LOG lines: [(qp type, qpn, index, bytes)]."""
    out = []
    for p in sorted(paths):
        with open(p) as fh:
            for line in fh:
                parts = line.split()
                if len(parts) == 5 and parts[0] == "wqe":
                    out.append((parts[1], int(parts[2], 16), int(parts[3]),
                                bytes.fromhex(parts[4])))
    return out


def ucx_pick(wqes):
    """ucx_perftest's last operation (its sentinel; add_lat's last add of 1): the last WQE that
    is not a NOP (UCX ends with a NOP that asks a completion)."""
    for w in reversed(wqes):
        if w[3][3] != 0x00:
            return w
    return None


def hoshmem_pick(wqes, raddr):
    """The first WQE to the operation's own target word (flushing writes of 0 bytes follow it)."""
    for w in wqes:
        try:
            fields = dict((n, v) for n, v, _ in decode(w[0], w[3]))
        except DecodeError:
            continue
        if fields.get("raddr.raddr") == raddr:
            return w
    return None


# ---------------------------------------------------------------------------------------------
# Running the programs

class Runner:
    def __init__(self, args, work):
        self.args, self.work = args, work
        self.token = "wqecmp%08x" % random.getrandbits(32)
        self.port = 20000 + random.randrange(19000)
        base = dict(os.environ)
        base["LD_LIBRARY_PATH"] = args.softlib
        base["LD_PRELOAD"] = os.path.join(args.softlib, "libsofthca_kernel.so")
        base["UCX_VFS_ENABLE"] = "n"
        base["UCX_NET_DEVICES"] = "mlx5_0:1"
        for k in [k for k in base if k.startswith("SOFTHCA_WQE_LOG")]:
            del base[k]
        self.base = base

    def cleanup_fabric(self, fabric):
        for p in glob.glob("/dev/shm/softhca.%s*" % fabric):
            try:
                os.unlink(p)
            except OSError:
                pass

    def ucx(self, cfg, op, log_prefix):
        """One ucx_perftest pair; returns (ok, message)."""
        _, tl, knobs, ucx_env, _, _, _ = CONFIGS[cfg]
        test = OPS[op][0] + ["-x", tl, "-d", "mlx5_0:1", "-n", "10", "-w", "0"]
        for _attempt in range(3):
            self.port += 1
            fabric = "%s-%d" % (self.token, self.port)
            env = dict(self.base, SOFTHCA_FABRIC=fabric, TMPDIR=self.work, **knobs, **ucx_env)
            srv_out = os.path.join(self.work, "srv.out")
            cli_out = os.path.join(self.work, "cli.out")
            with open(srv_out, "w") as so:
                srv = subprocess.Popen(["timeout", "60", "stdbuf", "-oL", "ucx_perftest", "-p",
                                        str(self.port)], env=env, stdout=so,
                                       stderr=subprocess.STDOUT)
            deadline = time.time() + 30
            while time.time() < deadline and srv.poll() is None:
                with open(srv_out) as fh:
                    if "Waiting for connection" in fh.read():
                        break
                time.sleep(0.05)
            cenv = dict(env, SOFTHCA_WQE_LOG=log_prefix)
            ok = False
            for _ in range(50):
                with open(cli_out, "w") as co:
                    rc = subprocess.call(["timeout", "60", "ucx_perftest", "localhost", "-p",
                                          str(self.port)] + test, env=cenv, stdout=co,
                                         stderr=subprocess.STDOUT)
                with open(cli_out) as fh:
                    text = fh.read()
                if rc == 0:
                    ok = True
                    break
                if not re.search("connect\\(\\) failed|Connection refused", text) or \
                        srv.poll() is not None:
                    break
                for p in glob.glob(log_prefix + ".*"):
                    os.unlink(p)
                time.sleep(0.1)
            if not ok and srv.poll() is None:
                srv.kill()
            try:
                srv.wait(timeout=30)
            except subprocess.TimeoutExpired:
                srv.kill()
                srv.wait()
            self.cleanup_fabric(fabric)
            with open(srv_out) as fh:
                srv_text = fh.read()
            if "Address already in use" in srv_text:
                for p in glob.glob(log_prefix + ".*"):
                    os.unlink(p)
                continue
            if ok and "Final:" in text:
                return True, ""
            return False, "ucx_perftest %s failed:\n--- server\n%s\n--- client\n%s" % (
                " ".join(test), srv_text[-1500:], text[-1500:])
        return False, "ucx_perftest: no free port"

    def hoshmem(self, cfg, log_prefix):
        """tests/wqe_ops.c on 2 PEs, each a node; returns (targets, pe0 pid, error)."""
        transport, _, knobs, _, hosh_env, _, _ = CONFIGS[cfg]
        fabric = "%s-h%s" % (self.token, cfg)
        env = dict(self.base, SOFTHCA_FABRIC=fabric, SOFTHCA_WQE_LOG=log_prefix,
                   HOSHMEM_PES_PER_NODE="1", HOSHMEM_ATOMICS="hw", HOSHMEM_TRANSPORT=transport,
                   **knobs, **hosh_env)
        env.pop("LD_PRELOAD")  # as run_test.sh: hoshmem needs no kernel-interface shim
        p = subprocess.run(["timeout", "90", self.args.oshrun, "-np", "2", "--bind-to", "none",
                            self.args.ops], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        self.cleanup_fabric(fabric)
        targets, pid = {}, None
        for line in p.stdout.splitlines():
            m = re.search(r"wqe-target (\S+) 0x([0-9a-f]+)", line)
            if m:
                targets[m.group(1)] = int(m.group(2), 16)
            m = re.search(r"wqe-pe0 pid (\d+)", line)
            if m:
                pid = int(m.group(1))
        if p.returncode != 0 or "wqe-ops done" not in p.stdout or pid is None:
            return None, None, "wqe_ops failed (status %d):\n%s" % (p.returncode, p.stdout[-3000:])
        return targets, pid, None


# The comparison's own check: hoshmem WQEs of this run with one encoding error put in (config,
# op, what, how) must be reported.
def _swap_bytes(b, off, n):
    b[off:off + n] = b[off:off + n][::-1]


def _set_opmod(b, v):
    b[0] = v


MUTATIONS = [
    ("rc", "fadd64", "64-bit addend little-endian", lambda b: _swap_bytes(b, 32, 8)),
    ("rc", "cswap32", "opmod 0x9 (8 bytes) on a 4-byte masked compare-swap",
     lambda b: _set_opmod(b, 0x09)),
    ("rc", "fadd32", "32-bit addend and field boundary exchanged",
     lambda b: b.__setitem__(slice(32, 40), b[36:40] + b[32:36])),
    ("rc", "put_inline", "inline segment without MLX5_INLINE_SEG",
     lambda b: b.__setitem__(32, b[32] & 0x7f)),
    ("rc", "swap64", "masks before values in the 8-byte masked compare-swap",
     lambda b: b.__setitem__(slice(32, 64), b[48:64] + b[32:48])),
    ("dc", "put_inline", "the compact address vector marked extended (MLX5_EXTENDED_UD_AV)",
     lambda b: b.__setitem__(24, b[24] | 0x80)),
    ("dc", "get", "the DC key in the dqp_dct word's place",
     lambda b: b.__setitem__(slice(16, 28), b[24:28] + b[16:24])),
]


# ---------------------------------------------------------------------------------------------
# Comparing

def compare(cfg, op, ucx_wqe, hosh_wqe):
    """Returns (ok, lines, summary dict)."""
    lines, problems = [], []
    u = decode(ucx_wqe[0], ucx_wqe[3])
    h = decode(hosh_wqe[0], hosh_wqe[3])
    un, hn = [n for n, _, _ in u], [n for n, _, _ in h]
    summary = {"match": [], "legit": [], "expected": [], "mismatch": []}
    if un != hn:
        problems.append("segment layout differs:\n      UCX:     %s\n      hoshmem: %s" %
                        (" ".join(un), " ".join(hn)))
    hv = dict((n, (v, w)) for n, v, w in h)
    known = OPS[op][2]
    lines.append("   %-28s %-22s %-22s %s" % ("field", "UCX", "hoshmem", "verdict"))
    expected_seen = set()
    for name, uval, width in u:
        if name not in hv:
            lines.append("   %-28s %-22s %-22s %s" % (name, show(name, uval, width), "(absent)",
                                                      "MISMATCH"))
            summary["mismatch"].append(name)
            continue
        hval = hv[name][0]
        reason = legit_reason(name)
        exp = EXPECTED.get((cfg, op, name)) or EXPECTED.get((cfg, "*", name))
        if reason:
            verdict = "differs legitimately" if uval != hval else "equal (may differ)"
            summary["legit"].append(name)
        elif uval == hval:
            if exp:
                verdict = "EXPECTED DIFFERENCE DID NOT OCCUR"
                problems.append("%s: expected to differ (%s) but equal" % (name, exp))
                summary["mismatch"].append(name)
            else:
                verdict = "match"
                summary["match"].append(name)
        elif exp:
            verdict = "expected difference"
            expected_seen.add(name)
            summary["expected"].append((name, exp))
        else:
            verdict = "MISMATCH"
            summary["mismatch"].append(name)
            problems.append("%s: UCX %s, hoshmem %s" % (name, show(name, uval, width),
                                                       show(name, hval, width)))
        if name in known:
            want = known[name]
            for who, val in (("UCX", uval), ("hoshmem", hval)):
                if val != want:
                    problems.append("%s: %s encodes %s, the operation's value is %s" %
                                    (name, who, show(name, val, width), show(name, want, width)))
                    verdict += "; %s VALUE WRONG" % who
            verdict += " (= %s, the value used)" % show(name, want, width)
        lines.append("   %-28s %-22s %-22s %s" % (name, show(name, uval, width),
                                                 show(name, hval, width), verdict))
    for name in hn:
        if name not in dict((n, 1) for n in un):
            lines.append("   %-28s %-22s %-22s %s" % (name, "(absent)",
                                                      show(name, hv[name][0], hv[name][1]),
                                                      "MISMATCH"))
            summary["mismatch"].append(name)
    for name in known:
        if name not in hv or name not in un:
            problems.append("%s: the operation's value %s is in no field of both WQEs" %
                            (name, known[name]))
    for key, reason in EXPECTED.items():
        if key[0] == cfg and key[1] in (op, "*") and key[2] not in expected_seen and \
                key[2] not in summary["mismatch"]:
            problems.append("%s: expected difference did not occur (%s)" % (key[2], reason))
    lines.append("   UCX bytes:     " + " ".join(ucx_wqe[3][i:i + 16].hex()
                                                 for i in range(0, len(ucx_wqe[3]), 16)))
    lines.append("   hoshmem bytes: " + " ".join(hosh_wqe[3][i:i + 16].hex()
                                                 for i in range(0, len(hosh_wqe[3]), 16)))
    for p in problems:
        lines.append("   FAIL: " + p)
    return not problems, lines, summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--oshrun", required=True)
    ap.add_argument("--ops", required=True)
    ap.add_argument("--softlib", required=True)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--keep", help="keep the logs in this directory")
    args = ap.parse_args()
    args.softlib = os.path.abspath(args.softlib)
    args.oshrun = os.path.abspath(args.oshrun)
    args.ops = os.path.abspath(args.ops)
    work = args.keep or tempfile.mkdtemp(prefix="wqecmp.", dir=os.environ.get("TEST_TMPDIR"))
    os.makedirs(work, exist_ok=True)
    runner = Runner(args, work)
    passed, failed, rows, failures = 0, 0, [], []
    picked = {}
    print("Legitimate differences (field: why):")
    for k, v in LEGIT.items():
        print("  %-16s %s" % (k, v))
    print("Expected differences of choice (config, op, field: why):")
    for k, v in EXPECTED.items():
        print("  %s %s %s: %s" % (k[0], k[1], k[2], v))
    print("Not compared: hoshmem writes puts up to its inline limit inline, so its zero-copy put "
          "is compared at 1024 bytes (UCX -t put_bw -D zcopy -s 1024); UCX's 8-byte get is "
          "get_bcopy (rc/dc_mlx5 take get_zcopy from 65 bytes), the same RDMA_READ + data "
          "segment as hoshmem's zero-copy get.")
    try:
        for cfg in args.configs.split(","):
            transport, tl, knobs, ucx_env, hosh_env, ops, note = CONFIGS[cfg]
            print("\n######## %s: %s (hoshmem HOSHMEM_TRANSPORT=%s, UCX -x %s; %s)" % (
                cfg, note, transport, tl,
                " ".join("%s=%s" % kv for kv in {**knobs, **ucx_env, **hosh_env}.items())
                or "defaults"))
            hprefix = os.path.join(work, "hosh-" + cfg)
            targets, pid, err = runner.hoshmem(cfg, hprefix)
            hwqes = read_log([hprefix + ".%d" % pid]) if pid else []
            for op in ops:
                label = "%s %s" % (cfg, op)
                if err:
                    failed += 1
                    failures.append(label)
                    rows.append((cfg, op, "-", "-", "FAIL (hoshmem did not run)"))
                    print("== %s\n   FAIL: %s" % (label, err))
                    continue
                uprefix = os.path.join(work, "ucx-%s-%s" % (cfg, op))
                ok, msg = runner.ucx(cfg, op, uprefix)
                uw = ucx_pick(read_log(glob.glob(uprefix + ".*"))) if ok else None
                hw = hoshmem_pick(hwqes, targets.get(op)) if op in targets else None
                print("== %s: UCX ucx_perftest %s  vs  hoshmem %s" % (
                    label, " ".join(OPS[op][0]), OPS[op][1]))
                if not ok or uw is None or hw is None:
                    failed += 1
                    failures.append(label)
                    why = msg if not ok else ("no UCX WQE logged" if uw is None
                                              else "no hoshmem WQE to the target logged")
                    print("   FAIL: " + why)
                    rows.append((cfg, op, "-", "-", "FAIL (%s)" % why.split("\n")[0]))
                    continue
                try:
                    good, lines, s = compare(cfg, op, uw, hw)
                except DecodeError as e:
                    good, lines, s = False, ["   FAIL: cannot decode: %s" % e], None
                print("\n".join(lines))
                picked[(cfg, op)] = (uw, hw)
                if good:
                    passed += 1
                else:
                    failed += 1
                    failures.append(label)
                opname = "%s/%x ds %d" % (OPCODES.get(hw[3][3], "?"), hw[3][0], hw[3][7] & 0x3f)
                if s:
                    res = "ok" if good else "FAIL: " + ", ".join(s["mismatch"] or ["see above"])
                    rows.append((cfg, op, opname, "%d match, %d legit" % (
                        len(s["match"]), len(s["legit"])),
                        res + ("; expected: " + ", ".join(n for n, _ in s["expected"])
                               if s["expected"] else "")))
                else:
                    rows.append((cfg, op, opname, "-", "FAIL (decode)"))
        print("\n######## the comparison's own check: a hoshmem WQE of this run with an "
              "encoding error put in must be reported")
        for cfg, op, what, mutate in MUTATIONS:
            if (cfg, op) not in picked:
                continue
            uw, hw = picked[(cfg, op)]
            bad = bytearray(hw[3])
            mutate(bad)
            try:
                good, _, s = compare(cfg, op, uw, (hw[0], hw[1], hw[2], bytes(bad)))
                found = ", ".join(s["mismatch"]) or "value checks"
            except DecodeError as e:
                good, found = False, "cannot decode: %s" % e
            label = "self-check %s %s: %s" % (cfg, op, what)
            if good:
                failed += 1
                failures.append(label)
                print("FAIL: %s: not reported" % label)
                rows.append(("self " + cfg, op, "-", "-", "FAIL: not reported: " + what))
            else:
                passed += 1
                print("ok: %s: reported (%s)" % (label, found))
                rows.append(("self " + cfg, op, "-", "-", "reported: " + what))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("\n%-10s %-11s %-24s %-20s %s" % ("config", "operation", "opcode/opmod, ds",
                                            "fields", "result"))
    for r in rows:
        print("%-10s %-11s %-24s %-20s %s" % r)
    print("\n%d passed, %d failed" % (passed, failed))
    for f in failures:
        print("FAIL: " + f)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
