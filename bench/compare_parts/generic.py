"""Pools without a database: respool (a shared thread_safe pool with FIFO idle order, the same with the
thread-affinity cache, one pool per thread), HikariCP, Apache commons-pool2 and a naive C++ mutex+deque
pool, acquire + release cycles over a stub connection; then the spike scenario on respool and HikariCP.
Writes docs/benchmarks.md between the compare:begin/end markers."""
import argparse
import os
import shutil
import tempfile

from .common import ROOT, RELEASE, build_release, ensure_packages, median, say, sh, write_section

JARS = ["/usr/share/java/HikariCP.jar", "/usr/share/java/commons-pool2.jar",
        "/usr/share/java/slf4j-api.jar", "/usr/share/java/slf4j-nop.jar"]
PACKAGES = ["libhikaricp-java", "libcommons-pool2-java", "libslf4j-java", "openjdk-17-jdk-headless"]


def parse(lines):
    cycles, spikes = {}, {}
    for line in lines.splitlines():
        f = line.split()
        if f and f[0] == "cycle":
            cycles[(f[1], int(f[2]), int(f[3]))] = float(f[4])
        elif f and f[0] == "spike":
            spikes[f[1]] = f[2:]
    return cycles, spikes


def before_after(seconds, reps, before):
    """respool's C++ variants from this build and from the release build of an earlier commit in `before`,
    whole runs alternated (after, before, after, ...) `reps` times; medians."""
    old = os.path.join(before, "bench", "respool_compare")
    if not os.access(old, os.X_OK):
        raise RuntimeError(f"--before {before}: no bench/respool_compare there (build the release preset's "
                           "respool_compare target of the earlier commit into it)")
    runs = {"after": {}, "before": {}}
    for rep in range(reps):
        for which, binary in (("after", os.path.join(RELEASE, "bench", "respool_compare")), ("before", old)):
            say(f"generic pools: rep {rep + 1}/{reps}, {which} ...")
            cycles, _ = parse(sh([binary, str(seconds), "1"], capture_output=True).stdout)
            for k, v in cycles.items():
                runs[which].setdefault(k, []).append(v)
    lines = ["| variant | workload | before | after | after ÷ before |", "|---|---|---:|---:|---:|"]
    for k in sorted(runs["after"]):
        # The floors are not respool's code, and builds before 2026-11-28 had a lock-free floor that
        # dropped resources: comparing them across builds says nothing.
        if k not in runs["before"] or k[0].startswith("fifo-floor"):
            continue
        a, b = median(runs["after"][k]), median(runs["before"][k])
        lines.append(f"| {k[0]} | {k[1]} thread{'s' if k[1] > 1 else ''}, pool {k[2]} | {b / 1e6:.1f} M | "
                     f"{a / 1e6:.1f} M | {a / b:.2f}x |")
    print("\n".join(lines))


def run(seconds, reps, write, before=None):
    """Measures, prints the tables and (when `write`) puts them into docs/benchmarks.md. With `before`, only
    respool's variants, this build against the earlier one."""
    ensure_packages(PACKAGES)
    build_release(["respool_compare", "respool_spike"])
    if before:
        return before_after(seconds, reps, before)
    args = argparse.Namespace(seconds=str(seconds), reps=str(reps))
    classes = tempfile.mkdtemp(prefix="respool-peers-")
    cp = ":".join(JARS)
    sh(["javac", "-d", classes, "-cp", cp, os.path.join(ROOT, "bench", "peers", "java", "PeerBench.java")])
    jcp = cp + ":" + classes

    out = ""
    say("generic pools: C++ variants ...")
    out += sh([os.path.join(RELEASE, "bench", "respool_compare"), args.seconds, args.reps],
              capture_output=True).stdout
    say("generic pools: Java peers ...")
    out += sh(["java", "-cp", jcp, "PeerBench", "cycle", args.seconds, args.reps], capture_output=True).stdout
    out += sh(["java", "-cp", jcp, "PeerBench", "spike"], capture_output=True).stdout
    spike_rs = sh([os.path.join(RELEASE, "bench", "respool_spike")], capture_output=True).stdout
    shutil.rmtree(classes, ignore_errors=True)
    cycles, spikes = parse(out)

    variants = ["respool-per-thread", "respool-shared-affinity", "respool-shared", "hikaricp", "commons-pool2",
                "naive-cpp"]
    workloads = [(1, 32), (2, 32), (8, 32), (8, 4)]
    head = ("| workload | " + " | ".join(variants) +
            " | per-thread / HikariCP | shared-affinity / HikariCP | shared / HikariCP |")
    rows = [head, "|" + "---|" * (len(variants) + 4)]

    def fmt(x):
        return "n/a" if x is None else f"{x / 1e6:.1f} M"

    def ratio(a, b):
        return "n/a" if not a or not b else f"{a / b:.2f}x"

    for t, size in workloads:
        v = {name: cycles.get((name, t, size)) for name in variants}
        rows.append(f"| {t} thread{'s' if t > 1 else ''}, pool {size} | " + " | ".join(fmt(v[n]) for n in variants)
                    + f" | {ratio(v['respool-per-thread'], v['hikaricp'])}"
                    + f" | {ratio(v['respool-shared-affinity'], v['hikaricp'])}"
                    + f" | {ratio(v['respool-shared'], v['hikaricp'])} |")
    table = "\n".join(rows)
    floors = ["| workload | respool-shared (FIFO) | fifo-floor-lockfree | fifo-floor-mutex | fifo-floor-pool-lock | "
              "hikaricp | respool-shared ÷ floor under its lock | best floor ÷ HikariCP |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
    floor_names = ["fifo-floor-lockfree", "fifo-floor-mutex", "fifo-floor-pool-lock"]
    for t, size in workloads:
        v = {n: cycles.get((n, t, size)) for n in ["respool-shared", "hikaricp"] + floor_names}
        best = max((v[n] for n in floor_names if v[n]), default=None)
        floors.append(f"| {t} thread{'s' if t > 1 else ''}, pool {size} | {fmt(v['respool-shared'])} | "
                      + " | ".join(fmt(v[n]) for n in floor_names) + f" | {fmt(v['hikaricp'])} | "
                      f"{ratio(v['respool-shared'], v['fifo-floor-pool-lock'])} | {ratio(best, v['hikaricp'])} |")
    floor_table = "\n".join(floors)
    spike_lines = ["| pool | created for the spike | p50 wait | p99 wait | max wait |", "|---|---|---|---|---|"]
    if "hikaricp" in spikes:
        c, p50, p99, mx = spikes["hikaricp"]
        spike_lines.append(f"| HikariCP 2.7.9 | {c} | {p50} ms | {p99} ms | {mx} ms |")
    for line in spike_rs.splitlines():
        f = line.split()
        if f and f[0].isdigit():  # "<mcc> <created> (<total>) <p50>ms <p99>ms <max>ms"
            p50, p99, mx = (x.replace("ms", " ms") for x in f[-3:])
            spike_lines.append(f"| respool, max_concurrent_creations {f[0]} | {f[1]} | {p50} | {p99} | {mx} |")
    spike = "\n".join(spike_lines)

    section = ("Generated by `bench/compare` (operations per second: acquire + release cycles, median of "
               + args.reps + " runs of " + args.seconds + " s after a warm-up; one machine, one run).\n\n"
               + table + "\n\nOne shared FIFO order without a pool around it (bench/peers/fifo_floor.hpp: a lock-free "
               "ring, and a ring under std::mutex and under respool's pool lock; take the oldest, put it back), the "
               "same run:\n\n" + floor_table
               + "\n\nSpike (50 simultaneous acquires, min idle 5, max 50, 150 ms connect, 2 ms work):\n\n"
               + spike + "\n")
    if write:
        write_section("compare", section)
    print(table)
    print()
    print(floor_table)
    print()
    print(spike)
