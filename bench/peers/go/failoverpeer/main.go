// Command failoverpeer is the pgxpool v4 client of bench/failover (bench/peers/PROTOCOL.md, "Failover
// peers"): writes into the ledger table under a failover, and reads through a standby-preferring pool.
//
//	failoverpeer --name NAME --hosts 127.0.0.1:P0,127.0.0.1:P1 --pool N
//
// User, password and database come from PGUSER, PGPASSWORD and PGDATABASE. Writes go through a pool
// with target_session_attrs=read-write, reads through a second pool with
// target_session_attrs=prefer-standby (which pgx v4 treats as "any": the first host that answers);
// every other pool setting is pgxpool's default, MaxConns aside.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v4/pgxpool"
)

const (
	insertSQL = "INSERT INTO ledger (client, seq) VALUES ($1, $2) RETURNING inet_server_port()"
	newestSQL = "SELECT coalesce(max(seq), 0), inet_server_port() FROM ledger WHERE client = $1"
)

// logFile is one command's log: lines from every worker, each written whole and at once (the
// harness reads the log while it grows, to see when the client has written on the new primary).
type logFile struct {
	mu  sync.Mutex
	f   *os.File
	err error // the first failed write
}

func (l *logFile) line(s string) {
	l.mu.Lock()
	if _, err := l.f.WriteString(s + "\n"); err != nil && l.err == nil {
		l.err = err
	}
	l.mu.Unlock()
}

func (l *logFile) close() error {
	if err := l.f.Close(); err != nil && l.err == nil {
		l.err = err
	}
	return l.err
}

// oneLine keeps an error message on its log line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

type peer struct {
	name   string
	writes *pgxpool.Pool
	reads  *pgxpool.Pool
	seq    int64 // the last sequence number handed to a writer
	stop   atomic.Bool
	wg     sync.WaitGroup
	logs   []*logFile
}

// work runs one worker: request, log, pause until interval has passed since the request started.
func (p *peer) work(log *logFile, interval time.Duration, request func(ctx context.Context) (int64, int32, error)) {
	defer p.wg.Done()
	ctx := context.Background()
	for !p.stop.Load() {
		start := time.Now()
		value, port, err := request(ctx)
		end := time.Now()
		if err != nil {
			v := "-"
			if value != 0 {
				v = strconv.FormatInt(value, 10)
			}
			log.line(fmt.Sprintf("err %d %d %s %s", start.UnixNano(), end.UnixNano(), v, oneLine(err)))
		} else {
			log.line(fmt.Sprintf("ok %d %d %d %d", start.UnixNano(), end.UnixNano(), value, port))
		}
		if rest := interval - end.Sub(start); rest > 0 {
			time.Sleep(rest)
		}
	}
}

func (p *peer) write(ctx context.Context) (int64, int32, error) {
	seq := atomic.AddInt64(&p.seq, 1)
	var port int32
	err := p.writes.QueryRow(ctx, insertSQL, p.name, seq).Scan(&port)
	return seq, port, err
}

func (p *peer) read(ctx context.Context) (int64, int32, error) {
	var newest int64
	var port int32
	err := p.reads.QueryRow(ctx, newestSQL, p.name).Scan(&newest, &port)
	return newest, port, err
}

// answer is the reply to one command line; quit reports whether the peer should exit.
func (p *peer) answer(fields []string) (reply string, quit bool) {
	switch fields[0] {
	case "quit":
		return "", true
	case "write", "read":
		if len(fields) != 4 {
			return "error usage: " + fields[0] + " WORKERS INTERVAL_MS LOGFILE", false
		}
		workers, err := strconv.Atoi(fields[1])
		if err != nil || workers < 1 {
			return fmt.Sprintf("error WORKERS must be a positive integer, not %q", fields[1]), false
		}
		ms, err := strconv.Atoi(fields[2])
		if err != nil || ms < 0 {
			return fmt.Sprintf("error INTERVAL_MS must be a non-negative integer, not %q", fields[2]), false
		}
		f, err := os.Create(fields[3])
		if err != nil {
			return "error " + oneLine(err), false
		}
		log := &logFile{f: f}
		p.logs = append(p.logs, log)
		request := p.write
		if fields[0] == "read" {
			request = p.read
		}
		p.stop.Store(false)
		for i := 0; i < workers; i++ {
			p.wg.Add(1)
			go p.work(log, time.Duration(ms)*time.Millisecond, request)
		}
		return "started", false
	case "stop":
		p.stop.Store(true)
		p.wg.Wait()
		for _, l := range p.logs {
			if err := l.close(); err != nil {
				return "error " + oneLine(err), false
			}
		}
		p.logs = nil
		return "stopped", false
	}
	return fmt.Sprintf("error unknown command %q (write, read, stop, quit)", fields[0]), false
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "failoverpeer: "+format+"\n", args...)
	os.Exit(1)
}

// newPool makes a pool over every host with the given target_session_attrs; the password stays in
// the environment (pgconn reads PGPASSWORD).
func newPool(hosts string, attrs string, size int) *pgxpool.Pool {
	u := fmt.Sprintf("postgres://%s@%s/%s?target_session_attrs=%s", url.PathEscape(os.Getenv("PGUSER")), hosts,
		url.PathEscape(os.Getenv("PGDATABASE")), attrs)
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		fail("%v", err)
	}
	cfg.MaxConns = int32(size)
	pool, err := pgxpool.ConnectConfig(context.Background(), cfg)
	if err != nil {
		fail("%v", err)
	}
	return pool
}

func main() {
	name := flag.String("name", "", "the client column of the ledger rows")
	hosts := flag.String("hosts", "", "host:port,host:port... (every node)")
	size := flag.Int("pool", 0, "each pool's maximum size (MaxConns), at least 1")
	flag.Parse()
	if *name == "" || *hosts == "" || *size < 1 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: failoverpeer --name NAME --hosts H:P,H:P --pool N   (PGUSER, PGPASSWORD, PGDATABASE)")
		os.Exit(2)
	}
	p := &peer{name: *name}
	p.writes = newPool(*hosts, "read-write", *size)
	p.reads = newPool(*hosts, "prefer-standby", *size)
	defer p.writes.Close()
	defer p.reads.Close()

	out := bufio.NewWriter(os.Stdout)
	say := func(line string) {
		fmt.Fprintln(out, line)
		if err := out.Flush(); err != nil {
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
		reply, quit := p.answer(fields)
		if quit {
			break
		}
		say(reply)
	}
	p.stop.Store(true)
	p.wg.Wait()
}
