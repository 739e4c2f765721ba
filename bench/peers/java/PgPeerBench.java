// HikariCP + pgjdbc as a database bench peer of bench/compare (bench/peers/PROTOCOL.md, "Database bench
// peers"). Built and started by bench/peers/java/pg_peer.sh:
//
//   bench/peers/java/pg_peer.sh build OUTDIR
//   PGHOST=... PGPORT=... PGUSER=... PGPASSWORD=... PGDATABASE=... bench/peers/java/pg_peer.sh run OUTDIR --pool N
//
// The pool is a HikariDataSource with maximumPoolSize N and HikariCP's defaults otherwise; the JDBC URL
// jdbc:postgresql://HOST:PORT/DB, the user and the password come from the PG* environment (pgjdbc only
// speaks TCP, so PGHOST must be a host name or address, not a socket folder). Clients are platform
// threads, created for each run. Every query borrows a Connection and uses PreparedStatements; pgjdbc's
// default prepareThreshold decides when they become server-side prepared statements.
//
// Commands on standard input, one at a time, each answered by one line on standard output:
//   run WORKLOAD CLIENTS SECONDS -> result queries=Q seconds=S p50_us=P50 p99_us=P99 errors=E
//   quit (or end of input)       -> the pool is closed, exit status 0
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;

public final class PgPeerBench {
    static final String SELECT1 = "SELECT 1";
    static final String LOOKUP = "SELECT v FROM bench_kv WHERE id = ?";
    static final String TXN_UPDATE = "UPDATE bench_kv SET n = n + 1 WHERE id = ?";
    static final String TXN_SELECT = "SELECT v, n FROM bench_kv WHERE id = ?";
    static final int ROWS = 10000;

    interface Query {
        void run(HikariDataSource ds) throws Exception;
    }

    static void select1(HikariDataSource ds) throws SQLException {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(SELECT1)) {
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next() || rs.getInt(1) != 1) throw new SQLException("SELECT 1: unexpected result");
            }
        }
    }

    static void lookup(HikariDataSource ds) throws SQLException {
        int id = ThreadLocalRandom.current().nextInt(1, ROWS + 1);
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(LOOKUP)) {
            ps.setInt(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next() || rs.getString(1) == null) throw new SQLException("lookup: no row");
            }
        }
    }

    static void txn(HikariDataSource ds) throws SQLException {
        int id = ThreadLocalRandom.current().nextInt(1, ROWS + 1);
        try (Connection c = ds.getConnection()) {
            // pgjdbc sends BEGIN with the first statement; HikariCP restores autocommit when the
            // connection goes back to the pool.
            c.setAutoCommit(false);
            try {
                try (PreparedStatement up = c.prepareStatement(TXN_UPDATE)) {
                    up.setInt(1, id);
                    up.executeUpdate();
                }
                try (PreparedStatement sel = c.prepareStatement(TXN_SELECT)) {
                    sel.setInt(1, id);
                    try (ResultSet rs = sel.executeQuery()) {
                        if (!rs.next()) throw new SQLException("txn: no row");
                        String v = rs.getString(1);
                        rs.getLong(2);
                        if (v == null || rs.wasNull()) throw new SQLException("txn: null value");
                    }
                }
                c.commit();
            } catch (SQLException | RuntimeException e) {
                try {
                    c.rollback();
                } catch (SQLException ignored) {
                    // the connection is broken; HikariCP evicts it
                }
                throw e;
            }
        }
    }

    static Query workload(String name) {
        switch (name) {
            case "select1": return PgPeerBench::select1;
            case "lookup": return PgPeerBench::lookup;
            case "txn": return PgPeerBench::txn;
            default: return null;
        }
    }

    // The latencies of one client, in nanoseconds, without boxing.
    static final class Samples {
        long[] ns = new long[4096];
        int n;
        void add(long v) {
            if (n == ns.length) ns = Arrays.copyOf(ns, n * 2);
            ns[n++] = v;
        }
    }

    // The latency at quantile q of the sorted latencies (index floor(q * (n - 1))), in microseconds.
    static double percentile(long[] sorted, double q) {
        if (sorted.length == 0) return 0.0;
        return sorted[(int) (q * (sorted.length - 1))] / 1000.0;
    }

    static String run(HikariDataSource ds, Query query, int clients, double seconds) throws InterruptedException {
        Samples[] samples = new Samples[clients];
        long[] finished = new long[clients];
        AtomicInteger errors = new AtomicInteger();
        CountDownLatch go = new CountDownLatch(1);
        long[] start = new long[1];  // written before go.countDown(), read after go.await()
        long budget = (long) (seconds * 1e9);
        Thread[] threads = new Thread[clients];
        for (int i = 0; i < clients; i++) {
            final int k = i;
            samples[k] = new Samples();
            threads[k] = new Thread(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
                long deadline = start[0] + budget;
                Samples mine = samples[k];
                while (System.nanoTime() - deadline < 0) {  // the deadline is checked before a query starts
                    long t0 = System.nanoTime();
                    try {
                        query.run(ds);
                    } catch (Exception e) {  // a failure never ends the run
                        if (errors.incrementAndGet() <= 3) System.err.println("PgPeerBench: " + e);
                        continue;
                    }
                    mine.add(System.nanoTime() - t0);
                }
                finished[k] = System.nanoTime();
            }, "client-" + k);
            threads[k].start();
        }
        // The threads exist and wait: the run starts now.
        start[0] = System.nanoTime();
        go.countDown();
        long end = start[0];
        for (int i = 0; i < clients; i++) {
            threads[i].join();
            end = Math.max(end, finished[i]);
        }
        int total = 0;
        for (Samples s : samples) total += s.n;
        long[] all = new long[total];
        int at = 0;
        for (Samples s : samples) {
            System.arraycopy(s.ns, 0, all, at, s.n);
            at += s.n;
        }
        Arrays.sort(all);
        return String.format(Locale.ROOT, "result queries=%d seconds=%.3f p50_us=%.1f p99_us=%.1f errors=%d",
                total, (end - start[0]) / 1e9, percentile(all, 0.50), percentile(all, 0.99), errors.get());
    }

    static String env(String name, String fallback) {
        String v = System.getenv(name);
        return v == null || v.isEmpty() ? fallback : v;
    }

    static HikariDataSource createPool(int size) {
        String user = env("PGUSER", System.getProperty("user.name"));
        String host = env("PGHOST", "localhost");
        if (host.contains(":") && !host.startsWith("[")) host = "[" + host + "]";  // an IPv6 address
        String db = env("PGDATABASE", user);
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl("jdbc:postgresql://" + host + ":" + env("PGPORT", "5432") + "/"
                + URLEncoder.encode(db, StandardCharsets.UTF_8));
        config.setUsername(user);
        String password = System.getenv("PGPASSWORD");
        if (password != null) config.setPassword(password);
        config.setMaximumPoolSize(size);  // every other setting is HikariCP's default
        return new HikariDataSource(config);
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2 || !args[0].equals("--pool")) {
            System.err.println("usage: PgPeerBench --pool N");
            System.exit(2);
        }
        int size;
        try {
            size = Integer.parseInt(args[1]);
        } catch (NumberFormatException e) {
            size = 0;
        }
        if (size < 1) {
            System.err.println("PgPeerBench: --pool must be a positive integer");
            System.exit(2);
        }
        HikariDataSource ds;
        try {
            ds = createPool(size);
        } catch (RuntimeException e) {
            System.err.println("PgPeerBench: cannot create the pool: " + e);
            System.exit(1);
            return;
        }
        System.out.println("ready");
        System.out.flush();

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try {
            for (String line; (line = in.readLine()) != null; ) {
                String[] f = line.trim().split("\\s+");
                if (f[0].isEmpty()) continue;
                if (f[0].equals("quit")) break;
                String answer;
                if (!f[0].equals("run")) {
                    answer = "error unknown command " + f[0];
                } else if (f.length != 4) {
                    answer = "error usage: run WORKLOAD CLIENTS SECONDS";
                } else if (workload(f[1]) == null) {
                    answer = "error unknown workload " + f[1];
                } else {
                    int clients;
                    double seconds;
                    try {
                        clients = Integer.parseInt(f[2]);
                        seconds = Double.parseDouble(f[3]);
                    } catch (NumberFormatException e) {
                        clients = 0;
                        seconds = Double.NaN;
                    }
                    if (clients < 1 || !(seconds >= 0) || Double.isInfinite(seconds)) {
                        answer = "error bad CLIENTS or SECONDS";
                    } else {
                        answer = run(ds, workload(f[1]), clients, seconds);
                    }
                }
                System.out.println(answer);
                System.out.flush();
            }
        } finally {
            ds.close();
        }
        System.exit(0);
    }
}
