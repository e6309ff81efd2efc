#!/usr/bin/env python3
"""Draws perf/plots/*.svg from the recorded tables in perf/results/*.csv (perf/plot.sh runs it).

Values are plotted as recorded: a cell that is not a number (ERR, n/a, -) is left out of its
line (an ERR bar is marked as such). One plot per (operation, one node or transport); one line
per library: hoshmem, OSHMEM and, where the table has one, the limit.
"""
import csv
import io
import os
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
PLOTS = os.path.join(HERE, "plots")

# Text stays text and nothing random or dated goes into the files, so a rerun on the same
# tables writes the same bytes and a change of data is a readable diff.
plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "hoshmem-perf",
                     "font.size": 9, "figure.figsize": (6.4, 4.0)})
STYLE = {"hoshmem": dict(color="tab:blue", marker="o"),
         "OSHMEM": dict(color="tab:orange", marker="s"),
         "limit": dict(color="gray", marker="x", linestyle="--")}


def read(name):
    with open(os.path.join(RESULTS, name)) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def num(text):
    try:
        return float(text)
    except ValueError:
        return None


def human(n, _pos=None):
    n = int(n)
    for unit, div in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div}{unit}"
    return str(n)


def save(fig, name):
    os.makedirs(PLOTS, exist_ok=True)
    path = os.path.join(PLOTS, name)
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata=dict.fromkeys(("Date", "Creator", "Format", "Type")),
                bbox_inches="tight")
    plt.close(fig)
    with open(path, "w") as f:  # without the optional DOCTYPE line
        f.write(re.sub(r"<!DOCTYPE[^>]*>\n", "", buf.getvalue(), count=1))
    print(os.path.relpath(path, os.path.dirname(HERE)))


def finish_loglog(fig, ax, ticks, title, xlabel, ylabel, name):
    """Log-log axes with the recorded sizes (or PE counts) as the x ticks, then save."""
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(FixedLocator(sorted(ticks)))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(human))
    if len(ticks) > 8:
        ax.tick_params(axis="x", labelrotation=45)
    low, high = ax.get_ylim()
    if high / low < 12:  # about a decade: label the minor ticks too, as plain numbers
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    save(fig, name)


def by_size(title, ylabel, series, name, xlabel="bytes per operation"):
    """series: {label: [(size, value text), ...]}; log-log, the recorded sizes as ticks."""
    fig, ax = plt.subplots()
    sizes = set()
    for label, points in series.items():
        if all(num(v) is None for _, v in points):
            continue
        sizes.update(s for s, v in points if num(v) is not None)
        # a size without a value (ERR, n/a, -) breaks the line: nothing is drawn across it
        ys = [num(v) if num(v) is not None else float("nan") for _, v in points]
        ax.plot([s for s, _ in points], ys, label=label, **STYLE[label.split(" ")[0]])
    finish_loglog(fig, ax, sizes, title, xlabel, ylabel, name)


def bars(title, ylabel, names, columns, name):
    """Grouped bars, one group per row name; columns: {label: [value text per name]}."""
    fig, ax = plt.subplots(figsize=(8.0, 4.0))
    width = 0.8 / len(columns)
    for i, (label, values) in enumerate(columns.items()):
        xs = [k + (i - (len(columns) - 1) / 2) * width for k in range(len(names))]
        ys = [num(v) for v in values]
        ax.bar([x for x, y in zip(xs, ys) if y is not None], [y for y in ys if y is not None],
               width, label=label, color=STYLE[label.split(" ")[0]]["color"])
        for x, v in zip(xs, values):
            if v == "ERR":
                ax.annotate("ERR", (x, 0), xycoords=("data", "axes fraction"), rotation=90,
                            ha="center", va="bottom", fontsize=7, color="red")
    values = [y for vs in columns.values() for y in map(num, vs) if y is not None]
    if max(values) / min(values) > 20:  # spans decades: log, every bar visible from below
        ax.set_yscale("log")
        ax.set_ylim(bottom=min(values) / 2)
    ax.set_xticks(range(len(names)), names, rotation=60, ha="right")
    ax.set(title=title, ylabel=ylabel)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    save(fig, name)


def library_plots(rows, where, prefix, libs, kinds):
    """The size sweeps (kinds: {benchmark: (title, ylabel)}) and the AMO latencies of one table."""
    for bench, (what, ylabel) in kinds.items():
        sel = [r for r in rows if r["benchmark"] == bench]
        if len(sel) < 2:
            continue
        series = {label: [(int(r["size"]), r[col]) for r in sel] for label, col in libs}
        by_size(f"{what}, {where}", ylabel, series, f"{prefix}_{bench.split('.')[0]}.svg",
                xlabel="bytes per PE" if "." in bench else "bytes per operation")
    amo = [r for r in rows if r["benchmark"].startswith(("amo_long_", "amo_uint64_"))
           and r["benchmark"].endswith("_lat") and "_nbi_" not in r["benchmark"]]
    if amo:
        names = [r["benchmark"][len("amo_"):-len("_lat")] for r in amo]
        columns = {label: [r[col] for r in amo] for label, col in libs
                   if any(num(r[col]) is not None for r in amo)}
        bars(f"AMO latency (blocking; non-fetching + quiet), {where}", "us per operation",
             names, columns, f"{prefix}_amo_lat.svg")


SWEEPS = {"put_lat": ("put latency", "us"), "get_lat": ("get latency", "us"),
          "putmem_bw": ("putmem bandwidth", "MB/s"), "getmem_bw": ("getmem bandwidth", "MB/s"),
          "putmem_nbi_bw": ("putmem_nbi bandwidth", "MB/s"),
          "getmem_nbi_bw": ("getmem_nbi bandwidth", "MB/s")}


def one_node():
    libs = [("hoshmem", "hoshmem"), ("OSHMEM 4.1.4", "oshmem"),
            ("limit (shared mapping, no library)", "limit")]
    library_plots(read("one_node.csv"), "one node, 2 PEs (2026-11-21 21:06Z)", "one_node",
                  libs, SWEEPS)
    coll = [r for r in read("one_node_coll.csv") if r["pes"] == "2" and r["form"] == "as"]
    for op in dict.fromkeys(r["op"] for r in coll if r["size"]):
        sel = [r for r in coll if r["op"] == op]
        series = {label: [(int(r["size"]), r[col]) for r in sel] for label, col in libs}
        by_size(f"{op} (active set), one node, 2 PEs (2026-11-21 17:32Z)", "us per call",
                series, f"one_node_coll_{op}_np2.svg", xlabel="bytes per PE")


def side_by_side():
    limits = {"rc": "verbs_rc", "dc": "verbs_dc", "ud": "verbs_ud round trip", "shm": None}
    for tr, limit in limits.items():
        rows = read(f"sbs_{tr}.csv")
        where = f"{tr} across 2 model nodes" if limit else "one node (shm)"
        where += " (2026-11-29T04:55Z)"
        libs = [("hoshmem", "hoshmem"), ("OSHMEM 4.1.4 + UCX 1.13.1", "oshmem")]
        if limit:
            libs.append((f"limit ({limit})", "limit"))
        kinds = dict(SWEEPS, **{"sum_long.as.np2": ("sum_long (active set), 2 PEs", "us")})
        library_plots(rows, where, f"sbs_{tr}", libs, kinds)


def ud():
    rows = read("ud_putget.csv")
    for unit, ops, what in (("ns", ("put", "get"), "latency"),
                            ("MB/s", ("put bw", "get bw"), "bandwidth")):
        fig, ax = plt.subplots()
        for op in ops:
            sel = [r for r in rows if r["operation"] == op]
            for tr, color in (("rc", "tab:blue"), ("ud", "tab:green")):
                ax.plot([int(r["size"]) for r in sel], [num(r[tr]) for r in sel], color=color,
                        marker="o", linestyle="-" if op.startswith("put") else ":",
                        label=f"{op.split()[0]} over {tr.upper()}")
        finish_loglog(fig, ax, {int(r["size"]) for r in rows},
                      f"hoshmem put/get {what} across 2 model nodes, all-SW mode: RC vs UD\n"
                      "(2026-11-25 section, perf/hw/ud.sh)", "bytes per operation", unit,
                      f"ud_putget_{what}.svg")


def dc_scale():
    rows = read("dc_rc_scale.csv")
    pes = [int(r["pes"]) for r in rows]
    for key, what, unit, name in (
            ("first_ms", "first touch of every peer (slowest PE)", "ms", "first_touch"),
            ("kib", "queue and lane memory per PE (without the bytes per peer)", "KiB", "memory")):
        fig, ax = plt.subplots()
        for tr, color in (("rc", "tab:blue"), ("dc", "tab:green")):
            ax.plot(pes, [num(r[f"{tr}_{key}"]) for r in rows], color=color, marker="o",
                    label=f"hoshmem over {tr.upper()}")
        finish_loglog(fig, ax, pes, f"DC against RC: {what}\n(2026-11-26, perf/hw/dc.sh)",
                      "PEs (a node each)", unit, f"dc_rc_{name}.svg")


if __name__ == "__main__":
    one_node()
    side_by_side()
    ud()
    dc_scale()
