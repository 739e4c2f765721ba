"""What the parts of bench/compare share: commands, Debian packages, a throwaway PostgreSQL server, the
CPU time of a running process, the server's backends during a measurement, and docs/benchmarks.md."""
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER = os.path.join(ROOT, "tests", "integration", "pg_cluster.sh")
RELEASE = os.path.join(ROOT, "build", "release")
TICK = os.sysconf("SC_CLK_TCK")


def sh(cmd, **kw):
    """Runs `cmd`; when it fails, what it wrote to stderr (if captured) is shown before the error."""
    r = subprocess.run(cmd, text=True, **kw)
    if r.returncode != 0:
        if kw.get("capture_output") and r.stderr:
            sys.stderr.write(r.stderr)
        raise subprocess.CalledProcessError(r.returncode, cmd, r.stdout, r.stderr)
    return r


def say(text):
    print("compare: " + text, file=sys.stderr, flush=True)


def ensure_packages(packages):
    """Installs the Debian packages that are missing (idempotent)."""
    missing = [p for p in packages
               if "install ok installed" not in subprocess.run(["dpkg-query", "-W", "-f=${Status}", p],
                                                               capture_output=True, text=True).stdout]
    if missing:
        say("installing " + " ".join(missing))
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        sh(sudo + ["apt-get", "update", "-qq"], env=env, stdout=subprocess.DEVNULL)
        sh(sudo + ["apt-get", "install", "-y", "-qq", "--no-install-recommends"] + missing, env=env,
           stdout=subprocess.DEVNULL)


def ensure_node():
    """Node.js and npm: the machine's own when it has them (they need not come from Debian), else Debian's."""
    if not shutil.which("node") or not shutil.which("npm"):
        ensure_packages(["nodejs", "npm"])


def build_release(targets):
    sh(["cmake", "--preset", "release"], cwd=ROOT, stdout=subprocess.DEVNULL)
    sh(["cmake", "--build", "--preset", "release", "--target"] + targets + ["-j", os.environ.get("JOBS", "2")],
       cwd=ROOT, stdout=subprocess.DEVNULL)


def process_cpu(pid):
    """User + system CPU seconds of a running process, its threads (living and ended) included."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (fields 14 and 15 of proc(5))


def machine_ticks():
    """(busy, available) clock ticks of all CPUs so far (/proc/stat): busy is user, nice, system, irq and
    softirq; available leaves out what the hypervisor took (steal). The share busy between two readings
    says whether the machine, server and client together, had CPU left over."""
    with open("/proc/stat") as f:
        cpu = [int(x) for x in f.readline().split()[1:9]]  # user nice system idle iowait irq softirq steal
    busy = cpu[0] + cpu[1] + cpu[2] + cpu[5] + cpu[6]
    return busy, busy + cpu[3] + cpu[4]


def server_pid(state):
    """The postmaster's process id of the cluster that tests/integration/pg_cluster.sh started in `state`."""
    with open(os.path.join(state, "cluster")) as f:
        folder = f.read().strip()
    with open(os.path.join(folder, "data", "postmaster.pid")) as f:
        return int(f.readline())


def server_cpu(postmaster):
    """CPU seconds the PostgreSQL server has used so far: the postmaster with the children it has reaped
    (backends that ended), and every child alive now (backends, background processes). A backend reaped
    during the scan of /proc would be counted twice or not at all: the scan is taken again then."""
    def own_and_reaped():
        with open(f"/proc/{postmaster}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return [int(x) for x in fields[11:15]]  # utime, stime, cutime, cstime

    for _ in range(5):
        before = own_and_reaped()
        live = 0
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue  # ended: in the postmaster's cutime once reaped (the check below)
            if int(fields[1]) == postmaster:
                live += int(fields[11]) + int(fields[12])
        after = own_and_reaped()
        if after[2:] == before[2:]:  # no child reaped during the scan
            break
    return (sum(after) + live) / TICK


def median(values):
    return statistics.median(values) if values else 0.0


class Cluster:
    """A throwaway PostgreSQL server (tests/integration/pg_cluster.sh) for the whole run."""

    def __init__(self, state):
        self.state = state
        sh([CLUSTER, "start", state], capture_output=True)
        self.conninfo = open(os.path.join(state, "conninfo")).read().strip()
        p = dict(kv.split("=", 1) for kv in self.conninfo.split())
        self.params = p
        self.env = dict(os.environ, PGHOST=p["host"], PGPORT=p["port"], PGUSER=p["user"],
                        PGPASSWORD=p["password"], PGDATABASE=p["dbname"])

    def psql(self, sql):
        return sh(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql], env=self.env,
                  capture_output=True).stdout

    def stop(self):
        subprocess.run([CLUSTER, "stop", self.state], capture_output=True)


def connections_to(pid, port):
    """How many established TCP connections process `pid` holds to 127.0.0.1:`port` (its backends)."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue  # closed meanwhile
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        return 0  # the process ended
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):  # the JVM connects through IPv6 sockets (v4-mapped)
        with open(table) as f:
            next(f)
            for line in f:
                fields = line.split()
                remote, state, inode = fields[2], fields[3], fields[9]
                if state == "01" and int(remote.split(":")[1], 16) == port and inode in inodes:
                    count += 1
    return count


class BackendSampler:
    """The server's backends serving one client process: its established connections to the server's
    port, counted every 50 ms between start(pid) and stop(), which returns the largest count seen. (The
    other peers keep their idle connections meanwhile: counting the server's backends as a whole would
    mix them in.)"""

    def __init__(self, port):
        self.port = port
        self.lock = threading.Lock()
        self.pid = None
        self.peak = 0
        self.done = False
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while not self.done:
            with self.lock:
                pid = self.pid
            if pid:
                n = connections_to(pid, self.port)
                with self.lock:
                    if self.pid == pid:
                        self.peak = max(self.peak, n)
            time.sleep(0.05)

    def start(self, pid):
        with self.lock:
            self.pid, self.peak = pid, 0

    def stop(self):
        with self.lock:
            self.pid = None
            return self.peak

    def close(self):
        self.done = True
        self.thread.join()


def write_section(name, text):
    """Puts `text` between the <!-- name:begin --> and <!-- name:end --> markers of docs/benchmarks.md."""
    path = os.path.join(ROOT, "docs", "benchmarks.md")
    doc = open(path).read()
    begin, end = f"<!-- {name}:begin -->\n", f"<!-- {name}:end -->"
    if begin not in doc or end not in doc:
        sys.exit(f"compare: docs/benchmarks.md lacks the {name}:begin/{name}:end markers")
    head, rest = doc.split(begin, 1)
    with open(path, "w") as f:
        f.write(head + begin + text.rstrip("\n") + "\n" + end + rest.split(end, 1)[1])


def publish(name, text, write):
    """Prints a part's tables and, when `write`, puts them into docs/benchmarks.md."""
    print(text)
    if write:
        write_section(name, text)
