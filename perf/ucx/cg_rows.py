#!/usr/bin/env python3
"""Per-operation instruction counts from callgrind profiles, for perf/ucx/instructions.sh.

  cg_rows.py MODEL_DIR N TOP FILE...

FILE: one profile per row (callgrind --dump-instr=yes --separate-callers=3 --compress-strings=no
--compress-pos=no,
one CALLGRIND_DUMP_STATS_AT(row) per row), N: calls per row. Prints per file:
  row <name> <total> <model> <wait> <spin>      (instructions in the whole row)
  top <name> <cost> <object>:<function>         (TOP largest, per row, model and wait excluded)
total: everything collected; model: instructions of objects under MODEL_DIR (the software HCA's
libibverbs/libmlx5/kernel shim: hoshmem's UD verbs calls, a doorbell's fault handler) and of
whatever they call (libc code in a context whose callers include a model function, and every call
out of such contexts, inclusive); wait: the spinning of waiting loops. An instruction that ran at least
SPIN*N times (SPIN = 24: no operation measured here loops that often by itself; quiet after 16
puts retires at most 16 completions) is a waiting loop's (a completion does not arrive until the
model's threads run, which under valgrind is when the waiting thread yields or its time slice
ends); it counts N times, once per operation, as if the completion had been there at the first
look, and the rest is `wait`. spin: the largest count of one instruction divided by N (polls per
operation, about).
"""
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
    fn_ob = {}  # function name (a context's first part) -> object
    ob = fn = cob = cfn = None
    pending = False
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if pending:
                parts = line.split()
                edges[((ob, fn), (cob or ob, cfn))] += int(parts[npos]) if len(parts) > npos else 0
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
            elif line.startswith("positions:"):
                npos = len(line.split()) - 1
            elif line.startswith("desc: Trigger: Client Request: "):
                name = line.split("Client Request: ", 1)[1]
            elif line.startswith("totals:"):
                total = int(line.split()[1])
    return name, total, instr, edges, fn_ob


def main():
    model_dir, n, top = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    in_model = lambda o: bool(o) and o.startswith(model_dir)
    for path in sys.argv[4:]:
        name, total, instr, edges, fn_ob = parse(path)
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
        wait = 0
        per_fn = defaultdict(int)
        most = 0
        for (o, c, a), v in instr.items():
            if model_ctx(o, c):
                continue
            most = max(most, v)
            kept = v
            if v >= SPIN * n:
                wait += v - n
                kept = n
            per_fn[((o or "?").rsplit("/", 1)[-1], (c or "?").split("'")[0])] += kept
        print("row", name, total, model, wait, round(most / n, 1))
        for (o, f), v in sorted(per_fn.items(), key=lambda kv: -kv[1])[:top]:
            print("top", name, v, o + ":" + f)


if __name__ == "__main__":
    main()
