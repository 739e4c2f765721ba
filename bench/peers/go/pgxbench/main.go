// Command pgxbench is the pgxpool v4 database peer of bench/compare (bench/peers/PROTOCOL.md).
//
//	pgxbench --pool N    (server from PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE)
//
// It prints "ready" once the pool exists, then answers each command read from standard input
// ("run WORKLOAD CLIENTS SECONDS", "quit") with one line on standard output.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
)

const maxID = 10000 // bench_kv holds ids 1..maxID

// A workload is one query (for txn, one transaction) on the row id.
type workload func(ctx context.Context, pool *pgxpool.Pool, id int32) error

var workloads = map[string]workload{
	"select1": func(ctx context.Context, pool *pgxpool.Pool, _ int32) error {
		var one int32
		return pool.QueryRow(ctx, "SELECT 1").Scan(&one)
	},
	"lookup": func(ctx context.Context, pool *pgxpool.Pool, id int32) error {
		var v string
		return pool.QueryRow(ctx, "SELECT v FROM bench_kv WHERE id = $1", id).Scan(&v)
	},
	// BeginFunc borrows one connection for all four statements; it commits when the function
	// returns nil and rolls back otherwise.
	"txn": func(ctx context.Context, pool *pgxpool.Pool, id int32) error {
		return pool.BeginFunc(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "UPDATE bench_kv SET n = n + 1 WHERE id = $1", id); err != nil {
				return err
			}
			var v string
			var n int64
			return tx.QueryRow(ctx, "SELECT v, n FROM bench_kv WHERE id = $1", id).Scan(&v, &n)
		})
	},
}

// What one client did during a run.
type clientResult struct {
	latencies []time.Duration // of the successful queries
	errors    int
	firstErr  error
}

// run has clients goroutines run w back to back until seconds have passed since the start.
func run(pool *pgxpool.Pool, w workload, clients int, seconds float64) string {
	ctx := context.Background()
	results := make([]clientResult, clients)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(time.Duration(seconds * float64(time.Second)))
	for c := range results {
		wg.Add(1)
		go func(r *clientResult, seed int64) {
			defer wg.Done()
			// A source per goroutine: the global one takes a lock on every draw.
			rng := rand.New(rand.NewSource(seed))
			for {
				// One clock read is both the deadline check and the query's start.
				t0 := time.Now()
				if !t0.Before(deadline) {
					return
				}
				if err := w(ctx, pool, int32(rng.Intn(maxID))+1); err != nil {
					if r.errors == 0 {
						r.firstErr = err
					}
					r.errors++
					continue
				}
				r.latencies = append(r.latencies, time.Since(t0))
			}
		}(&results[c], start.UnixNano()+int64(c))
	}
	wg.Wait()
	elapsed := time.Since(start)

	var all []time.Duration
	errors := 0
	for _, r := range results {
		all = append(all, r.latencies...)
		if r.errors > 0 {
			// Standard error only: the harness reads the counts from the result line.
			fmt.Fprintf(os.Stderr, "pgxbench: %d failed; first: %v\n", r.errors, r.firstErr)
		}
		errors += r.errors
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	return fmt.Sprintf("result queries=%d seconds=%.6f p50_us=%.1f p99_us=%.1f errors=%d",
		len(all), elapsed.Seconds(), percentileUs(all, 0.50), percentileUs(all, 0.99), errors)
}

// percentileUs is the nearest-rank percentile p of sorted, in microseconds (0 when empty).
func percentileUs(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	return float64(sorted[i].Nanoseconds()) / 1e3
}

// answer is the reply to one command line; quit reports whether the peer should exit.
func answer(pool *pgxpool.Pool, fields []string) (reply string, quit bool) {
	switch fields[0] {
	case "quit":
		return "", true
	case "run":
		if len(fields) != 4 {
			return "error usage: run WORKLOAD CLIENTS SECONDS", false
		}
		w, ok := workloads[fields[1]]
		if !ok {
			return fmt.Sprintf("error unknown workload %q (select1, lookup, txn)", fields[1]), false
		}
		clients, err := strconv.Atoi(fields[2])
		if err != nil || clients < 1 {
			return fmt.Sprintf("error CLIENTS must be a positive integer, not %q", fields[2]), false
		}
		seconds, err := strconv.ParseFloat(fields[3], 64)
		if err != nil || seconds < 0 || math.IsInf(seconds, 0) || math.IsNaN(seconds) {
			return fmt.Sprintf("error SECONDS must be a non-negative decimal, not %q", fields[3]), false
		}
		return run(pool, w, clients, seconds), false
	}
	return fmt.Sprintf("error unknown command %q (run, quit)", fields[0]), false
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "pgxbench: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	size := flag.Int("pool", 0, "the pool's maximum size (MaxConns), at least 1")
	flag.Parse()
	if *size < 1 || *size > math.MaxInt32 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: pgxbench --pool N   (the server from the PG* environment)")
		os.Exit(2)
	}

	// An empty connection string: pgconn reads PGHOST, PGPORT, ... as libpq does.
	cfg, err := pgxpool.ParseConfig("")
	if err != nil {
		fail("%v", err)
	}
	cfg.MaxConns = int32(*size)
	pool, err := pgxpool.ConnectConfig(context.Background(), cfg)
	if err != nil {
		fail("%v", err)
	}
	defer pool.Close()

	// Standard output is a pipe: every answer is flushed at once, since the harness waits for it.
	out := bufio.NewWriter(os.Stdout)
	say := func(line string) {
		fmt.Fprintln(out, line)
		if err := out.Flush(); err != nil {
			pool.Close()
			fail("writing standard output: %v", err)
		}
	}
	say("ready")

	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		fields := strings.Fields(in.Text())
		if len(fields) == 0 {
			continue
		}
		reply, quit := answer(pool, fields)
		if quit {
			return
		}
		say(reply)
	}
	if err := in.Err(); err != nil {
		pool.Close()
		fail("reading standard input: %v", err)
	}
}
