#!/usr/bin/python3
"""asyncpg's pool as a database bench peer of bench/compare (bench/peers/PROTOCOL.md, "Database bench
peers").

    PGHOST=... PGPORT=... PGUSER=... PGPASSWORD=... PGDATABASE=... \
        /usr/bin/python3 bench/peers/python/asyncpg_bench.py --pool N

Needs Debian's python3-asyncpg (Debian 12: asyncpg 0.27) for Debian's /usr/bin/python3; the harness
installs it. Run it with /usr/bin/python3, not another python3 that may come first on PATH.

The pool is asyncpg.create_pool with max_size=N and asyncpg's defaults otherwise; asyncpg reads the
server from the PG* environment itself. Clients are asyncio tasks on one event loop. Single statements
go through pool.fetchval (asyncpg's statement cache prepares them, as it does by default); a txn
borrows one connection with pool.acquire() and runs in connection.transaction().

Commands on standard input, one at a time, each answered by one line on standard output:
    run WORKLOAD CLIENTS SECONDS -> result queries=Q seconds=S p50_us=P50 p99_us=P99 errors=E
    quit (or end of input)       -> the pool is closed, exit status 0
"""
import argparse
import asyncio
import random
import sys
import time

import asyncpg

SELECT1 = "SELECT 1"
LOOKUP = "SELECT v FROM bench_kv WHERE id = $1"
TXN_UPDATE = "UPDATE bench_kv SET n = n + 1 WHERE id = $1"
TXN_SELECT = "SELECT v, n FROM bench_kv WHERE id = $1"
ROWS = 10000


async def q_select1(pool):
    value = await pool.fetchval(SELECT1)
    if value != 1:
        raise RuntimeError("SELECT 1 returned %r" % (value,))


async def q_lookup(pool):
    v = await pool.fetchval(LOOKUP, random.randint(1, ROWS))
    if v is None:
        raise RuntimeError("lookup: no row")


async def q_txn(pool):
    key = random.randint(1, ROWS)
    async with pool.acquire() as conn:
        async with conn.transaction():
            await conn.execute(TXN_UPDATE, key)
            row = await conn.fetchrow(TXN_SELECT, key)
            if row is None:
                raise RuntimeError("txn: no row")
            v, n = row["v"], row["n"]
            if v is None or n is None:
                raise RuntimeError("txn: null value")


WORKLOADS = {"select1": q_select1, "lookup": q_lookup, "txn": q_txn}


def percentile(sorted_ns, q):
    """The latency at quantile q of the sorted latencies (index floor(q * (n - 1))), in microseconds."""
    if not sorted_ns:
        return 0.0
    return sorted_ns[int(q * (len(sorted_ns) - 1))] / 1000.0


async def run(pool, workload, clients, seconds):
    query = WORKLOADS[workload]
    latencies = []  # nanoseconds of every successful query (one event loop: no locking needed)
    counters = {"errors": 0}
    finished = []  # perf_counter_ns of each client's end
    start = time.perf_counter_ns()
    deadline = start + int(seconds * 1e9)

    async def client():
        clock = time.perf_counter_ns
        while clock() < deadline:  # the deadline is checked before a query starts
            t0 = clock()
            try:
                await query(pool)
            except Exception as e:  # a failure never ends the run
                counters["errors"] += 1
                if counters["errors"] <= 3:
                    print("asyncpg_bench: %s: %s" % (type(e).__name__, e), file=sys.stderr, flush=True)
                continue
            latencies.append(clock() - t0)
        finished.append(clock())

    await asyncio.gather(*(client() for _ in range(clients)))
    elapsed = (max(finished) if finished else time.perf_counter_ns()) - start
    latencies.sort()
    return "result queries=%d seconds=%.3f p50_us=%.1f p99_us=%.1f errors=%d" % (
        len(latencies), elapsed / 1e9, percentile(latencies, 0.50), percentile(latencies, 0.99),
        counters["errors"])


def parse_run(fields):
    """(workload, clients, seconds) of a `run` command's fields, or a message saying what is wrong."""
    if len(fields) != 4:
        return "usage: run WORKLOAD CLIENTS SECONDS"
    workload = fields[1]
    if workload not in WORKLOADS:
        return "unknown workload %s" % workload
    try:
        clients, seconds = int(fields[2]), float(fields[3])
    except ValueError:
        return "bad CLIENTS or SECONDS"
    if clients < 1 or not (0 <= seconds < float("inf")):
        return "bad CLIENTS or SECONDS"
    return workload, clients, seconds


async def main():
    ap = argparse.ArgumentParser(description="asyncpg pool bench peer (bench/peers/PROTOCOL.md)")
    ap.add_argument("--pool", type=int, required=True, help="the pool's maximum size")
    args = ap.parse_args()
    if args.pool < 1:
        ap.error("--pool must be at least 1")

    # max_size is N; everything else is asyncpg's default, except min_size: its default (10) would
    # exceed a max_size below 10 (create_pool refuses min_size > max_size), so it is min(10, N) --
    # the default whenever the default is allowed.
    try:
        pool = await asyncpg.create_pool(min_size=min(10, args.pool), max_size=args.pool)
    except Exception as e:
        print("asyncpg_bench: cannot create the pool: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return 1
    print("ready", flush=True)

    loop = asyncio.get_running_loop()
    try:
        while True:
            # Read in the default executor's thread, so that the event loop is never blocked on stdin.
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:  # end of input
                break
            fields = line.split()
            if not fields:
                continue
            if fields[0] == "quit":
                break
            if fields[0] == "run":
                parsed = parse_run(fields)
                if isinstance(parsed, str):
                    print("error " + parsed, flush=True)
                else:
                    print(await run(pool, *parsed), flush=True)
            else:
                print("error unknown command " + fields[0], flush=True)
    finally:
        await pool.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
