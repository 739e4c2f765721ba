// HikariCP + pgjdbc as the Java client of bench/failover (bench/peers/PROTOCOL.md, "Failover peers").
// Built and started by bench/peers/java/pg_peer.sh:
//
//   bench/peers/java/pg_peer.sh build OUTDIR
//   PGUSER=... PGPASSWORD=... PGDATABASE=... bench/peers/java/pg_peer.sh failover OUTDIR \
//       --name NAME --hosts 127.0.0.1:P0,127.0.0.1:P1 --pool N
//
// Writes go through a HikariDataSource on the multi-host URL with targetServerType=primary, reads
// through a second one with targetServerType=preferSecondary; maximumPoolSize N, and every other
// setting HikariCP's and pgjdbc's default (pgjdbc remembers a host's role for hostRecheckSeconds, 10 s).
// Workers are platform threads.
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.FileWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

public final class FailoverPeer {
    static final String INSERT = "INSERT INTO ledger (client, seq) VALUES (?, ?) RETURNING inet_server_port()";
    static final String NEWEST = "SELECT coalesce(max(seq), 0), inet_server_port() FROM ledger WHERE client = ?";

    // One request's outcome: the value (sequence number written, or newest one read) and the server's port.
    record Outcome(long value, int port) {}

    interface Request {
        Outcome run(long seq) throws SQLException;
    }

    // One command's log: lines from every worker, each written whole and flushed at once (the harness
    // reads the log while it grows, to see when the client has written on the new primary).
    static final class Log {
        final BufferedWriter out;
        Log(String path) throws IOException {
            out = new BufferedWriter(new FileWriter(path, StandardCharsets.UTF_8), 1 << 16);
        }
        synchronized void line(String s) {
            try {
                out.write(s);
                out.write('\n');
                out.flush();
            } catch (IOException e) {
                System.err.println("FailoverPeer: log: " + e);
            }
        }
    }

    final String name;
    final HikariDataSource writes;
    final HikariDataSource reads;
    final AtomicLong seq = new AtomicLong();
    volatile boolean stopping;
    final List<Thread> workers = new ArrayList<>();
    final List<Log> logs = new ArrayList<>();

    FailoverPeer(String name, String hosts, int size) {
        this.name = name;
        writes = pool(hosts, "primary", size);
        reads = pool(hosts, "preferSecondary", size);
    }

    static HikariDataSource pool(String hosts, String target, int size) {
        HikariConfig c = new HikariConfig();
        String db = System.getenv().getOrDefault("PGDATABASE", "postgres");
        c.setJdbcUrl("jdbc:postgresql://" + hosts + "/" + URLEncoder.encode(db, StandardCharsets.UTF_8)
                + "?targetServerType=" + target);
        c.setUsername(System.getenv("PGUSER"));
        c.setPassword(System.getenv("PGPASSWORD"));
        c.setMaximumPoolSize(size);
        return new HikariDataSource(c);
    }

    static long unixNanos() {
        Instant t = Instant.now();
        return t.getEpochSecond() * 1_000_000_000L + t.getNano();
    }

    static String oneLine(Exception e) {
        return String.valueOf(e).replaceAll("\\s+", " ");
    }

    Outcome write(long s) throws SQLException {
        try (Connection c = writes.getConnection(); PreparedStatement ps = c.prepareStatement(INSERT)) {
            ps.setString(1, name);
            ps.setLong(2, s);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) throw new SQLException("INSERT returned no row");
                return new Outcome(s, rs.getInt(1));
            }
        }
    }

    Outcome read(long unused) throws SQLException {
        try (Connection c = reads.getConnection(); PreparedStatement ps = c.prepareStatement(NEWEST)) {
            ps.setString(1, name);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) throw new SQLException("SELECT returned no row");
                return new Outcome(rs.getLong(1), rs.getInt(2));
            }
        }
    }

    // One worker: request, log, pause until the interval has passed since the request started.
    void work(Log log, long intervalNanos, Request request, boolean numbered) {
        while (!stopping) {
            long s = numbered ? seq.incrementAndGet() : 0;
            long start = unixNanos();
            long t0 = System.nanoTime();
            String line;
            try {
                Outcome o = request.run(s);
                line = "ok " + start + " " + unixNanos() + " " + o.value() + " " + o.port();
            } catch (Exception e) {
                line = "err " + start + " " + unixNanos() + " " + (numbered ? Long.toString(s) : "-") + " " + oneLine(e);
            }
            log.line(line);
            long rest = intervalNanos - (System.nanoTime() - t0);
            if (rest > 0) {
                try {
                    Thread.sleep(rest / 1_000_000, (int) (rest % 1_000_000));
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    String answer(String[] f) throws Exception {
        switch (f[0]) {
            case "write":
            case "read": {
                if (f.length != 4) return "error usage: " + f[0] + " WORKERS INTERVAL_MS LOGFILE";
                int n;
                long ms;
                try {
                    n = Integer.parseInt(f[1]);
                    ms = Long.parseLong(f[2]);
                } catch (NumberFormatException e) {
                    return "error WORKERS and INTERVAL_MS must be integers";
                }
                if (n < 1 || ms < 0) return "error WORKERS must be positive and INTERVAL_MS not negative";
                Log log = new Log(f[3]);
                logs.add(log);
                boolean isWrite = f[0].equals("write");
                Request r = isWrite ? this::write : this::read;
                stopping = false;
                for (int i = 0; i < n; i++) {
                    Thread t = new Thread(() -> work(log, ms * 1_000_000L, r, isWrite), f[0] + "-" + i);
                    workers.add(t);
                    t.start();
                }
                return "started";
            }
            case "stop": {
                stopping = true;
                for (Thread t : workers) t.join();
                workers.clear();
                for (Log l : logs) l.out.close();
                logs.clear();
                return "stopped";
            }
            default:
                return "error unknown command " + f[0] + " (write, read, stop, quit)";
        }
    }

    public static void main(String[] args) throws Exception {
        String name = null, hosts = null;
        int size = 0;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--name": name = args[i + 1]; break;
                case "--hosts": hosts = args[i + 1]; break;
                case "--pool": size = Integer.parseInt(args[i + 1]); break;
                default: size = -1;
            }
        }
        if (name == null || hosts == null || size < 1 || args.length % 2 != 0) {
            System.err.println("usage: FailoverPeer --name NAME --hosts H:P,H:P --pool N   (PGUSER, PGPASSWORD, PGDATABASE)");
            System.exit(2);
        }
        FailoverPeer p = new FailoverPeer(name, hosts, size);
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.trim().split("\\s+");
            if (f[0].isEmpty()) continue;
            if (f[0].equals("quit")) break;
            System.out.println(p.answer(f));
            System.out.flush();
        }
        p.stopping = true;
        for (Thread t : p.workers) t.join();
        p.writes.close();
        p.reads.close();
    }
}
