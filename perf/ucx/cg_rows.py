#!/usr/bin/env python3
"""Per-operation instruction counts from callgrind profiles, for perf/ucx/instructions.sh.

  cg_rows.py MODEL_DIR N TOP WAIT_RE FILE...

FILE: one profile per row (callgrind --dump-instr=yes --separate-callers=6 --compress-strings=no
--compress-pos=no, one CALLGRIND_DUMP_STATS_AT(row) per row), N: calls per row, WAIT_RE: the
functions a waiting loop calls once per look. Prints per file:
  row <name> <total> <model> <wait> <spin> <polls> <unsure>   (instructions in the whole row)
  top <name> <cost> <object>:<function>   (the TOP largest self costs, model and wait excluded)
total: everything collected. model: instructions of objects under MODEL_DIR (the software HCA's
libibverbs/libmlx5/kernel shim: hoshmem's UD verbs calls, a doorbell's fault handler) and of what
they call (libc code in a context whose callers include a model function, and every call out of
such contexts, inclusive). polls: calls per operation of the most called WAIT_RE function; code
in a context under one of them is waiting code. wait: executions dropped as waiting: an
instruction that ran at least SPIN*N times anywhere (SPIN = 24: no operation measured loops that
often by itself; quiet after 16 puts retires 16 completions), or in waiting code by every poll
(at least polls/2 per operation) or at least 17 times per operation, counts as if there had been
one poll per operation (N times, or its count / polls). unsure: executions kept of waiting code
that ran 2-16 times per operation (completion processing, or a short wait's slower paths).
spin: the largest count of one instruction outside the model / N.
"""
import re
import sys
from collections import defaultdict

SPIN = 24


def parse(path):
    """Per instruction executions by (object, context, address), call edges by context, the
    object of every function, the row's name and total."""
    name = "?"
    total = 0
    npos = 1
    instr = defaultdict(int)  # (ob, context, addr) -> executions (Ir)
    edges = defaultdict(int)  # (caller (ob, context), callee (ob, context)) -> inclusive
    ncalls = defaultdict(int)  # the same -> calls
    fn_ob = {}  # function name (a context's first part) -> object
    ob = fn = cob = cfn = None
    pending = False
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if pending:
                parts = line.split()
                edges[((ob, fn), (cob or ob, cfn))] += int(parts[npos]) if len(parts) > npos else 0
                ncalls[((ob, fn), (cob or ob, cfn))] += calls
                pending = False
                cob = None
                continue
            if not line or line[0] == "#":
                continue
            c = line[0]
            if c.isdigit() or c in "+-*":
                parts = line.split()
                if len(parts) > npos:
                    instr[(ob, fn, parts[0])] += int(parts[npos])
                continue
            key, _, val = line.partition("=")
            if key == "ob":
                ob = val
            elif key == "fn":
                fn = val
                fn_ob.setdefault(fn.split("'")[0], ob)
            elif key == "cob":
                cob = val
            elif key == "cfn":
                cfn = val
                fn_ob.setdefault(cfn.split("'")[0], cob or ob)
            elif key == "calls":
                pending = True
                calls = int(val.split()[0])
            elif line.startswith("positions:"):
                npos = len(line.split()) - 1
            elif line.startswith("desc: Trigger: Client Request: "):
                name = line.split("Client Request: ", 1)[1]
            elif line.startswith("totals:"):
                total = int(line.split()[1])
    return name, total, instr, edges, ncalls, fn_ob


def main():
    model_dir, n, top, wait_re = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), re.compile(sys.argv[4])
    in_model = lambda o: bool(o) and o.startswith(model_dir)
    for path in sys.argv[5:]:
        name, total, instr, edges, ncalls, fn_ob = parse(path)
        # A context (callgrind --separate-callers: "function'caller'caller...") is the model's
        # when its object is, or one of its callers' is: libc code the model calls.
        memo = {}
        def model_ctx(ob, ctx):
            if (ob, ctx) not in memo:
                memo[(ob, ctx)] = in_model(ob) or any(
                    in_model(fn_ob.get(c)) for c in (ctx or "").split("'")[1:])
            return memo[(ob, ctx)]
        model = sum(v for (o, c, _), v in instr.items() if model_ctx(o, c))
        # deeper than the contexts reach: calls out of the model's contexts, inclusive
        model += sum(v for (a, b), v in edges.items() if model_ctx(*a) and not model_ctx(*b))
        # polls per operation: calls of the most called waiting function
        calls_of = defaultdict(int)
        for (a, b), v in ncalls.items():
            f = (b[1] or "").split("'")[0]
            if wait_re.search(f):
                calls_of[f] += v
        p = max([1.0] + [v / n for v in calls_of.values()])
        wait = unsure = 0
        per_fn = defaultdict(int)
        most = 0
        for (o, c, a), v in instr.items():
            if model_ctx(o, c):
                continue
            most = max(most, v)
            kept = v
            in_wait = any(wait_re.search(x) for x in (c or "").split("'"))
            if v >= SPIN * n:  # a waiting loop's, wherever it is: once per operation
                kept = n
            elif in_wait and p >= 2 and (v >= n * p / 2 or v >= 17 * n):
                kept = round(v / p)  # every poll (or every so many) runs it: one poll per op
            elif in_wait and p >= 2 and v >= 2 * n:
                unsure += v  # more than once per op in the waiting code: kept, but maybe waiting
            wait += v - kept
            per_fn[((o or "?").rsplit("/", 1)[-1], (c or "?").split("'")[0])] += kept
        print("row", name, total, model, wait, round(most / n, 1), round(p, 1), unsure)
        for (o, f), v in sorted(per_fn.items(), key=lambda kv: -kv[1])[:top]:
            print("top", name, v, o + ":" + f)


if __name__ == "__main__":
    main()
