// Peer harness for bench/compare: HikariCP and Apache commons-pool2 on the same workloads as respool.
// Connections come from a stub DataSource whose connections do nothing (as in HikariCP's own JMH
// benchmark), so only pool overhead is measured.
//
//   java -cp <HikariCP.jar:commons-pool2.jar:slf4j-api.jar:slf4j-nop.jar:.> PeerBench cycle <seconds> <reps>
//   java -cp ... PeerBench spike
//
// Output, one line per measurement (parsed by bench/compare):
//   cycle <peer> <threads> <pool> <median ops/s>
//   spike <peer> <created> <p50 ms> <p99 ms> <max ms>
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.PrintWriter;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.apache.commons.pool2.BasePooledObjectFactory;
import org.apache.commons.pool2.PooledObject;
import org.apache.commons.pool2.impl.DefaultPooledObject;
import org.apache.commons.pool2.impl.GenericObjectPool;
import org.apache.commons.pool2.impl.GenericObjectPoolConfig;

public final class PeerBench {
    // A connection that does nothing: every method returns a neutral value.
    static Connection stubConnection() {
        InvocationHandler h = (proxy, m, args) -> {
            switch (m.getName()) {
                case "isValid": return true;
                case "getAutoCommit": return true;
                case "isClosed": case "isReadOnly": case "isWrapperFor": return false;
                case "getTransactionIsolation": return Connection.TRANSACTION_READ_COMMITTED;
                case "getNetworkTimeout": case "getHoldability": return 0;
                case "hashCode": return System.identityHashCode(proxy);
                case "equals": return proxy == args[0];
                case "toString": return "stub-connection";
                default: return null;
            }
        };
        return (Connection) Proxy.newProxyInstance(PeerBench.class.getClassLoader(), new Class<?>[] {Connection.class}, h);
    }

    static final class StubDataSource implements DataSource {
        final long connectMillis;
        final AtomicInteger created = new AtomicInteger();
        StubDataSource(long connectMillis) { this.connectMillis = connectMillis; }
        @Override public Connection getConnection() throws SQLException {
            if (connectMillis > 0) {
                try { Thread.sleep(connectMillis); } catch (InterruptedException e) { Thread.currentThread().interrupt(); }
            }
            created.incrementAndGet();
            return stubConnection();
        }
        @Override public Connection getConnection(String u, String p) throws SQLException { return getConnection(); }
        @Override public PrintWriter getLogWriter() { return null; }
        @Override public void setLogWriter(PrintWriter out) {}
        @Override public void setLoginTimeout(int seconds) {}
        @Override public int getLoginTimeout() { return 0; }
        @Override public Logger getParentLogger() throws SQLFeatureNotSupportedException { throw new SQLFeatureNotSupportedException(); }
        @Override public <T> T unwrap(Class<T> iface) throws SQLException { throw new SQLException("not a wrapper"); }
        @Override public boolean isWrapperFor(Class<?> iface) { return false; }
    }

    interface Cycle { void run() throws Exception; }

    static HikariDataSource hikari(int size, int minIdle, long connectMillis) {
        HikariConfig c = new HikariConfig();
        c.setDataSource(new StubDataSource(connectMillis));
        c.setMaximumPoolSize(size);
        c.setMinimumIdle(minIdle);
        c.setConnectionTimeout(30_000);
        c.setPoolName("bench");
        return new HikariDataSource(c);
    }

    static GenericObjectPool<Object> commonsPool(int size) throws Exception {
        GenericObjectPoolConfig<Object> c = new GenericObjectPoolConfig<>();
        c.setMaxTotal(size);
        c.setMaxIdle(size);
        c.setMinIdle(size);
        c.setBlockWhenExhausted(true);
        c.setJmxEnabled(false);
        GenericObjectPool<Object> p = new GenericObjectPool<>(new BasePooledObjectFactory<Object>() {
            @Override public Object create() { return new Object(); }
            @Override public PooledObject<Object> wrap(Object o) { return new DefaultPooledObject<>(o); }
        }, c);
        p.preparePool();
        return p;
    }

    // Ops/s of `threads` threads running `cycle` for `seconds`, after a warm-up of the same length.
    static double measure(int threads, double seconds, Cycle cycle) throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong ops = new AtomicLong();
        CyclicBarrier start = new CyclicBarrier(threads + 1);
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; ++t) {
            Thread th = new Thread(() -> {
                try {
                    start.await();
                    long n = 0;
                    while (!stop.get()) {
                        for (int i = 0; i < 256; ++i) cycle.run();
                        n += 256;
                    }
                    ops.addAndGet(n);
                } catch (Exception e) { throw new RuntimeException(e); }
            });
            th.start();
            ts.add(th);
        }
        start.await();
        long t0 = System.nanoTime();
        Thread.sleep((long) (seconds * 1000));
        stop.set(true);
        for (Thread th : ts) th.join();
        return ops.get() / ((System.nanoTime() - t0) / 1e9);
    }

    static double median(double[] v) {
        double[] c = v.clone();
        Arrays.sort(c);
        return c[c.length / 2];
    }

    static void cycle(double seconds, int reps) throws Exception {
        int[][] workloads = {{1, 32}, {2, 32}, {8, 32}, {8, 4}};
        for (int[] w : workloads) {
            int threads = w[0], size = w[1];
            try (HikariDataSource ds = hikari(size, size, 0)) {
                Cycle c = () -> ds.getConnection().close();
                measure(threads, seconds, c);  // warm-up (JIT)
                double[] r = new double[reps];
                for (int i = 0; i < reps; ++i) r[i] = measure(threads, seconds, c);
                System.out.printf("cycle hikaricp %d %d %.0f%n", threads, size, median(r));
            }
            GenericObjectPool<Object> p = commonsPool(size);
            Cycle c = () -> p.returnObject(p.borrowObject());
            measure(threads, seconds, c);
            double[] r = new double[reps];
            for (int i = 0; i < reps; ++i) r[i] = measure(threads, seconds, c);
            System.out.printf("cycle commons-pool2 %d %d %.0f%n", threads, size, median(r));
            p.close();
        }
    }

    // HikariCP's spike-demand scenario: 50 threads at once, min idle 5, max 50, 150 ms connect, 2 ms work.
    static void spike() throws Exception {
        HikariConfig cfg = new HikariConfig();
        StubDataSource stub = new StubDataSource(150);
        cfg.setDataSource(stub);
        cfg.setMaximumPoolSize(50);
        cfg.setMinimumIdle(5);
        cfg.setConnectionTimeout(30_000);
        try (HikariDataSource ds = new HikariDataSource(cfg)) {
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (ds.getHikariPoolMXBean() == null || ds.getHikariPoolMXBean().getIdleConnections() < 5) {
                if (System.nanoTime() > deadline) throw new IllegalStateException("HikariCP did not warm up");
                Thread.sleep(10);
            }
            int warm = stub.created.get();
            List<Double> waits = Collections.synchronizedList(new ArrayList<>());
            CountDownLatch go = new CountDownLatch(1), done = new CountDownLatch(50);
            for (int i = 0; i < 50; ++i) {
                new Thread(() -> {
                    try {
                        go.await();
                        long t0 = System.nanoTime();
                        try (Connection c = ds.getConnection()) {
                            waits.add((System.nanoTime() - t0) / 1e6);
                            Thread.sleep(2);
                        }
                    } catch (Exception e) { throw new RuntimeException(e); }
                    done.countDown();
                }).start();
            }
            long t0 = System.nanoTime();
            go.countDown();
            done.await();
            Thread.sleep(400);  // creations started for the spike finish (counted, as for respool)
            List<Double> w = new ArrayList<>(waits);
            Collections.sort(w);
            System.out.printf("spike hikaricp %d %.1f %.1f %.1f%n", stub.created.get() - warm,
                w.get((int) (0.5 * (w.size() - 1))), w.get((int) (0.99 * (w.size() - 1))), w.get(w.size() - 1));
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length >= 1 && args[0].equals("spike")) { spike(); return; }
        double seconds = args.length > 1 ? Double.parseDouble(args[1]) : 0.5;
        int reps = args.length > 2 ? Integer.parseInt(args[2]) : 5;
        cycle(seconds, reps);
    }
}
