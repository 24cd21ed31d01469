#!/usr/bin/env python3
"""Where each thread's time goes during one benchmark (docs/benchmarks.md, "readwhilewriting:
where the reader's time goes").

Runs COMMAND (a `shale bench` or `db_bench` run of one benchmark on an existing database),
samples /proc/PID/task/*/{comm,schedstat,status} every --every seconds, and prints, for every
thread, what it did between the first sample after the benchmark threads started and the last
sample before it exited:

  cpu      on-CPU seconds (schedstat field 1: utime + stime at nanosecond resolution)
  runq     seconds runnable but waiting for a CPU (schedstat field 2): CPU contention
  off      the rest of the window: sleeping or blocked (mutexes, condition variables, I/O)
  sys      of cpu, seconds in the kernel (stat field 15, clock ticks)
  vol/inv  voluntary / involuntary context switches (status)
  read MB, reads   bytes and calls of read-type system calls (io: rchar, syscr), page cache
           hits included: for a reader, what its block cache missed

`shale bench` names its benchmark threads bench-writer and bench-reader-N; db_bench's keep the
name `db_bench` (its background threads are rocksdb:*). The window opens at the first sample
showing --bench-threads of them (2: readwhilewriting's reader and writer) and closes at the
last sample before they are gone. db_bench 7.8 keeps two idle threads of its own name as well:
give it --bench-threads 4 for readwhilewriting. Run the command in its own autogroup at nice
-20 on a loaded machine (setsid bash -c 'echo -20 > /proc/self/autogroup; exec ...') so the
other sessions' work does not share its cores.

Usage: scripts/rww-threads.py [--every S] [--json OUT] -- COMMAND...
Linux only (reads /proc); no dependencies beyond python3.
"""

import argparse
import json
import os
import subprocess
import sys
import time


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def sample(pid):
    """{tid: (comm, cpu_ns, runq_ns, voluntary, involuntary, stime_ticks, rchar, syscr)} for
    the threads alive now."""
    threads = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return threads
    for tid in tids:
        base = f"/proc/{pid}/task/{tid}"
        comm, sched, status = read(f"{base}/comm"), read(f"{base}/schedstat"), read(f"{base}/status")
        stat, io = read(f"{base}/stat"), read(f"{base}/io") or ""
        if comm is None or sched is None or status is None or stat is None:
            continue
        # Fields after the parenthesised name: state is field 3, stime field 15.
        stime = int(stat.rsplit(")", 1)[1].split()[12])
        counters = dict(line.split(": ") for line in io.splitlines() if ": " in line)
        cpu, runq = (int(x) for x in sched.split()[:2])
        switches = {}
        for line in status.splitlines():
            key, _, value = line.partition(":")
            if key in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"):
                switches[key] = int(value)
        threads[int(tid)] = (
            comm.strip(),
            cpu,
            runq,
            switches.get("voluntary_ctxt_switches", 0),
            switches.get("nonvoluntary_ctxt_switches", 0),
            stime,
            int(counters.get("rchar", 0)),
            int(counters.get("syscr", 0)),
        )
    return threads


def is_bench_thread(comm, tid, pid):
    # shale bench names its benchmark threads; db_bench's keep the process's name, like its
    # main thread (its background threads are named rocksdb:*).
    return comm.startswith("bench-") or (tid != pid and comm == "db_bench")


def print_timeline(marks, start_time):
    """On-CPU share of a core per interval for each thread that ran, and the read MB of the
    readers (their block cache misses)."""
    names = {}
    for _, threads in marks:
        for tid, v in threads.items():
            names[tid] = v[0]
    active = [t for t in sorted(names)
              if marks[-1][1].get(t, marks[0][1].get(t, (0, 0)))[1]
              - marks[0][1].get(t, (0, 0))[1] > 1e7]
    print("\ntimeline: on-CPU share of a core per interval (readers: /read MB/read calls)")
    print(f"{'t s':>6} " + " ".join(f"{names[t][-16:]:>16}" for t in active))
    for (t0, a), (t1, b) in zip(marks, marks[1:]):
        cells = []
        for tid in active:
            before, after = a.get(tid), b.get(tid)
            if before is None or after is None:
                cells.append(f"{'-':>12}")
                continue
            share = (after[1] - before[1]) / 1e9 / (t1 - t0)
            cell = f"{share:.2f}"
            if names[tid].startswith("bench-reader") or names[tid] == "db_bench":
                cell += f"/{(after[6] - before[6]) / 1e6:.0f}/{(after[7] - before[7]) / 1e3:.0f}k"
            cells.append(f"{cell:>16}")
        print(f"{t1 - start_time:6.1f} " + " ".join(cells))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=float, default=0.05)
    parser.add_argument("--json", help="write the per-thread figures here too")
    parser.add_argument("--bench-threads", type=int, default=2,
                        help="benchmark threads alive at once that open the window (default 2:"
                        " readwhilewriting's reader and writer)")
    parser.add_argument("--timeline", type=float, default=0,
                        help="also print every thread's on-CPU share per this many seconds")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command")
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    pid = proc.pid
    start = start_time = None
    last = last_time = None
    marks = []  # (time, sample) every --timeline seconds inside the window
    while proc.poll() is None:
        now = time.monotonic()
        threads = sample(pid)
        bench = [t for t, v in threads.items() if is_bench_thread(v[0], t, pid)]
        if len(bench) >= args.bench_threads:
            if start is None:
                start, start_time = threads, now
            last, last_time = threads, now
            if args.timeline and (not marks or now - marks[-1][0] >= args.timeline):
                marks.append((now, threads))
        elif start is not None and not bench:
            break  # the benchmark threads are gone: the window is over
        time.sleep(args.every)
    output = proc.communicate()[0]
    sys.stdout.write(output)
    if start is None or last is None:
        sys.exit("no benchmark thread was seen; is the run too short for the sampling period?")
    window = last_time - start_time
    rows = []
    ticks = os.sysconf("SC_CLK_TCK")
    for tid, (comm, cpu, runq, vol, inv, stime, rchar, syscr) in sorted(last.items()):
        base = start.get(tid, (comm, 0, 0, 0, 0, 0, 0, 0))
        cpu_s, runq_s = (cpu - base[1]) / 1e9, (runq - base[2]) / 1e9
        rows.append({
            "tid": tid,
            "thread": comm,
            "cpu_s": round(cpu_s, 3),
            "runq_s": round(runq_s, 3),
            "off_s": round(max(window - cpu_s - runq_s, 0.0), 3),
            "voluntary": vol - base[3],
            "involuntary": inv - base[4],
            "sys_s": round((stime - base[5]) / ticks, 2),
            "read_mb": round((rchar - base[6]) / 1e6, 1),
            "read_calls": syscr - base[7],
        })
    print(f"\nper-thread time over a {window:.2f} s window (load {read('/proc/loadavg').split()[0]}):")
    print(f"{'thread':18} {'cpu s':>8} {'sys s':>7} {'runq s':>8} {'off s':>8} {'vol':>8} {'inv':>8}"
          f" {'read MB':>8} {'reads':>8}")
    for r in rows:
        if r["cpu_s"] + r["runq_s"] < 0.001 and r["voluntary"] + r["involuntary"] == 0:
            continue
        print(f"{r['thread'][:18]:18} {r['cpu_s']:8.2f} {r['sys_s']:7.2f} {r['runq_s']:8.2f}"
              f" {r['off_s']:8.2f} {r['voluntary']:8d} {r['involuntary']:8d} {r['read_mb']:8.1f}"
              f" {r['read_calls']:8d}")
    if len(marks) > 1:
        print_timeline(marks, start_time)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"window_s": window, "threads": rows}, f, indent=1)
    sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
