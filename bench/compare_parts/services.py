"""HTTP services on PostgreSQL under wrk: `respool serve` (one event loop with a pool of 8, and two loops
with a pool of 4 each) next to a Go service (net/http + pgxpool v4) and a Node service (http + pg.Pool),
each with 8 connections, all implementing `GET /kv/{key}` and `POST /kv/{key}/incr` with the same
statements (bench/peers/PROTOCOL.md). The services run side by side for the whole part and are measured
in rotation, rep by rep; medians over the reps. CPU per request is the service process's user + system
time over the wrk run. Writes docs/benchmarks.md between the compare-http markers."""
import os
import re
import shutil
import subprocess
import tempfile

from .common import RELEASE, ROOT, build_release, ensure_node, median, process_cpu, say, sh, publish

PEERS_DIR = os.path.join(ROOT, "bench", "peers")
KEYS = 1000
CONNECTIONS = 64  # wrk's
ROUTES = {
    "GET /kv/{key}": "request = function() return wrk.format('GET', '/kv/k' .. math.random(0, %d)) end\n" % (KEYS - 1),
    "POST /kv/{key}/incr": ("request = function() return wrk.format('POST', '/kv/c' .. math.random(0, %d) .. '/incr') "
                            "end\n" % (KEYS - 1)),
}


class Service:
    def __init__(self, key, label, cmd, env, cwd=None):
        self.key, self.label = key, label
        self.proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)
        line = self.proc.stdout.readline()
        m = re.match(r"listening on http://([\d.]+):(\d+)", line)
        if not m:
            self.close()
            raise RuntimeError(f"{label} did not start: {line!r}")
        self.url = f"http://{m.group(1)}:{m.group(2)}"

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def ms(text):
    v = float(re.match(r"([\d.]+)", text).group(1))
    return v / 1000 if text.endswith("us") else v * 1000 if text.endswith("s") and not text.endswith("ms") else v


def wrk(url, script, seconds):
    out = sh(["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{seconds}s", "--latency", "-s", script, url],
             capture_output=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    total = int(re.search(r"(\d+) requests in", out).group(1))
    p50 = ms(re.search(r"\s50%\s+(\S+)", out).group(1))
    p99 = ms(re.search(r"\s99%\s+(\S+)", out).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    return rps, p50, p99, int(non2xx.group(1)) if non2xx else 0, total, errors.group(1) if errors else ""


def run(cluster, seconds, reps, write):
    build_release(["respool_cli"])
    tmp = tempfile.mkdtemp(prefix="respool-compare-http.")
    services = []
    results = {}  # (route, key) -> list of (rps, p50, p99, non2xx, cpu_us_per_request)
    try:
        go_out = os.path.join(tmp, "go")
        sh([os.path.join(PEERS_DIR, "go", "build.sh"), go_out], stdout=subprocess.DEVNULL)
        ensure_node()
        sh([os.path.join(PEERS_DIR, "node", "install.sh")], stdout=subprocess.DEVNULL)
        cluster.psql("DROP TABLE IF EXISTS respool_kv; "
                     "CREATE TABLE respool_kv (k text PRIMARY KEY, v bytea NOT NULL); "
                     f"INSERT INTO respool_kv SELECT 'k' || i, convert_to(repeat('v', 100), 'UTF8') "
                     f"FROM generate_series(0, {KEYS - 1}) i; "
                     f"INSERT INTO respool_kv SELECT 'c' || i, '\\x30' FROM generate_series(0, {KEYS - 1}) i")
        cluster.psql("VACUUM ANALYZE respool_kv")
        cli = os.path.join(RELEASE, "tools", "respool", "respool")
        listen = ["--listen", "127.0.0.1:0"]
        specs = [
            ("respool", "respool serve, 1 loop, --max 8", [cli, "serve", "--db", cluster.conninfo] + listen
             + ["--max", "8"], None),
            ("respool-2", "respool serve, 2 loops, --max 4 each", [cli, "serve", "--db", cluster.conninfo] + listen
             + ["--threads", "2", "--max", "4"], None),
            ("go", "Go net/http + pgxpool v4", [os.path.join(go_out, "kvservice")] + listen + ["--pool", "8"], None),
            ("node", "Node http + pg.Pool", ["node", "kvservice.js"] + listen + ["--pool", "8"],
             os.path.join(PEERS_DIR, "node")),
        ]
        scripts = {}
        for i, (route, lua) in enumerate(ROUTES.items()):
            scripts[route] = os.path.join(tmp, f"route{i}.lua")
            with open(scripts[route], "w") as f:
                f.write(lua)
        for key, label, cmd, cwd in specs:
            say(f"services: starting {label}")
            s = Service(key, label, cmd, cluster.env, cwd)
            services.append(s)
            for route in ROUTES:  # warm-up: connections open, caches and JIT warm
                wrk(s.url, scripts[route], 1)
        for rep in range(reps):
            for route in ROUTES:
                shift = rep % len(services)
                for s in services[shift:] + services[:shift]:
                    cpu0 = process_cpu(s.proc.pid)
                    rps, p50, p99, bad, total, errors = wrk(s.url, scripts[route], seconds)
                    cpu = process_cpu(s.proc.pid) - cpu0
                    if errors:
                        say(f"services: {s.label} {route}: socket errors {errors}")
                    results.setdefault((route, s.key), []).append(
                        (rps, p50, p99, bad, cpu * 1e6 / total if total else 0.0))
                say(f"services: rep {rep + 1}/{reps} {route}: " + ", ".join(
                    f"{s.key} {results[(route, s.key)][-1][0]:,.0f}" for s in services))
    finally:
        for s in services:
            s.close()
        shutil.rmtree(tmp, ignore_errors=True)
    labels = {s.key: s.label for s in services}
    publish("compare-http", report(results, labels, seconds, reps), write)
    return results


def report(results, labels, seconds, reps):
    med = {k: tuple(median([r[i] for r in v]) for i in range(5)) for k, v in results.items()}
    lines = [f"Generated by `bench/compare` (wrk -t1 -c{CONNECTIONS}, medians of {reps} interleaved runs of "
             f"{seconds} s; 8 database connections per service; wrk, the services and the server share one "
             "2-core machine).", "",
             "| route | service | requests/s | p50 | p99 | non-2xx | service CPU/request | respool ÷ it (req/s) |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for route in ROUTES:
        ref = med.get((route, "respool"))
        for key, label in labels.items():
            m = med.get((route, key))
            if not m:
                continue
            rps, p50, p99, bad, cpu = m
            ratio = f"{ref[0] / rps:.2f}x" if ref and key != "respool" else ""
            lines.append(f"| `{route}` | {label} | {rps:,.0f} | {p50:.2f} ms | {p99:.2f} ms | {bad:.0f} | "
                         f"{cpu:.1f} µs | {ratio} |")
    return "\n".join(lines) + "\n"
