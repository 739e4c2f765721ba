// Command kvservice is the Go HTTP service of bench/compare (bench/peers/PROTOCOL.md): net/http and
// pgxpool v4 serving GET /kv/{key} and POST /kv/{key}/incr with the statements of respool serve.
//
//	kvservice --listen 127.0.0.1:PORT --pool N    (server from PGHOST, PGPORT, PGUSER, ...)
//
// It prints "listening on http://ADDR" once listening and stops on SIGTERM or SIGINT.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
)

const (
	createSQL = "CREATE TABLE IF NOT EXISTS respool_kv (k text PRIMARY KEY, v bytea NOT NULL)"
	getSQL    = "SELECT v FROM respool_kv WHERE k = $1"
	// Locks the key's row, inserting "0" when it is missing, and returns the stored value: a
	// concurrent increment of the same key waits here for the committed value.
	lockSQL   = "INSERT INTO respool_kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET k = excluded.k RETURNING v"
	updateSQL = "UPDATE respool_kv SET v = $2 WHERE k = $1"
)

type service struct {
	pool *pgxpool.Pool
}

func (s *service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The path as sent: keys are not percent-decoded, so "%41" is a bad key rather than "A".
	path := r.URL.EscapedPath()
	const prefix = "/kv/"
	if !strings.HasPrefix(path, prefix) {
		jsonError(w, http.StatusNotFound, "not_found", "no such path")
		return
	}
	key, rest, hasRest := strings.Cut(path[len(prefix):], "/")
	incr := hasRest && rest == "incr"
	switch {
	case hasRest && !incr:
		jsonError(w, http.StatusNotFound, "not_found", "no such path")
		return
	case incr && r.Method != http.MethodPost:
		methodNotAllowed(w, http.MethodPost)
		return
	case !incr && r.Method != http.MethodGet:
		methodNotAllowed(w, http.MethodGet)
		return
	case !validKey(key):
		jsonError(w, http.StatusBadRequest, "bad_key", "a key is 1 to 200 characters of A-Z a-z 0-9 . _ -")
		return
	}
	if incr {
		s.incr(w, r, key)
	} else {
		s.get(w, r, key)
	}
}

func validKey(key string) bool {
	if len(key) == 0 || len(key) > 200 {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func (s *service) get(w http.ResponseWriter, r *http.Request, key string) {
	ctx := r.Context()
	// Acquired explicitly (rather than pool.QueryRow) to tell "no connection" (503) from a failed
	// statement (500).
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		unavailable(w, r, err)
		return
	}
	defer conn.Release()
	var v []byte
	switch err := conn.QueryRow(ctx, getSQL, key).Scan(&v); {
	case errors.Is(err, pgx.ErrNoRows):
		jsonError(w, http.StatusNotFound, "not_found", "no such key")
	case err != nil:
		databaseError(w, r, err)
	default:
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(v)
	}
}

func (s *service) incr(w http.ResponseWriter, r *http.Request, key string) {
	ctx := r.Context()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		unavailable(w, r, err)
		return
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		databaseError(w, r, err)
		return
	}
	// A no-op once committed; after a failed statement it ends the transaction before the
	// connection goes back (pgxpool would otherwise close a connection left in a transaction).
	defer tx.Rollback(ctx)

	var stored []byte
	if err := tx.QueryRow(ctx, lockSQL, key, []byte("0")).Scan(&stored); err != nil {
		databaseError(w, r, err)
		return
	}
	next, status, code, message := increment(string(stored))
	if status != http.StatusOK {
		if err := tx.Rollback(ctx); err != nil {
			databaseError(w, r, err)
			return
		}
		jsonError(w, status, code, message)
		return
	}
	if _, err := tx.Exec(ctx, updateSQL, key, []byte(next)); err != nil {
		databaseError(w, r, err)
		return
	}
	if err := tx.Commit(ctx); err != nil {
		databaseError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Write([]byte(next))
}

// increment is the stored value plus one in decimal, or the 409 that refuses it: the value must be
// [+-]?[0-9]+ within signed 64 bits (beyond them it is not such an integer), and below the maximum.
func increment(stored string) (next string, status int, code, message string) {
	// With base 10 (not 0), ParseInt takes exactly [+-]?[0-9]+: no prefix, no underscores, no spaces.
	v, err := strconv.ParseInt(stored, 10, 64)
	if err != nil {
		return "", http.StatusConflict, "not_an_integer", "the stored value is not an integer within signed 64 bits"
	}
	if v == math.MaxInt64 {
		return "", http.StatusConflict, "overflow", "the increment would overflow signed 64 bits"
	}
	return strconv.FormatInt(v+1, 10), http.StatusOK, "", ""
}

// jsonError writes respool serve's error body (docs/08-http.md). The texts are fixed, so no credential can leak into them.
func jsonError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":"%s","message":"%s"}`, code, message)
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	jsonError(w, http.StatusMethodNotAllowed, "method_not_allowed", "this path does not take that method")
}

// unavailable answers a request for which no connection could be had.
func unavailable(w http.ResponseWriter, r *http.Request, err error) {
	log.Printf("%s %s: no connection: %v", r.Method, r.URL.EscapedPath(), err)
	w.Header().Set("Retry-After", "1")
	jsonError(w, http.StatusServiceUnavailable, "database_unavailable", "the database cannot be reached")
}

// databaseError answers any other database failure. pgx's errors name host, user and database but
// never the password; they go to the log only.
func databaseError(w http.ResponseWriter, r *http.Request, err error) {
	log.Printf("%s %s: %v", r.Method, r.URL.EscapedPath(), err)
	jsonError(w, http.StatusInternalServerError, "database_error", "the database reported an error")
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "the address to listen on (port 0: any free port)")
	size := flag.Int("pool", 4, "the pool's maximum size (MaxConns)")
	flag.Parse()
	if *size < 1 || *size > math.MaxInt32 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: kvservice --listen 127.0.0.1:PORT --pool N   (the server from the PG* environment)")
		os.Exit(2)
	}
	log.SetPrefix("kvservice: ")

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	cfg, err := pgxpool.ParseConfig("") // the PG* environment, as libpq reads it
	if err != nil {
		log.Fatal(err)
	}
	cfg.MaxConns = int32(*size)
	pool, err := pgxpool.ConnectConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, createSQL); err != nil && !concurrentCreate(err) {
		pool.Close()
		log.Fatalf("creating respool_kv: %v", err)
	}

	// Listening first, so that port 0 works and the printed port is the bound one.
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		pool.Close()
		log.Fatal(err)
	}
	srv := &http.Server{Handler: &service{pool: pool}}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Printf("listening on http://%s\n", ln.Addr())

	select {
	case err := <-served:
		pool.Close()
		log.Fatal(err)
	case <-ctx.Done():
	}
	// Requests in flight finish (for a while) before the pool closes under them.
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		log.Printf("shutdown: %v", err)
	}
}

// concurrentCreate reports whether CREATE TABLE IF NOT EXISTS met another session creating the same
// table (a unique violation on the catalog, or the table itself): either way it is there.
func concurrentCreate(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "23505" || pgErr.Code == "42P07")
}
