"""shmem_test: one multi-PE test program, built against libhoshmem and run through oshrun."""

def shmem_test(
        name,
        srcs,
        nps = [1, 2, 4, 8],
        env = {},
        expect_fail = False,
        expect_stderr = None,
        expect_output = None,
        no_survivors = False,
        stderr_lines = None,
        no_leftovers = False,
        timeout_s = 120,
        copts = [],
        binary = None,
        requires_cpu = None,
        softhca = False,
        across_nodes = None,
        huge_pages = None,
        launcher = "oshrun",
        links = False,
        tags = []):
    """Builds `name` (cc_binary linked with //lib:hoshmem) and one sh_test `name_np<N>` per N.

    Each test runs `timeout <timeout_s> oshrun -np N --bind-to none <binary>` via run_test.sh.
      env:           environment for the launch (dict)
      expect_fail:   False (exit 0 expected), True (any non-zero status), or an int status
      expect_stderr: extended regex (or list) that must match a line of stderr; "{np}" -> N
      expect_output: same, matched against stdout + stderr
      no_survivors:  no PE process may outlive the launcher (programs record their PIDs)
      stderr_lines:  stderr must have exactly this many lines
      no_leftovers:  nothing of the job may be left in /dev/shm (over softhca: the model's
                     segment has no live node and is removed by the model's next start)
      copts:         extra compiler flags (e.g. -DHOSHMEM_NO_INLINE: every call into the library)
      binary:        run this program (a target of an earlier shmem_test) instead of building one
      requires_cpu:  /proc/cpuinfo flags the run needs (space-separated); without them the test
                     says so and passes (a variant of code chosen per CPU that this one lacks)
      softhca:       run over the software mlx5 HCA (//test/softhca), in a fabric of its own
      launcher:      "oshrun", or "hydra": MPICH's mpiexec.hydra (PMI-1/PMI-2, not PMIx)
      huge_pages:    reserve this many free 2 MiB huge pages for the run and check they come
                     back (run_test.sh --huge-pages); says "not run" where it cannot
      across_nodes:  also run it with its PEs on several "nodes" of this machine, over softhca in
                     all-HW mode with RC: `name_k1_np<N>` (HOSHMEM_PES_PER_NODE=1, every PE its
                     own node) for each N of 2 and 4 and `name_k2_np4` (pairs); tagged
                     "across_nodes". Default: for programs built here (not `binary` reuses,
                     which are configurations of a program already run across nodes). The same
                     runs in all-SW mode with everything to other nodes as UD messages
                     (HOSHMEM_ATOMICS=sw HOSHMEM_TRANSPORT=ud): `name_sw_k1_np<N>` and
                     `name_sw_k2_np4`, tagged "across_nodes_sw", unless `env` asks for all-HW;
                     and in all-HW mode over DC (HOSHMEM_TRANSPORT=dc) at the largest of those
                     sizes: `name_dc_k1_np4` and `name_dc_k2_np4`, tagged "across_nodes_dc"
      links:         also run it across nodes on the model's other link personalities
                     (SOFTHCA_LINK): RoCE and an InfiniBand port that requires a GRH, each over
                     rc, dc and ud (all-SW), 4 PEs, 1 or 2 per node so that every transport sees
                     both: `name_roce_k2_np4`, `name_roce_dc_k1_np4`, `name_roce_sw_k2_np4`,
                     `name_ib_grh_k1_np4`, `name_ib_grh_dc_k2_np4`, `name_ib_grh_sw_k1_np4`;
                     tagged "links"
    """
    if across_nodes == None:
        across_nodes = binary == None
    if binary == None:
        binary = name
        native.cc_binary(
            name = name,
            srcs = srcs + ["shtest.h", "types.h"],
            copts = ([] if [s for s in srcs if s.endswith(".cc")] else ["-std=gnu11"]) +
                    ["-Wno-deprecated-declarations", "-Wno-type-limits"] + copts,
            deps = ["//lib:hoshmem"],
            linkopts = ["-pthread"],
            testonly = True,
        )
    if expect_fail == True:
        status = "nonzero"
    elif expect_fail == False:
        status = "0"
    else:
        status = str(expect_fail)
    checks = struct(no_survivors = no_survivors, stderr_lines = stderr_lines,
                    no_leftovers = no_leftovers, huge_pages = huge_pages, launcher = launcher)
    _runs(name, binary, nps, env, status, expect_stderr, expect_output, checks,
          requires_cpu, softhca, timeout_s, tags)
    if across_nodes:
        modes = [("", "hw", "rc", "across_nodes"), ("_dc", "hw", "dc", "across_nodes_dc")]
        if env.get("HOSHMEM_ATOMICS", "sw") != "hw":
            modes.append(("_sw", "sw", "ud", "across_nodes_sw"))
        for suffix, atomics, transport, tag in modes:
            for k in [1, 2]:
                sizes = [n for n in nps if n > k and n <= 4]
                if transport == "dc" and sizes:
                    sizes = [max(sizes)]  # DC shares RC's engine: its largest size suffices
                _runs(
                    "%s%s_k%d" % (name, suffix, k),
                    binary,
                    sizes,
                    dict(env, HOSHMEM_ATOMICS = atomics, HOSHMEM_TRANSPORT = transport,
                         HOSHMEM_PES_PER_NODE = str(k)),
                    status,
                    expect_stderr,
                    expect_output,
                    checks,
                    requires_cpu,
                    True,
                    timeout_s,
                    tags + [tag],
                )

    if links:
        for link, suffix, atomics, transport, k in [
            ("roce", "", "hw", "rc", 2),
            ("roce", "_dc", "hw", "dc", 1),
            ("roce", "_sw", "sw", "ud", 2),
            ("ib-grh", "", "hw", "rc", 1),
            ("ib-grh", "_dc", "hw", "dc", 2),
            ("ib-grh", "_sw", "sw", "ud", 1),
        ]:
            if atomics == "sw" and env.get("HOSHMEM_ATOMICS", "sw") == "hw":
                continue
            _runs(
                "%s_%s%s_k%d" % (name, link.replace("-", "_"), suffix, k),
                binary,
                [4],
                dict(env, HOSHMEM_ATOMICS = atomics, HOSHMEM_TRANSPORT = transport,
                     HOSHMEM_PES_PER_NODE = str(k), SOFTHCA_LINK = link),
                status,
                expect_stderr,
                expect_output,
                checks,
                requires_cpu,
                True,
                timeout_s,
                tags + ["links"],
            )

def _runs(name, binary, nps, env, status, expect_stderr, expect_output, checks,
          requires_cpu, softhca, timeout_s, tags):
    """One sh_test `name_np<N>` per N, running `binary` through run_test.sh."""
    args = ["--timeout", str(timeout_s), "--expect-status", status]
    for k, v in env.items():
        args += ["--env", "'%s=%s'" % (k, v)]
    for flag, res in [("--expect-stderr", expect_stderr), ("--expect-output", expect_output)]:
        if res == None:
            continue
        if type(res) == "string":
            res = [res]
        for r in res:
            # args undergo Make-variable expansion and shell tokenization
            args += [flag, "'" + r.replace("$", "$$") + "'"]
    if checks.no_survivors:
        args.append("--no-survivors")
    if checks.stderr_lines != None:
        args += ["--stderr-lines", str(checks.stderr_lines)]
    if checks.no_leftovers:
        args.append("--no-leftovers")
    if checks.huge_pages != None:
        args += ["--huge-pages", str(checks.huge_pages)]
    if requires_cpu:
        args += ["--requires-cpu", "'%s'" % requires_cpu]
    launcher = {"oshrun": "//tools/oshrun:oshrun", "hydra": ":hydra.sh"}[checks.launcher]
    data = [":" + binary, launcher]
    if softhca:
        args += ["--softhca", "$(rootpath //test/softhca:softlib/libibverbs.so.1)"]
        data += ["//test/softhca:libs", "//test/softhca:softlib/libibverbs.so.1"]

    # Bazel kills a test at its own timeout; keep it above ours so our message wins.
    bazel_timeout = "short" if timeout_s <= 45 else ("moderate" if timeout_s <= 240 else "long")
    for np in nps:
        native.sh_test(
            name = "%s_np%d" % (name, np),
            srcs = ["run_test.sh"],
            args = ["--np", str(np)] + args + [
                "$(rootpath %s)" % launcher,
                "$(rootpath :%s)" % binary,
            ],
            data = data,
            timeout = bazel_timeout,
            tags = tags + ["shmem"],
        )
