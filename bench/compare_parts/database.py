"""Pools on a real PostgreSQL server: respool::pg::pool (one pool on one thread, per-thread pools on 2
threads, one shared thread_safe pool, the opt-in pipelined mode, unnamed statements, and unnamed
statements through PgBouncer 1.18 in transaction mode, tests/integration/pgbouncer.sh) next to HikariCP + pgjdbc, pgxpool
v4, asyncpg's pool and node-postgres' pg.Pool, with pgbench (raw libpq) as the floor.

Every pool peer is a long-lived program speaking bench/peers/PROTOCOL.md: started once, warmed up, then
measured in rotation with the others (rep by rep, the order shifted each rep) so that the shared
machine's noise hits all alike; medians over the reps. Client CPU per query is the peer process's own
user + system time over the measurement (/proc/PID/stat); for pgbench, started per measurement, its
getrusage less the CPU of its connects (measured once per client count). The backends column is the
most connections to the server the measured client held at once (sampled every 50 ms). Server CPU per
query is what the PostgreSQL processes used over the measurement (/proc: the postmaster with its reaped
children and every live child), divided by the queries: what the client's way of talking costs the
server (for pgbench, started per measurement, its connects included: a few milliseconds a run). Machine
busy is the share of both CPUs in use over the measurement, server and client together (/proc/stat,
steal left out): near 100 % the row is bound by the machine, well below it by waiting. Writes
docs/benchmarks.md between the compare-pg markers."""
import os
import re
import resource
import select
import shutil
import subprocess
import tempfile

from .common import (RELEASE, ROOT, BackendSampler, build_release, ensure_node, ensure_packages,
                     machine_ticks, median, process_cpu, say, server_cpu, server_pid, sh, publish)

PEERS_DIR = os.path.join(ROOT, "bench", "peers")
PGBOUNCER = os.path.join(ROOT, "tests", "integration", "pgbouncer.sh")
BEHIND_PGBOUNCER = "respool-pgbouncer"  # the peer whose libpq environment points at PgBouncer
POOL = 8
WORKLOADS = ["select1", "lookup", "txn"]
CLIENTS = [1, 8, 64]
PGBENCH_SCRIPTS = {
    "select1": "SELECT 1;\n",
    "lookup": "\\set id random(1, 10000)\nSELECT v FROM bench_kv WHERE id = :id;\n",
    "txn": ("\\set id random(1, 10000)\nBEGIN;\nUPDATE bench_kv SET n = n + 1 WHERE id = :id;\n"
            "SELECT v, n FROM bench_kv WHERE id = :id;\nCOMMIT;\n"),
}
RESULT = re.compile(r"result queries=(\d+) seconds=([\d.]+) p50_us=([\d.]+) p99_us=([\d.]+) errors=(\d+)")


class Peer:
    """A pool peer process: `ready`, then one `result` line per `run` line."""

    def __init__(self, key, label, cmd, env, cwd=None):
        self.key, self.label = key, label
        self.proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)
        line = self._line(120)
        if line.strip() != "ready":
            self.close()
            raise RuntimeError(f"{label} did not start: {line!r}")

    def _line(self, timeout):
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            raise RuntimeError(f"{self.label}: no answer within {timeout} s")
        return self.proc.stdout.readline()

    def run(self, workload, clients, seconds):
        """(queries/s, p50 us, p99 us, errors, CPU seconds of the peer over the run)."""
        cpu0 = process_cpu(self.proc.pid)
        self.proc.stdin.write(f"run {workload} {clients} {seconds}\n")
        self.proc.stdin.flush()
        line = self._line(seconds + 60)
        cpu = process_cpu(self.proc.pid) - cpu0
        m = RESULT.match(line.strip())
        if not m:
            raise RuntimeError(f"{self.label}: not a result: {line!r}")
        q, s, p50, p99, e = m.groups()
        return int(q) / float(s), float(p50), float(p99), int(e), cpu, int(q)

    def close(self):
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


class Pgbench:
    """pgbench -M prepared with min(clients, POOL) connections on `threads` threads (-j; at most one per
    connection): raw libpq, no pool. -j 1 is the one-loop floor; -j 2 uses both cores, as the pool peers'
    threads and goroutines do."""

    def __init__(self, cluster, folder, sampler, threads=1):
        self.env, self.folder, self.sampler = cluster.env, folder, sampler
        self.threads = threads
        self.key = "pgbench" if threads == 1 else f"pgbench-j{threads}"
        self.label = ("pgbench (libpq, no pool)" if threads == 1 else
                      f"pgbench -j {threads} (libpq, no pool, {threads} threads)")
        for name, text in PGBENCH_SCRIPTS.items():
            with open(os.path.join(folder, name + ".sql"), "w") as f:
                f.write(text)
        self.connect_cpu = {}

    def _pgbench(self, workload, conns, args, sample=False):
        cmd = ["pgbench", "-n", "-M", "prepared", "-c", str(conns), "-j", str(min(self.threads, conns)),
               "-f", os.path.join(self.folder, workload + ".sql")] + args
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.Popen(cmd, env=self.env, cwd=self.folder, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        if sample:
            self.sampler.start(proc.pid)
        out, err = proc.communicate()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            raise RuntimeError(f"pgbench failed ({proc.returncode}): {err.strip()}")
        return out, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    def _connects(self, conns):
        """CPU of starting pgbench and connecting `conns` times (scram-sha-256 costs the client too)."""
        if conns not in self.connect_cpu:
            self.connect_cpu[conns] = median([self._pgbench("select1", conns, ["-t", "1"])[1] for _ in range(3)])
        return self.connect_cpu[conns]

    def run(self, workload, clients, seconds):
        conns = min(clients, POOL)
        for f in os.listdir(self.folder):
            if f.startswith("pgbench_log"):
                os.remove(os.path.join(self.folder, f))
        # Latencies from a 10 % sample of the per-transaction log: writing every line would cost pgbench
        # CPU the others do not pay.
        out, cpu = self._pgbench(workload, conns, ["-T", str(seconds), "-l", "--sampling-rate", "0.1"], sample=True)
        n = int(re.search(r"number of transactions actually processed: (\d+)", out).group(1))
        failed = re.search(r"number of failed transactions: (\d+)", out)
        tps = float(re.search(r"tps = ([\d.]+) \(without initial connection time\)", out).group(1))
        lat = []
        for f in os.listdir(self.folder):
            if f.startswith("pgbench_log"):
                with open(os.path.join(self.folder, f)) as fh:
                    lat += [int(line.split()[2]) for line in fh if line.strip()]
        lat.sort()
        pct = lambda p: float(lat[min(len(lat) - 1, int(p * len(lat)))]) if lat else 0.0
        return tps, pct(0.50), pct(0.99), int(failed.group(1)) if failed else 0, max(
            0.0, cpu - self._connects(conns)), n

    def close(self):
        pass


BEFORE = "-before"  # the key suffix of a respool peer from an earlier build (--before)


def prepare_peers(tmp, only=None, before=None):
    """Builds or installs every peer (with `only`, the other languages' peers are not built); returns a
    list of (key, label, command, cwd). With `before` (the build folder of an earlier commit), every
    respool peer runs a second time from that build, keyed KEY-before: measured in the same rotation,
    the two builds meet the same noise."""
    build_release(["respool_pg_peer"])
    java_out, go_out = os.path.join(tmp, "java"), os.path.join(tmp, "go")
    if not only or any(not k.startswith("respool") for k in only):
        ensure_packages(["python3-asyncpg", "golang-go", "golang-github-jackc-pgx-v4-dev", "libhikaricp-java",
                         "libpostgresql-jdbc-java", "libslf4j-java", "openjdk-17-jdk-headless"])
        ensure_node()
        say("database: building the Java and Go peers, installing node-postgres ...")
        sh([os.path.join(PEERS_DIR, "java", "pg_peer.sh"), "build", java_out], stdout=subprocess.DEVNULL)
        sh([os.path.join(PEERS_DIR, "go", "build.sh"), go_out], stdout=subprocess.DEVNULL)
        sh([os.path.join(PEERS_DIR, "node", "install.sh")], stdout=subprocess.DEVNULL)
    rp = os.path.join(RELEASE, "bench", "respool_pg_peer")
    pool = ["--pool", str(POOL)]
    specs = [
        ("respool", "respool, one pool, one thread", [rp] + pool + ["--variant", "one-thread"], None),
        ("respool-per-thread", "respool, a pool per thread, 2 threads", [rp] + pool + ["--variant", "per-thread"],
         None),
        ("respool-shared", "respool, one thread_safe pool, 2 threads", [rp] + pool + ["--variant", "shared"], None),
        ("respool-pipelined", "respool, one pool, one thread, pipeline_depth 8",
         [rp] + pool + ["--variant", "one-thread", "--pipeline", "8"], None),
        ("respool-per-thread-pipelined", "respool, a pool per thread, 2 threads, pipeline_depth 8",
         [rp] + pool + ["--variant", "per-thread", "--pipeline", "8"], None),
        ("respool-unnamed", "respool, one pool, one thread, unnamed statements",
         [rp] + pool + ["--variant", "one-thread", "--statements", "unnamed"], None),
        (BEHIND_PGBOUNCER, "respool, one pool, one thread, unnamed statements, through PgBouncer 1.18 "
         "(transaction mode)", [rp] + pool + ["--variant", "one-thread", "--statements", "unnamed"], None),
        ("hikaricp", "HikariCP 2.7.9 + pgjdbc 42.5 (threads)",
         [os.path.join(PEERS_DIR, "java", "pg_peer.sh"), "run", java_out] + pool, None),
        ("pgxpool", "pgxpool v4.15 (goroutines)", [os.path.join(go_out, "pgxbench")] + pool, None),
        ("asyncpg", "asyncpg 0.27 pool (asyncio tasks)",
         ["/usr/bin/python3", os.path.join(PEERS_DIR, "python", "asyncpg_bench.py")] + pool, None),
        ("node-pg", "node-postgres pg.Pool (async loops)", ["node", "pgbench.js"] + pool,
         os.path.join(PEERS_DIR, "node")),
    ]
    if before:
        old = os.path.join(before, "bench", "respool_pg_peer")
        if not os.access(old, os.X_OK):
            raise RuntimeError(f"--before {before}: no bench/respool_pg_peer there (build the release preset's "
                               "respool_pg_peer target of the earlier commit into it)")
        specs += [(key + BEFORE, label + " [before]", [old] + cmd[1:], cwd)
                  for key, label, cmd, cwd in specs if key.startswith("respool") and key != BEHIND_PGBOUNCER]
    return specs


def create_table(cluster):
    cluster.psql("DROP TABLE IF EXISTS bench_kv; "
                 "CREATE TABLE bench_kv (id int PRIMARY KEY, v text NOT NULL, n bigint NOT NULL DEFAULT 0); "
                 "INSERT INTO bench_kv SELECT i, md5(i::text), 0 FROM generate_series(1, 10000) i")
    cluster.psql("VACUUM ANALYZE bench_kv")  # not in the transaction of the statements above


def run(cluster, seconds, reps, write, only=None, warmup=3.0, before=None):
    tmp = tempfile.mkdtemp(prefix="respool-compare-pg.")
    peers = []
    sampler = None
    # (workload, clients, key) -> list of (qps, p50, p99, errors, cpu_us_per_query, backends, machine busy %,
    # server cpu_us_per_query)
    results = {}
    bouncer = os.path.join(tmp, "pgbouncer")
    try:
        specs = prepare_peers(tmp, only, before)
        create_table(cluster)
        # PgBouncer in front of the same server for the peer behind it (its own process on a free port).
        sh([PGBOUNCER, "start", bouncer, os.path.join(cluster.state, "conninfo")], stdout=subprocess.DEVNULL)
        with open(os.path.join(bouncer, "conninfo")) as f:
            bouncer_port = dict(kv.split("=", 1) for kv in f.read().split())["port"]
        with open(os.path.join(bouncer, "bouncer")) as f, open(os.path.join(f.read().strip(), "pgbouncer.pid")) as g:
            bouncer_pid = int(g.read())
        sampler = BackendSampler(int(cluster.params["port"]))
        postmaster = server_pid(cluster.state)
        peers.append(Pgbench(cluster, tmp, sampler))
        peers.append(Pgbench(cluster, tmp, sampler, threads=2))
        for key, label, cmd, cwd in specs:
            if only and key.removesuffix(BEFORE) not in only:
                continue
            say(f"database: starting {label}")
            env = dict(cluster.env, PGPORT=bouncer_port) if key == BEHIND_PGBOUNCER else cluster.env
            p = Peer(key, label, cmd, env, cwd)
            peers.append(p)
            # Warm-up (`warmup` s in all): every connection open, the JIT and the caches warm, so that each
            # peer is measured at its best.
            p.run("select1", 64, warmup * 2 / 3)
            p.run("txn", 8, warmup / 3)
        rows = [(w, c) for w in WORKLOADS for c in CLIENTS]
        for rep in range(reps):
            for (w, c) in rows:
                shift = (rep + rows.index((w, c))) % len(peers)
                for p in peers[shift:] + peers[:shift]:  # the order rotates: no peer always runs first
                    if isinstance(p, Peer):
                        # Unmeasured: a pool that closed idle connections while the others ran (node-postgres
                        # after 10 s) reconnects here, not in the measurement.
                        p.run(w, c, 0.1)
                    # Behind PgBouncer the server connections are PgBouncer's: its are counted.
                    sampler.start(bouncer_pid if p.key == BEHIND_PGBOUNCER else
                                  p.proc.pid if isinstance(p, Peer) else None)
                    served0 = server_cpu(postmaster)  # (its scan of /proc stays out of the busy window)
                    busy0, all0 = machine_ticks()
                    qps, p50, p99, errors, cpu, n = p.run(w, c, seconds)
                    busy1, all1 = machine_ticks()
                    served = server_cpu(postmaster) - served0
                    backends = sampler.stop()
                    busy = 100.0 * (busy1 - busy0) / (all1 - all0) if all1 > all0 else 0.0
                    results.setdefault((w, c, p.key), []).append(
                        (qps, p50, p99, errors, cpu * 1e6 / n if n else 0.0, backends, busy,
                         served * 1e6 / n if n else 0.0))
                say(f"database: rep {rep + 1}/{reps} {w} x{c}: " + ", ".join(
                    f"{p.key} {results[(w, c, p.key)][-1][0]:,.0f}" for p in peers))
    finally:
        for p in peers:
            p.close()
        if sampler:
            sampler.close()
        subprocess.run([PGBOUNCER, "stop", bouncer], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    labels = {p.key: p.label for p in peers}
    text = report(results, labels, seconds, reps, warmup)
    if before:  # a comparison of two builds, not the published table
        print(text + "\n" + before_after(results, labels))
    else:
        publish("compare-pg", text, write)
    return results


def before_after(results, labels):
    """Each respool variant against the same variant of the earlier build, row by row (medians)."""
    lines = ["| workload | clients | respool variant | before q/s | after q/s | after ÷ before | "
             "before CPU/query | after CPU/query |", "|---|---:|---|---:|---:|---:|---:|---:|"]
    for w in WORKLOADS:
        for c in CLIENTS:
            for key in labels:
                if not key.startswith("respool") or key.endswith(BEFORE):
                    continue
                now, then = results.get((w, c, key)), results.get((w, c, key + BEFORE))
                if not now or not then:
                    continue
                q1, q0 = median([r[0] for r in now]), median([r[0] for r in then])
                c1, c0 = median([r[4] for r in now]), median([r[4] for r in then])
                lines.append(f"| {w} | {c} | {labels[key]} | {q0:,.0f} | {q1:,.0f} | {q1 / q0:.2f}x | "
                             f"{c0:.1f} µs | {c1:.1f} µs |")
    return "\n".join(lines) + "\n"


def report(results, labels, seconds, reps, warmup=3.0):
    med = {k: tuple(median([r[i] for r in v]) for i in range(5)) + (max(r[5] for r in v),) +
           tuple(median([r[i] for r in v]) for i in (6, 7)) for k, v in results.items()}
    pools = [k for k in labels if not k.startswith("pgbench") and not k.endswith(BEFORE)]
    benches = [k for k in labels if k.startswith("pgbench")]
    peers = [k for k in pools if not k.startswith("respool")]
    lines = [f"Generated by `bench/compare` (medians of {reps} interleaved runs of {seconds} s, each peer warmed "
             f"up {warmup:g} s first; pool size {POOL} for every pool; one 2-core machine runs the server and "
             f"the client).", "",
             "| workload | clients | client | queries/s | p50 | p99 | client CPU/query | server CPU/query | backends | "
             "machine busy | respool ÷ it (q/s) | respool ÷ it (CPU) |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    summary = ["| workload | clients | respool (best variant) | best pool peer | respool ÷ best peer | "
               "best of all (pgbench -j 1/-j 2 too) | respool ÷ best of all | "
               "respool (one thread) ÷ pgbench | lowest CPU/query among pools | "
               "machine busy, client CPU/query: respool's best, the best of all |",
               "|---|---:|---|---|---:|---|---:|---:|---|---|"]
    for w in WORKLOADS:
        for c in CLIENTS:
            ref = med.get((w, c, "respool"))
            for k in benches + pools:
                m = med.get((w, c, k))
                if not m:
                    continue
                qps, p50, p99, errors, cpu, backends, busy, served = m
                ratio_q = f"{ref[0] / qps:.2f}x" if ref and k != "respool" else ""
                ratio_c = f"{ref[4] / cpu:.2f}x" if ref and k != "respool" and cpu else ""
                err = f" ({errors:.0f} failed)" if errors else ""
                lines.append(f"| {w} | {c} | {labels[k]} | {qps:,.0f}{err} | {p50 / 1000:.2f} ms | "
                             f"{p99 / 1000:.2f} ms | {cpu:.1f} µs | {served:.1f} µs | {backends} | {busy:.0f} % | "
                             f"{ratio_q} | {ratio_c} |")
            ours = [k for k in pools if k.startswith("respool") and (w, c, k) in med]
            theirs = [k for k in peers if (w, c, k) in med]
            if not ours:
                continue
            best = max(ours, key=lambda k: med[(w, c, k)][0])
            rival = max(theirs, key=lambda k: med[(w, c, k)][0]) if theirs else None
            cheapest = min([k for k in pools if (w, c, k) in med], key=lambda k: med[(w, c, k)][4])
            floor = med.get((w, c, "pgbench"))
            top = max(theirs + [k for k in benches if (w, c, k) in med], key=lambda k: med[(w, c, k)][0])
            versus_rival = (f"{labels[rival]}: {med[(w, c, rival)][0]:,.0f} | "
                            f"{med[(w, c, best)][0] / med[(w, c, rival)][0]:.2f}x" if rival else "n/a | n/a")
            summary.append(
                f"| {w} | {c} | {labels[best]}: {med[(w, c, best)][0]:,.0f} | {versus_rival} | "
                f"{labels[top]}: {med[(w, c, top)][0]:,.0f} | {med[(w, c, best)][0] / med[(w, c, top)][0]:.2f}x | "
                + (f"{ref[0] / floor[0]:.2f}x" if ref and floor else "n/a")
                + f" | {labels[cheapest]} ({med[(w, c, cheapest)][4]:.1f} µs) | "
                f"{med[(w, c, best)][6]:.0f} %, {med[(w, c, best)][4]:.1f} µs; "
                f"{med[(w, c, top)][6]:.0f} %, {med[(w, c, top)][4]:.1f} µs |")
    return "\n".join(lines + [""] + summary) + "\n"
