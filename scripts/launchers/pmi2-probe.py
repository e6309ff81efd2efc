#!/usr/bin/env python3
"""Shows how a launcher's PMI-2 server treats fullinit, kvs-fence and kvs-get, without hoshmem.

    srun --mpi=pmi2 -n 2 --overcommit python3 scripts/launchers/pmi2-probe.py
    mpiexec.hydra -n 2 python3 scripts/launchers/pmi2-probe.py

Every rank speaks PMI-2 over PMI_FD. Rank 0 prints:
  fullinit without pmijobid: the server's rc (Slurm wants pmijobid=, MPICH's client sends it)
  fence: how long rank 0's kvs-fence took while rank 1 entered its own 2 s later
         (about 2 s: the fence is collective, a barrier; about 0 s: it is answered at once)
  get before fence: whether a key rank 1 put (then told rank 0 through a fence-free path,
         a file) is visible to rank 0 before any fence (yes under Hydra, no under Slurm,
         whose puts reach the others only at a fence)
"""
import os
import socket
import sys
import time

fd = int(os.environ["PMI_FD"])
sock = socket.socket(fileno=fd)


def send2(body):
    sock.sendall(b"%-6d%s" % (len(body), body.encode()))


def recv2():
    n = int(sock.recv(6, socket.MSG_WAITALL))
    data = sock.recv(n, socket.MSG_WAITALL).decode()
    return dict(kv.split("=", 1) for kv in data.split(";") if "=" in kv)


def cmd2(body):
    send2(body)
    return recv2()


sock.sendall(b"cmd=init pmi_version=2 pmi_subversion=0\n")
line = b""
while not line.endswith(b"\n"):
    line += sock.recv(1)
rank = int(os.environ.get("PMI_RANK", "-1"))
r = cmd2("cmd=fullinit;pmirank=%d;threaded=FALSE;" % rank)
rank = int(r["rank"])
flag = "/tmp/pmi2-probe.%s.put" % os.environ.get("PMI_JOBID", os.environ.get("PMI_KVSNAME", "job"))
out = []
if rank == 0:
    out.append("fullinit without pmijobid: rc=%s (rank %s of %s)" % (r.get("rc"), r.get("rank"), r.get("size")))
    # wait for rank 1's put (a file says it is done), then look for its key before any fence
    for _ in range(500):
        if os.path.exists(flag):
            break
        time.sleep(0.01)
    g = cmd2("cmd=kvs-get;jobid=;srcid=1;key=probe-1;")
    out.append("get before fence: found=%s" % g.get("found"))
    t = time.time()
    cmd2("cmd=kvs-fence;")
    out.append("fence: %.1f s while rank 1 entered it 2 s late" % (time.time() - t))
    g = cmd2("cmd=kvs-get;jobid=;srcid=1;key=probe-1;")
    out.append("get after fence: found=%s" % g.get("found"))
    os.unlink(flag)
elif rank == 1:
    cmd2("cmd=kvs-put;key=probe-1;value=1;")
    open(flag, "w").close()
    time.sleep(2)
    cmd2("cmd=kvs-fence;")
else:
    cmd2("cmd=kvs-fence;")
cmd2("cmd=finalize;")
for o in out:
    print("pmi2-probe: " + o)
sys.stdout.flush()
