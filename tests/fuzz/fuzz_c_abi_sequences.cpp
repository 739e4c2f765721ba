// libFuzzer: any sequence of C ABI calls, on any of the harness's threads and on up to three pools at
// once, keeps the promises of include/respool/respool.h and docs/04-c-api.md.
//
// The input is a program of operations, 3 bytes each (some read more, see below):
//   byte 0: the operation (% 16, table below)
//   byte 1: the pool slot (% 3) and the worker thread that runs the operation ((/ 3) % 3)
//   byte 2: the operation's argument
// An operation is handed to the chosen worker thread (the harness owns three) and the harness waits for
// it to finish before the next one, so a given input is one sequence; only "park" leaves its blocking
// acquire running on its worker while the next operations run on the others (at most one per worker),
// and asynchronous acquires complete on the pool's own thread whenever the pool decides.
//    0 create   respool_create; argument: max 1 + a%4, min (a/4)%(max+1), max_waiters (a/16)&1 ? 1 : 0,
//               (a>>5)==7: max 0, (a>>5)==6: min > max (both refused). One more byte: the hooks (flags
//               below). A slot that holds a pool keeps it running unreachable ("orphan") until the end.
//    1 create2  respool_create2 with options built through respool_options_*; argument: the hooks (flags
//               below); one more byte n: n%8 settings follow, 2 bytes each (option and setter, value),
//               n&0x80 with no settings: options NULL (the defaults).
//    2 free     respool_free, leases possibly still out (released later: the last one deletes the handle)
//    3 acquire  respool_acquire, timeout 1, 2, 3 ms (or 0 = the pool's default when it is a short one)
//    4 park     respool_acquire with 5..35 ms, left running on its worker
//    5 async    respool_acquire_async: timeout a%4 (0 = default or forever, 1, 3, 10 ms); what the
//               callback does (a/4)%5: keep, release there, poison there, try a blocking acquire there
//               (refused), try_acquire there
//    6 try      respool_try_acquire
//    7 release  respool_release of the harness's lease a % count (any pool, freed ones too)
//    8 poison   respool_release_broken, likewise
//    9 close    respool_close
//   10 stats    respool_get_stats and get_stats2 (a&1: a shorter struct_size, the rest must stay untouched)
//   11 circuit  a%4: get, set closed, set open, set half-open
//   12 strategy a%4: detach (NULL), count, open the circuit on failure, try a blocking acquire inside
//   13 bad      bad calls the ABI documents as safe, a%8: NULL pool everywhere; NULL outputs; a pointer
//               never lent; a double release; another pool's lease; invalid enum and struct sizes; invalid
//               create/create2/options arguments; a second respool_free while the handle still exists
//   14 settle   wait (at most 100 ms) until the slot's pool has no acquire under way
//   15 sleep    a%4 ms (timers: health checks, idle TTL, lifetime, leak reports, create back-off)
// Hook flags: bits 0-1 create fails (never, every 3rd, every 2nd, always; v2 returns its own code 42),
// bit 2 before_release (false for ids % 3 == 0), bit 3 before_acquire (every 4th call false), bit 4
// healthcheck (false for ids % 4 == 1; v1: checked every 2 ms), bit 5 validate (v2), bit 6 v2: a
// respool_hooks2 cut before validate, bit 7 v2: a struct_size that does not reach create (refused).
//
// Checked after every operation, on every pool whose handle the harness may still use: idle + active =
// total <= max (the configured one), creating <= active, what the harness holds <= active, waiting <=
// acquires under way, counters never go down, acquires and poisoned match what the harness saw, the
// closed flag matches, nothing idle once closed; statuses are the documented ones (a closed pool answers
// RESPOOL_E_CLOSED; a failing create is RESPOOL_E_CREATE in v1, its own code in v2; a blocking acquire
// inside a callback is RESPOOL_E_INVALID); a resource is never lent twice at once, never after it was
// poisoned, never destroyed while lent nor twice; a release of something not lent (never lent, released
// already, another pool's) is refused and, on a pool with no background activity, changes no stat;
// invalid options and hooks are refused with a respool_last_error() text; after close and free every
// created resource was destroyed exactly once (ASan sees double frees and leaks too). The harness never
// touches a freed pool's handle unless it still holds one of its leases (docs/04-c-api.md, Lifetime).
#include "c_abi_raw_enums.h"

#include <respool/respool.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "invariant broken: %s\n", what);
    std::abort();
}

constexpr int workers_count = 3;
constexpr int slots_count = 3;
constexpr int max_pools = 8;           // per input (each pool has a thread)
constexpr int create_fail_code = 42;   // a v2 create callback's own error code
constexpr std::size_t max_recent = 8;  // released pointers kept for double releases

struct resource {
    std::uint64_t id;
};

std::mutex g_mu;  // every record's bookkeeping below marked "g_mu", and the arrivals

struct record;
std::vector<std::pair<record*, void*>> g_arrived;  // g_mu: leases received, not yet in the harness's list

// One pool made during an input, and what the harness knows of it.
struct record {
    respool_pool* pool = nullptr;
    bool v2 = false;
    std::uint32_t max = 0, min = 0;
    std::uint8_t hook_flags = 0;
    bool fails_creates = false;
    bool timers = false;                          // background work may change its stats at any time
    std::optional<std::int64_t> default_timeout;  // ms; v2 RESPOOL_OPT_ACQUIRE_TIMEOUT_MS
    bool closed = false;                          // closed (or freed) by an operation that has finished
    bool freed = false;
    bool strategy_ever = false;  // a strategy was attached once: the circuit is not the harness's alone
    std::atomic<int> strategy_mode{0};
    std::atomic<std::uint32_t> create_calls{0}, acquire_checks{0}, validate_calls{0};
    std::atomic<std::uint64_t> next_id{1};
    std::atomic<int> pending{0};  // async acquires whose callback has not returned, parked acquires
    std::atomic<int> parked{0};   // of those, the parked blocking acquires
    // g_mu:
    std::unordered_map<void*, std::uint64_t> live;  // created, not destroyed
    std::set<void*> lent;                           // lent out to the harness (any path), not given back
    std::set<std::uint64_t> poisoned_ids;
    std::uint64_t oks = 0;      // leases received
    std::uint64_t poisons = 0;  // release_broken accepted
    std::vector<void*> recent;  // released lately (for double releases)
    // main thread (or the worker the main thread waits for):
    respool_stats2 last{};
    bool have_last = false;
};

// ---- hooks ------------------------------------------------------------------------------------

int hook_create(void* ctx, void** out) {
    auto& r = *static_cast<record*>(ctx);
    const std::uint32_t n = r.create_calls++;
    bool refuse = false;
    switch (r.hook_flags & 3) {
    case 1: refuse = n % 3 == 2; break;
    case 2: refuse = n % 2 == 1; break;
    case 3: refuse = true; break;
    default: break;
    }
    if (refuse) return r.v2 ? create_fail_code : -1;
    auto* res = new resource{r.next_id++};
    {
        std::lock_guard lock(g_mu);
        r.live.emplace(res, res->id);
    }
    *out = res;
    return 0;
}

void hook_destroy(void* ctx, void* p) {
    auto& r = *static_cast<record*>(ctx);
    {
        std::lock_guard lock(g_mu);
        if (r.live.erase(p) != 1) fail("destroyed a resource twice or one never created");
        if (r.lent.count(p)) fail("destroyed a resource while it was lent");
    }
    delete static_cast<resource*>(p);
}

bool hook_before_release(void*, void* p) {
    return static_cast<resource*>(p)->id % 3 != 0;
}
bool hook_before_acquire(void* ctx, void*) {
    return static_cast<record*>(ctx)->acquire_checks++ % 4 != 3;
}
bool hook_healthcheck(void*, void* p) {
    return static_cast<resource*>(p)->id % 4 != 1;
}
bool hook_validate(void* ctx, void*) {
    return static_cast<record*>(ctx)->validate_calls++ % 5 != 4;
}

// ---- leases -----------------------------------------------------------------------------------

std::uint64_t id_of(record& r, void* p) {  // under g_mu
    auto it = r.live.find(p);
    if (it == r.live.end()) fail("lent a resource that does not exist (or was destroyed)");
    return it->second;
}

void lend(record& r, void* p) {
    std::lock_guard lock(g_mu);
    if (r.poisoned_ids.count(id_of(r, p))) fail("a poisoned resource was lent again");
    if (!r.lent.insert(p).second) fail("lent a resource twice at once");
    ++r.oks;
}

void arrive(record& r, void* p) {
    std::lock_guard lock(g_mu);
    g_arrived.emplace_back(&r, p);
}

// Takes a lease back from the harness's books before giving it to the pool; with `poison`, notes its id.
void unlend(record& r, void* p, bool poison) {
    std::lock_guard lock(g_mu);
    if (r.lent.erase(p) != 1) fail("the harness gives back a lease it does not hold");
    if (poison) r.poisoned_ids.insert(id_of(r, p));
    r.recent.push_back(p);
    if (r.recent.size() > max_recent) r.recent.erase(r.recent.begin());
}

void poisoned(record& r) {
    std::lock_guard lock(g_mu);
    ++r.poisons;
}

enum class how { blocking, attempt, async };

// The documented outcomes of an acquire.
void check_status(const record& r, int st, void* p, how h, bool closed_before) {
    if (st == RESPOOL_OK) {
        if (!p) fail("an acquire succeeded with no resource");
        if (closed_before) fail("an acquire on a closed pool succeeded");
        return;
    }
    if (p) fail("a failed acquire delivered a resource");
    if (closed_before && st != RESPOOL_E_CLOSED) fail("an acquire on a closed pool did not say CLOSED");
    switch (st) {
    case RESPOOL_E_CLOSED:
    case RESPOOL_E_UNAVAILABLE:
    case RESPOOL_E_EXHAUSTED: return;
    case RESPOOL_E_TIMEOUT:
        if (h == how::attempt) fail("try_acquire timed out");
        return;
    case RESPOOL_E_CREATE:
        if (r.v2) fail("a v2 pool's failing create gave RESPOOL_E_CREATE, not the callback's own code");
        if (!r.fails_creates) fail("RESPOOL_E_CREATE from a create callback that never fails");
        return;
    case create_fail_code:
        if (!r.v2) fail("a v1 pool passed a create callback's own code");
        if (!r.fails_creates) fail("a create failure from a create callback that never fails");
        return;
    default: fail("an acquire returned a status outside the documented ones");
    }
}

// ---- async acquires and the circuit strategy (on the pool's thread, or wherever the pool calls) --

struct async_call {
    record* r;
    int mode;
    bool closed_before;
};

void expect_blocking_refused(respool_pool* pool, const char* what) {
    void* x = nullptr;
    if (respool_acquire(pool, &x, 1) != RESPOOL_E_INVALID || x) fail(what);
}

void on_async(void* user, int st, void* p) {
    const async_call c = *static_cast<async_call*>(user);
    delete static_cast<async_call*>(user);
    record& r = *c.r;
    check_status(r, st, p, how::async, c.closed_before);
    if (c.mode == 3)
        expect_blocking_refused(r.pool, "a blocking acquire inside an async callback was not refused");
    if (st == RESPOOL_OK) {
        lend(r, p);
        switch (c.mode) {
        case 1:
            unlend(r, p, false);
            if (respool_release(r.pool, p) != RESPOOL_OK)
                fail("a release inside an async callback was refused");
            break;
        case 2:
            unlend(r, p, true);
            if (respool_release_broken(r.pool, p) != RESPOOL_OK)
                fail("a poison inside an async callback was refused");
            poisoned(r);
            break;
        case 4: {
            void* x = nullptr;
            const int st2 = respool_try_acquire(r.pool, &x);
            check_status(r, st2, x, how::attempt, c.closed_before);
            if (st2 == RESPOOL_OK) {
                lend(r, x);
                arrive(r, x);
            }
            arrive(r, p);
            break;
        }
        default: arrive(r, p); break;
        }
    }
    --r.pending;  // last: the harness may free the record once nothing is pending
}

void strategy_success(void* ctx, respool_pool* pool) {
    auto& r = *static_cast<record*>(ctx);
    if (pool != r.pool) fail("the strategy heard of another pool");
    if (r.strategy_mode == 3)
        expect_blocking_refused(pool, "a blocking acquire inside the strategy was not refused");
}

void strategy_failure(void* ctx, respool_pool* pool, int st) {
    auto& r = *static_cast<record*>(ctx);
    if (pool != r.pool) fail("the strategy heard of another pool");
    if (st >= 0 || st < RESPOOL_E_CANCELLED) fail("the strategy heard a status that is not respool's own");
    switch (r.strategy_mode.load()) {
    case 2:
        if (respool_set_circuit_state(pool, RESPOOL_CIRCUIT_OPEN) != RESPOOL_OK)
            fail("set_circuit_state from the strategy was refused");
        break;
    case 3: expect_blocking_refused(pool, "a blocking acquire inside the strategy was not refused"); break;
    default: break;
    }
}

// ---- the harness's threads --------------------------------------------------------------------

class worker {
public:
    worker() : t_([this] { loop(); }) {}
    // Hands `job` over once the worker is free; the caller may wait for it (wait_idle) or not.
    void start(std::function<void()> job) {
        wait_idle();
        {
            std::lock_guard lock(m_);
            job_ = std::move(job);
            busy_ = true;
        }
        cv_.notify_all();
    }
    void wait_idle() {
        std::unique_lock lock(m_);
        if (!cv_.wait_for(lock, std::chrono::seconds(20), [&] { return !busy_; }))
            fail("an operation on a worker thread never finished");
    }
    void run(std::function<void()> job) {
        start(std::move(job));
        wait_idle();
    }

private:
    void loop() {
        for (;;) {
            std::function<void()> job;
            {
                std::unique_lock lock(m_);
                cv_.wait(lock, [&] { return job_ != nullptr; });
                job = std::move(job_);
                job_ = nullptr;
            }
            job();
            {
                std::lock_guard lock(m_);
                busy_ = false;
            }
            cv_.notify_all();
        }
    }
    std::mutex m_;
    std::condition_variable cv_;
    std::function<void()> job_;
    bool busy_ = false;
    std::thread t_;
};

worker& worker_at(int i) {
    static worker* all = new worker[workers_count];  // never destroyed: libFuzzer ends with exit()
    return all[i];
}

struct reader {
    const std::uint8_t* p;
    std::size_t n;
    std::uint8_t next() {
        if (n == 0) return 0;
        --n;
        return *p++;
    }
};

// ---- the options model (what respool_create2 will accept) ---------------------------------------

struct option_entry {
    int id;    // an int: the unknown one is no respool_option value (c_abi_raw_enums.c passes it as C does)
    int kind;  // 0 u32, 1 ms, 2 bool
};
constexpr option_entry option_table[] = {
    {RESPOOL_OPT_MIN, 0},
    {RESPOOL_OPT_MAX, 0},
    {RESPOOL_OPT_MAX_WAITERS, 0},
    {RESPOOL_OPT_MAX_CONCURRENT_CREATIONS, 0},
    {RESPOOL_OPT_IDLE_ORDER, 0},
    {RESPOOL_OPT_ACQUIRE_TIMEOUT_MS, 1},
    {RESPOOL_OPT_HEALTHCHECK_INTERVAL_MS, 1},
    {RESPOOL_OPT_IDLE_TTL_MS, 1},
    {RESPOOL_OPT_MAX_LIFETIME_MS, 1},
    {RESPOOL_OPT_ACQUIRE_TTL_MS, 1},
    {RESPOOL_OPT_VALIDATE_AFTER_MS, 1},
    {RESPOOL_OPT_CREATE_RETRY_INITIAL_MS, 1},
    {RESPOOL_OPT_CREATE_RETRY_MAX_MS, 1},
    {RESPOOL_OPT_CREATE_TIMEOUT_MS, 1},
    {RESPOOL_OPT_CHECK_TIMEOUT_MS, 1},
    {RESPOOL_OPT_RESET_TIMEOUT_MS, 1},
    {RESPOOL_OPT_HEALTH_CHECK_ON_BORROW, 2},
    {RESPOOL_OPT_THREAD_AFFINITY, 2},
    {RESPOOL_OPT_RECORD_TIMINGS, 2},
    {999, 0},  // unknown
};
constexpr std::size_t option_count = sizeof option_table / sizeof option_table[0];
constexpr std::int64_t ms_values[] = {0, 1, 2, 5, 20, 100, INT64_C(100000000000000), -1};

struct options_model {
    std::uint64_t min = 0, max = 10, max_waiters = 0, mcc = 2;
    std::optional<std::int64_t> acquire_timeout;
    std::int64_t hc = 0, idle_ttl = 0, lifetime = 0, acquire_ttl = 0;
    std::int64_t retry_initial = 10, retry_max = 10000;
    std::int64_t create_timeout = 20000, check_timeout = 5000, reset_timeout = 5000;
    bool max_set = false, retry_initial_set = false, retry_max_set = false;
    // An option never set follows the ones set (docs/01-concepts.md "Defaults").
    options_model resolved() const {
        options_model r = *this;
        if (!r.max_set && r.min > r.max) r.max = r.min;
        if (!r.retry_max_set && r.retry_max < r.retry_initial) r.retry_max = r.retry_initial;
        if (!r.retry_initial_set && r.retry_initial > r.retry_max) r.retry_initial = r.retry_max;
        return r;
    }
    bool valid() const {
        const options_model r = resolved();
        return r.max >= 1 && r.min <= r.max && r.mcc >= 1 && r.create_timeout > 0 && r.check_timeout > 0 &&
               r.reset_timeout > 0 && r.retry_max >= r.retry_initial;
    }
};

constexpr std::int64_t max_c_ms = std::int64_t{36525} * 24 * 3600 * 1000;
std::int64_t clamp_ms(std::int64_t v) {
    return v < max_c_ms ? v : max_c_ms;
}

void expect_error_text(const char* what) {
    const char* e = respool_last_error();
    if (!e || !*e) fail(what);
}

// Applies one setting; checks the setter's answer against the model (and updates it).
void apply_setting(respool_options* o, options_model& m, std::uint8_t s, std::uint8_t v) {
    const option_entry& e = option_table[s % option_count];
    const bool wrong_setter = (s / option_count) % 4 == 3;
    const int kind = wrong_setter ? (e.kind + 1) % 3 : e.kind;
    const bool known = s % option_count != option_count - 1;
    bool ok = known && !wrong_setter;
    int st = RESPOOL_E_INTERNAL;
    if (kind == 0) {
        std::uint32_t x = v % 5;
        if (e.id == RESPOOL_OPT_MIN) x = v % 4;
        if (e.id == RESPOOL_OPT_MAX_WAITERS || e.id == RESPOOL_OPT_MAX_CONCURRENT_CREATIONS ||
            e.id == RESPOOL_OPT_IDLE_ORDER)
            x = v % 3;
        if (ok && e.id == RESPOOL_OPT_IDLE_ORDER && x > 1) ok = false;
        st = fuzz_options_set_u32_raw(o, e.id, x);
        if (st == RESPOOL_OK && ok) {
            if (e.id == RESPOOL_OPT_MIN) m.min = x;
            if (e.id == RESPOOL_OPT_MAX) {
                m.max = x;
                m.max_set = true;
            }
            if (e.id == RESPOOL_OPT_MAX_WAITERS) m.max_waiters = x;
            if (e.id == RESPOOL_OPT_MAX_CONCURRENT_CREATIONS) m.mcc = x;
        }
    } else if (kind == 1) {
        const std::int64_t x = ms_values[v % 8];
        if (ok && x < 0 && e.id != RESPOOL_OPT_ACQUIRE_TIMEOUT_MS) ok = false;
        st = fuzz_options_set_ms_raw(o, e.id, x);
        if (st == RESPOOL_OK && ok) {
            const std::int64_t c = clamp_ms(x);
            switch (e.id) {
            case RESPOOL_OPT_ACQUIRE_TIMEOUT_MS:
                if (x < 0)
                    m.acquire_timeout.reset();
                else
                    m.acquire_timeout = c;
                break;
            case RESPOOL_OPT_HEALTHCHECK_INTERVAL_MS: m.hc = c; break;
            case RESPOOL_OPT_IDLE_TTL_MS: m.idle_ttl = c; break;
            case RESPOOL_OPT_MAX_LIFETIME_MS: m.lifetime = c; break;
            case RESPOOL_OPT_ACQUIRE_TTL_MS: m.acquire_ttl = c; break;
            case RESPOOL_OPT_CREATE_RETRY_INITIAL_MS:
                m.retry_initial = c;
                m.retry_initial_set = true;
                break;
            case RESPOOL_OPT_CREATE_RETRY_MAX_MS:
                m.retry_max = c;
                m.retry_max_set = true;
                break;
            case RESPOOL_OPT_CREATE_TIMEOUT_MS: m.create_timeout = c; break;
            case RESPOOL_OPT_CHECK_TIMEOUT_MS: m.check_timeout = c; break;
            case RESPOOL_OPT_RESET_TIMEOUT_MS: m.reset_timeout = c; break;
            default: break;
            }
        }
    } else {
        st = fuzz_options_set_bool_raw(o, e.id, v & 1);
    }
    if (ok && st != RESPOOL_OK) fail("a valid option setting was refused");
    if (!ok && st != RESPOOL_E_INVALID)
        fail("an invalid option setting was not refused with RESPOOL_E_INVALID");
    if (!ok) expect_error_text("a refused option setting left no respool_last_error text");
    if (ok && *respool_last_error()) fail("a successful option setting left a respool_last_error text");
}

// ---- one input ----------------------------------------------------------------------------------

// Records of the previous input: deleted at the start of the next one, when nothing of theirs can run.
std::vector<std::unique_ptr<record>>& graveyard() {
    static auto* g = new std::vector<std::unique_ptr<record>>;
    return *g;
}

constexpr std::size_t counters_offset = offsetof(respool_stats2, acquires);
constexpr std::size_t counters_count = (sizeof(respool_stats2) - counters_offset) / sizeof(std::uint64_t);

std::array<std::uint64_t, counters_count> counters_of(const respool_stats2& s) {
    std::array<std::uint64_t, counters_count> c{};
    std::memcpy(c.data(), reinterpret_cast<const unsigned char*>(&s) + counters_offset, sizeof c);
    return c;
}

struct program {
    std::vector<std::unique_ptr<record>> records;
    std::array<record*, slots_count> slots{};
    std::vector<std::pair<record*, void*>> held;  // leases in the harness's hands (main thread only)

    void collect() {
        std::lock_guard lock(g_mu);
        held.insert(held.end(), g_arrived.begin(), g_arrived.end());
        g_arrived.clear();
    }
    std::size_t held_of(const record* r) const {
        std::size_t n = 0;
        for (auto& [q, p] : held) n += q == r;
        return n;
    }
    // Whether the harness may call into the pool's handle now (docs/04-c-api.md, Lifetime).
    bool usable(const record* r) const { return r && r->pool && (!r->freed || held_of(r) > 0); }

    // Every documented relation between the stats and what the harness knows. The caller has made sure
    // the handle is usable and no synchronous operation of the harness runs meanwhile.
    void check(record& r) {
        // Read before the snapshot: lower bounds (what was received is counted), and the acquires under
        // way then, which bound the waiters of the snapshot (none starts while this runs).
        const std::uint64_t pending0 = static_cast<std::uint64_t>(r.pending.load());
        std::uint64_t oks0, poisons0;
        {
            std::lock_guard lock(g_mu);
            oks0 = r.oks;
            poisons0 = r.poisons;
        }
        respool_stats s{};
        if (respool_get_stats(r.pool, &s) != RESPOOL_OK) fail("get_stats refused");
        respool_stats2 s2{};
        s2.struct_size = sizeof s2;
        if (respool_get_stats2(r.pool, &s2) != RESPOOL_OK) fail("get_stats2 refused");
        if (s2.struct_size != sizeof s2) fail("get_stats2 changed struct_size");
        for (auto [idle, active, total, max] : {std::array{s.idle, s.active, s.total, s.max},
                                                std::array{s2.idle, s2.active, s2.total, s2.max}}) {
            if (idle + active != total) fail("idle + active != total");
            if (total > max) fail("more resources than max");
            if (max != r.max) fail("stats report another max than the configured one");
        }
        if (s2.creating > s2.active) fail("more creations under way than active resources");
        if (s2.circuit > RESPOOL_CIRCUIT_HALF_OPEN) fail("stats report an unknown circuit state");
        if (r.closed && s2.closed != 1) fail("a closed pool does not say closed");
        if (!r.closed && s2.closed != 0) fail("an open pool says closed");
        if (r.closed && s2.idle != 0) fail("a closed pool keeps idle resources");
        if (s2.destructions > s2.creations) fail("more destructions than creations");
        if (s2.immediate_takes > s2.acquires) fail("more immediate takes than acquires");
        if (s.acquires > s2.acquires || s.poisoned > s2.poisoned || s.creations > s2.creations)
            fail("get_stats2 counters below the get_stats taken before");
        const auto now = counters_of(s2);
        if (r.have_last) {
            const auto before = counters_of(r.last);
            for (std::size_t i = 0; i < counters_count; ++i)
                if (now[i] < before[i]) fail("a counter went down");
        }
        r.last = s2;
        r.have_last = true;
        if (s2.acquires < oks0) fail("fewer acquires counted than leases received");
        if (s2.poisoned < poisons0) fail("fewer poisoned counted than poisons accepted");
        // Read after it, pending first: an acquire counted then has been received since, or is still
        // pending (a callback receives, then stops pending).
        const std::uint64_t pending = static_cast<std::uint64_t>(r.pending.load());
        std::uint64_t oks1, poisons1;
        {
            std::lock_guard lock(g_mu);
            oks1 = r.oks;
            poisons1 = r.poisons;
        }
        if (s2.acquires > oks1 + 2 * pending) fail("more acquires counted than leases handed out");
        if (s2.poisoned > poisons1 + pending) fail("more poisoned counted than poisons made");
        if (s2.waiting > pending0) fail("more waiters than acquires under way");
        if (held_of(&r) > s2.active) fail("the harness holds more than the pool counts active");
    }

    void check_all() {
        for (auto& r : records)
            if (usable(r.get())) check(*r);
    }

    // No background activity can change its stats: a bad call must leave them exactly as they were.
    bool quiet(const record& r) const {
        return !r.timers && r.min == 0 && !r.fails_creates && r.pending == 0 && !r.closed;
    }

    void create_v1(int tid, int slot, std::uint8_t a, std::uint8_t flags) {
        auto r = std::make_unique<record>();
        r->hook_flags = flags & 0x1f;
        r->fails_creates = (flags & 3) != 0;
        respool_config cfg{};
        cfg.max = 1 + a % 4;
        cfg.min = (a / 4) % (cfg.max + 1);
        cfg.max_waiters = (a / 16) & 1;
        bool valid = true;
        if ((a >> 5) == 7) {
            cfg.max = 0;
            valid = false;
        } else if ((a >> 5) == 6) {
            cfg.min = cfg.max + 1;
            valid = false;
        }
        respool_hooks h{};
        h.ctx = r.get();
        h.create = hook_create;
        h.destroy = hook_destroy;
        if (flags & 4) h.before_release = hook_before_release;
        if (flags & 8) h.before_acquire = hook_before_acquire;
        if (flags & 16) {
            h.healthcheck = hook_healthcheck;
            cfg.healthcheck_interval_ms = 2;
            r->timers = true;
        }
        r->max = cfg.max;
        r->min = cfg.min;
        int st = RESPOOL_E_INTERNAL;
        respool_pool* pool = nullptr;
        worker_at(tid).run([&] {
            st = respool_create(&cfg, &h, &pool);
            if (st != RESPOOL_OK)
                expect_error_text("a refused respool_create left no respool_last_error text");
        });
        finish_create(slot, std::move(r), st, pool, valid);
    }

    void create_v2(int tid, int slot, std::uint8_t flags, bool null_options,
                   const std::vector<std::pair<std::uint8_t, std::uint8_t>>& settings) {
        auto r = std::make_unique<record>();
        r->v2 = true;
        r->hook_flags = flags;
        r->fails_creates = (flags & 3) != 0;
        respool_hooks2 h{};
        h.struct_size = sizeof h;
        h.ctx = r.get();
        h.create = hook_create;
        h.destroy = hook_destroy;
        if (flags & 4) h.before_release = hook_before_release;
        if (flags & 8) h.before_acquire = hook_before_acquire;
        if (flags & 16) h.healthcheck = hook_healthcheck;
        if (flags & 32) h.validate = hook_validate;
        if (flags & 64) h.struct_size = offsetof(respool_hooks2, validate);
        if (flags & 128) h.struct_size = offsetof(respool_hooks2, create);
        options_model m;
        int st = RESPOOL_E_INTERNAL;
        respool_pool* pool = nullptr;
        worker_at(tid).run([&] {
            respool_options* o = null_options ? nullptr : respool_options_new();
            if (!null_options && !o) fail("respool_options_new failed");
            if (o)
                for (auto [s, v] : settings) apply_setting(o, m, s, v);
            st = respool_create2(o, &h, &pool);
            if (st != RESPOOL_OK)
                expect_error_text("a refused respool_create2 left no respool_last_error text");
            if (st == RESPOOL_OK && *respool_last_error()) fail("a successful create2 left an error text");
            respool_options_free(o);
        });
        r->max = static_cast<std::uint32_t>(m.resolved().max);
        r->min = static_cast<std::uint32_t>(m.min);
        r->default_timeout = m.acquire_timeout;
        r->timers = m.hc > 0 || m.idle_ttl > 0 || m.lifetime > 0 || m.acquire_ttl > 0;
        finish_create(slot, std::move(r), st, pool, m.valid() && !(flags & 128));
    }

    void finish_create(int slot, std::unique_ptr<record> r, int st, respool_pool* pool, bool valid) {
        if (!valid) {
            if (st != RESPOOL_E_INVALID)
                fail("an invalid configuration was not refused with RESPOOL_E_INVALID");
        } else if (st == RESPOOL_E_CREATE) {
            if (!r->fails_creates || r->min == 0) fail("create failed with a create callback that works");
        } else if (st != RESPOOL_OK) {
            fail("a valid configuration was refused");
        }
        if (st != RESPOOL_OK) {
            if (pool) fail("a refused create set the pool");
            {
                std::lock_guard lock(g_mu);
                if (!r->live.empty()) fail("a refused create left resources alive");
            }
            graveyard().push_back(std::move(r));  // kept until the next input, like every record
            return;
        }
        if (!pool) fail("create succeeded without a pool");
        r->pool = pool;
        slots[slot] = r.get();  // a pool already there stays alive, unreachable, until the end
        records.push_back(std::move(r));
        check(*records.back());
    }

    std::int64_t blocking_timeout(const record& r, std::uint8_t a, std::int64_t base) const {
        if ((a & 3) == 0 && r.default_timeout && *r.default_timeout <= 100) return 0;  // the pool's default
        return base;
    }

    void acquire(int tid, record* r, std::uint8_t a, bool park) {
        if (!r) {
            worker_at(tid).run([] {
                void* x = nullptr;
                if (respool_acquire(nullptr, &x, 1) != RESPOOL_E_INVALID) fail("acquire(NULL) not refused");
            });
            return;
        }
        const std::int64_t t =
            park ? blocking_timeout(*r, a, 5 + (a % 4) * 10) : blocking_timeout(*r, a, 1 + a % 3);
        const bool closed_before = r->closed;
        auto job = [r, t, closed_before] {
            void* x = nullptr;
            const int st = respool_acquire(r->pool, &x, t);
            check_status(*r, st, x, how::blocking, closed_before);
            if (st == RESPOOL_OK) {
                lend(*r, x);
                arrive(*r, x);
            }
        };
        if (!park) {
            worker_at(tid).run(job);
            return;
        }
        worker_at(tid).wait_idle();
        ++r->pending;
        ++r->parked;
        worker_at(tid).start([r, job] {
            job();
            --r->parked;
            --r->pending;
        });
    }

    void async(int tid, record* r, std::uint8_t a) {
        static constexpr std::int64_t timeouts[] = {0, 1, 3, 10};
        auto* c = new async_call{r, (a / 4) % 5, r && r->closed};
        worker_at(tid).run([&] {
            if (!r) {
                if (respool_acquire_async(nullptr, 1, on_async, c) != RESPOOL_E_INVALID)
                    fail("acquire_async(NULL) not refused");
                delete c;
                return;
            }
            ++r->pending;
            if (respool_acquire_async(r->pool, timeouts[a % 4], on_async, c) != RESPOOL_OK) {
                fail("acquire_async was refused");
            }
        });
    }

    void attempt(int tid, record* r) {
        worker_at(tid).run([r] {
            void* x = nullptr;
            if (!r) {
                if (respool_try_acquire(nullptr, &x) != RESPOOL_E_INVALID)
                    fail("try_acquire(NULL) not refused");
                return;
            }
            const int st = respool_try_acquire(r->pool, &x);
            check_status(*r, st, x, how::attempt, r->closed);
            if (st == RESPOOL_OK) {
                lend(*r, x);
                arrive(*r, x);
            }
        });
    }

    void give_back(int tid, std::uint8_t a, bool poison) {
        if (held.empty()) return;
        const std::size_t i = a % held.size();
        const auto lease = held[i];
        held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
        unlend(*lease.first, lease.second, poison);
        worker_at(tid).run([lease, poison] {
            auto [r, p] = lease;
            const int st = poison ? respool_release_broken(r->pool, p) : respool_release(r->pool, p);
            if (st != RESPOOL_OK) fail("a lent resource was refused on release");
            if (poison) poisoned(*r);
        });
    }

    void free_pool(int tid, int slot) {
        record* r = slots[slot];
        if (!r) {
            worker_at(tid).run([] { respool_free(nullptr); });
            return;
        }
        // A parked acquire must be under way (inside respool_acquire) before the free, not merely handed
        // to its worker: a call that starts after the free may find the handle deleted (Lifetime). It is
        // once every acquire of the pool still pending is counted waiting (or once it has returned).
        for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5); r->parked > 0;) {
            const int parked = r->parked, pending = r->pending;
            respool_stats2 s{};
            s.struct_size = sizeof s;
            if (respool_get_stats2(r->pool, &s) != RESPOOL_OK) fail("get_stats2 refused");
            if (s.waiting >= static_cast<std::uint32_t>(pending) && parked > 0) break;
            if (std::chrono::steady_clock::now() > end) fail("a parked acquire neither waited nor returned");
            std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
        worker_at(tid).run([r] { respool_free(r->pool); });
        r->closed = r->freed = true;
        slots[slot] = nullptr;
    }

    void close_pool(int tid, record* r) {
        worker_at(tid).run([r] {
            if (respool_close(r ? r->pool : nullptr) != (r ? RESPOOL_OK : RESPOOL_E_INVALID))
                fail("close gave an unexpected status");
        });
        if (r) r->closed = true;
    }

    void stats(int tid, record* r, std::uint8_t a) {
        worker_at(tid).run([this, r, a] {
            if (!r) {
                respool_stats s{};
                respool_stats2 s2{};
                s2.struct_size = sizeof s2;
                if (respool_get_stats(nullptr, &s) != RESPOOL_E_INVALID ||
                    respool_get_stats2(nullptr, &s2) != RESPOOL_E_INVALID)
                    fail("stats of a NULL pool not refused");
                return;
            }
            check(*r);
            if (a & 1) {  // an older, shorter respool_stats2: only its prefix is written
                static constexpr std::size_t sizes[] = {
                    offsetof(respool_stats2, idle) + 4, offsetof(respool_stats2, closed),
                    offsetof(respool_stats2, poisoned), sizeof(respool_stats2) - 8};
                const std::size_t n = sizes[(a / 2) % 4];
                respool_stats2 s2;
                std::memset(&s2, 0xab, sizeof s2);
                s2.struct_size = static_cast<std::uint32_t>(n);
                if (respool_get_stats2(r->pool, &s2) != RESPOOL_OK) fail("a short get_stats2 refused");
                if (s2.struct_size != n) fail("a short get_stats2 changed struct_size");
                const auto* bytes = reinterpret_cast<const unsigned char*>(&s2);
                for (std::size_t i = n; i < sizeof s2; ++i)
                    if (bytes[i] != 0xab) fail("get_stats2 wrote past struct_size");
                if (s2.max != r->max && n > offsetof(respool_stats2, max))
                    fail("a short get_stats2 max is wrong");
            }
        });
    }

    void circuit(int tid, record* r, std::uint8_t a) {
        worker_at(tid).run([r, a] {
            respool_circuit_state c = RESPOOL_CIRCUIT_CLOSED;
            if (!r) {
                if (respool_get_circuit_state(nullptr, &c) != RESPOOL_E_INVALID ||
                    respool_set_circuit_state(nullptr, RESPOOL_CIRCUIT_OPEN) != RESPOOL_E_INVALID)
                    fail("circuit calls on a NULL pool not refused");
                return;
            }
            const int what = a % 4;
            if (what > 0) {
                const auto want = what == 1   ? RESPOOL_CIRCUIT_CLOSED
                                  : what == 2 ? RESPOOL_CIRCUIT_OPEN
                                              : RESPOOL_CIRCUIT_HALF_OPEN;
                if (respool_set_circuit_state(r->pool, want) != RESPOOL_OK) fail("set_circuit_state refused");
                if (respool_get_circuit_state(r->pool, &c) != RESPOOL_OK) fail("get_circuit_state refused");
                if (!r->strategy_ever && want != RESPOOL_CIRCUIT_HALF_OPEN && c != want)
                    fail("the circuit is not in the state just set");
            } else if (respool_get_circuit_state(r->pool, &c) != RESPOOL_OK) {
                fail("get_circuit_state refused");
            }
            if (c != RESPOOL_CIRCUIT_CLOSED && c != RESPOOL_CIRCUIT_OPEN && c != RESPOOL_CIRCUIT_HALF_OPEN)
                fail("an unknown circuit state");
        });
    }

    void strategy(int tid, record* r, std::uint8_t a) {
        const int mode = a % 4;
        if (r) {
            r->strategy_mode = mode;
            if (mode) r->strategy_ever = true;
        }
        worker_at(tid).run([r, mode] {
            respool_circuit_strategy s{};
            s.ctx = r;
            s.report_success = strategy_success;
            s.report_failure = strategy_failure;
            if (!r) {
                if (respool_set_circuit_strategy(nullptr, &s) != RESPOOL_E_INVALID)
                    fail("set_circuit_strategy(NULL pool) not refused");
                return;
            }
            if (respool_set_circuit_strategy(r->pool, mode ? &s : nullptr) != RESPOOL_OK)
                fail("set_circuit_strategy refused");
        });
    }

    // A release the pool must refuse, leaving everything (on a quiet pool: every stat) as it was.
    void refused_release(int tid, record& r, void* p) {
        const bool compare = quiet(r);
        worker_at(tid).run([&r, p, compare] {
            respool_stats2 before{}, after{};
            before.struct_size = after.struct_size = sizeof before;
            if (compare && respool_get_stats2(r.pool, &before) != RESPOOL_OK) fail("get_stats2 refused");
            if (respool_release(r.pool, p) != RESPOOL_E_INVALID ||
                respool_release_broken(r.pool, p) != RESPOOL_E_INVALID)
                fail("a release of something this pool has not lent out was accepted");
            expect_error_text("a refused release left no respool_last_error text");
            if (compare) {
                if (respool_get_stats2(r.pool, &after) != RESPOOL_OK) fail("get_stats2 refused");
                if (std::memcmp(&before, &after, sizeof before) != 0)
                    fail("a refused release changed the stats");
            }
        });
    }

    void bad(int tid, int slot, std::uint8_t a) {
        record* r = slots[slot];
        switch (a % 8) {
        case 0:
            worker_at(tid).run([] {
                void* x = nullptr;
                int dummy = 0;
                respool_stats s{};
                respool_stats2 s2{};
                s2.struct_size = sizeof s2;
                respool_circuit_state c{};
                if (respool_acquire(nullptr, &x, 1) != RESPOOL_E_INVALID ||
                    respool_try_acquire(nullptr, &x) != RESPOOL_E_INVALID ||
                    respool_release(nullptr, &dummy) != RESPOOL_E_INVALID ||
                    respool_release_broken(nullptr, &dummy) != RESPOOL_E_INVALID ||
                    respool_close(nullptr) != RESPOOL_E_INVALID ||
                    respool_get_stats(nullptr, &s) != RESPOOL_E_INVALID ||
                    respool_get_stats2(nullptr, &s2) != RESPOOL_E_INVALID ||
                    respool_get_circuit_state(nullptr, &c) != RESPOOL_E_INVALID ||
                    respool_set_circuit_state(nullptr, RESPOOL_CIRCUIT_CLOSED) != RESPOOL_E_INVALID ||
                    respool_set_circuit_strategy(nullptr, nullptr) != RESPOOL_E_INVALID ||
                    respool_acquire_async(nullptr, 1, on_async, nullptr) != RESPOOL_E_INVALID)
                    fail("a call on a NULL pool was not refused");
                respool_free(nullptr);
            });
            break;
        case 1:
            if (!usable(r)) break;
            worker_at(tid).run([r] {
                if (respool_try_acquire(r->pool, nullptr) != RESPOOL_E_INVALID ||
                    respool_acquire(r->pool, nullptr, 1) != RESPOOL_E_INVALID ||
                    respool_release(r->pool, nullptr) != RESPOOL_E_INVALID ||
                    respool_release_broken(r->pool, nullptr) != RESPOOL_E_INVALID ||
                    respool_get_stats(r->pool, nullptr) != RESPOOL_E_INVALID ||
                    respool_get_stats2(r->pool, nullptr) != RESPOOL_E_INVALID ||
                    respool_get_circuit_state(r->pool, nullptr) != RESPOOL_E_INVALID ||
                    respool_acquire_async(r->pool, 1, nullptr, nullptr) != RESPOOL_E_INVALID)
                    fail("a NULL output or callback was not refused");
            });
            break;
        case 2: {
            if (!usable(r)) break;
            int never_lent = 0;
            refused_release(tid, *r, &never_lent);
            break;
        }
        case 3: {  // a double release: something this pool lent and took back (or destroyed) already
            if (!usable(r) || r->pending > 0) break;
            void* p = nullptr;
            {
                std::lock_guard lock(g_mu);
                for (auto it = r->recent.rbegin(); it != r->recent.rend() && !p; ++it)
                    if (!r->lent.count(*it)) p = *it;
            }
            if (p) refused_release(tid, *r, p);
            break;
        }
        case 4: {  // another pool's lease
            if (!usable(r)) break;
            for (auto& [q, p] : held)
                if (q != r) {
                    refused_release(tid, *r, p);
                    break;
                }
            break;
        }
        case 5:
            if (!usable(r)) break;
            worker_at(tid).run([r] {
                respool_stats2 s2{};
                if (fuzz_set_circuit_state_raw(r->pool, 7) != RESPOOL_E_INVALID ||
                    fuzz_set_circuit_state_raw(r->pool, -1) != RESPOOL_E_INVALID)
                    fail("an unknown circuit state was accepted");
                s2.struct_size = 0;
                if (respool_get_stats2(r->pool, &s2) != RESPOOL_E_INVALID) fail("struct_size 0 accepted");
                s2.struct_size = 2;
                if (respool_get_stats2(r->pool, &s2) != RESPOOL_E_INVALID) fail("struct_size 2 accepted");
                expect_error_text("a refused get_stats2 left no respool_last_error text");
            });
            break;
        case 6:
            worker_at(tid).run([] {
                respool_config cfg{};
                cfg.max = 1;
                respool_hooks h{};
                respool_pool* p = nullptr;
                if (respool_create(nullptr, &h, &p) != RESPOOL_E_INVALID ||
                    respool_create(&cfg, nullptr, &p) != RESPOOL_E_INVALID ||
                    respool_create(&cfg, &h, nullptr) != RESPOOL_E_INVALID ||
                    respool_create(&cfg, &h, &p) != RESPOOL_E_INVALID)  // no create callback
                    fail("an invalid respool_create was accepted");
                expect_error_text("a refused respool_create left no text");
                respool_hooks2 h2{};
                h2.struct_size = sizeof h2;
                if (respool_create2(nullptr, nullptr, &p) != RESPOOL_E_INVALID ||
                    respool_create2(nullptr, &h2, nullptr) != RESPOOL_E_INVALID ||
                    respool_create2(nullptr, &h2, &p) != RESPOOL_E_INVALID)  // no create callback
                    fail("an invalid respool_create2 was accepted");
                expect_error_text("a refused respool_create2 left no text");
                h2.create = hook_create;
                h2.struct_size = 0;
                if (respool_create2(nullptr, &h2, &p) != RESPOOL_E_INVALID)
                    fail("struct_size 0 hooks accepted");
                if (p) fail("a refused create set the pool");
                if (respool_options_set_u32(nullptr, RESPOOL_OPT_MAX, 1) != RESPOOL_E_INVALID ||
                    respool_options_set_ms(nullptr, RESPOOL_OPT_IDLE_TTL_MS, 1) != RESPOOL_E_INVALID ||
                    respool_options_set_bool(nullptr, RESPOOL_OPT_RECORD_TIMINGS, true) != RESPOOL_E_INVALID)
                    fail("options calls on NULL accepted");
                respool_options_free(nullptr);
                if (!respool_status_string(12345) || !respool_status_string(RESPOOL_E_INTERNAL))
                    fail("status_string returned NULL");
                const respool_api* api = respool_get_api();
                if (!api || api->abi_version != RESPOOL_ABI_VERSION || !RESPOOL_API_HAS(api, get_stats2) ||
                    api->create2 != &respool_create2 || api->free != &respool_free)
                    fail("the function table is wrong");
            });
            break;
        case 7: {  // a freed pool the harness still holds a lease of: a second free does nothing
            for (auto& rec : records) {
                if (!rec->freed || held_of(rec.get()) == 0) continue;
                record* f = rec.get();
                worker_at(tid).run([f] {
                    respool_free(f->pool);
                    void* x = nullptr;
                    if (respool_try_acquire(f->pool, &x) != RESPOOL_E_CLOSED)
                        fail("a freed pool lent something");
                });
                break;
            }
            break;
        }
        }
    }

    void settle(record* r) {
        if (!r) return;
        for (int i = 0; i < 100 && r->pending > 0; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }

    // Closes everything, waits for every acquire, gives every lease back, frees what is left, and
    // checks that every created resource was destroyed.
    void finish() {
        for (auto& r : records)
            if (!r->freed) {
                if (respool_close(r->pool) != RESPOOL_OK) fail("close refused");
                r->closed = true;
            }
        for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);;) {
            bool busy = false;
            for (auto& r : records) busy |= r->pending > 0;
            if (!busy) break;
            if (std::chrono::steady_clock::now() > end) fail("an acquire never completed after close");
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        for (int i = 0; i < workers_count; ++i) worker_at(i).wait_idle();
        collect();
        check_all();
        for (auto [r, p] : held) {
            unlend(*r, p, false);
            if (respool_release(r->pool, p) != RESPOOL_OK) fail("a lent resource was refused on release");
        }
        held.clear();
        for (auto& r : records)
            if (!r->freed) {
                respool_free(r->pool);
                r->freed = true;
            }
        for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);;) {
            bool alive = false;
            {
                std::lock_guard lock(g_mu);
                for (auto& r : records) alive |= !r->live.empty();
            }
            if (!alive) break;
            if (std::chrono::steady_clock::now() > end) fail("a created resource was never destroyed");
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    graveyard().clear();
    reader in{data, size};
    program prog;
    for (int ops = 0; in.n > 0 && ops < 128; ++ops) {
        const std::uint8_t op = in.next() % 16;
        const std::uint8_t where = in.next();
        const std::uint8_t a = in.next();
        const int slot = where % slots_count;
        const int tid = (where / slots_count) % workers_count;
        prog.collect();
        record* r = prog.slots[slot];
        const bool room = prog.records.size() < max_pools;
        switch (op) {
        case 0: {
            const std::uint8_t flags = in.next();
            if (room) prog.create_v1(tid, slot, a, flags);
            break;
        }
        case 1: {
            const std::uint8_t n = in.next();
            std::vector<std::pair<std::uint8_t, std::uint8_t>> settings;
            for (int i = 0; i < n % 8; ++i) {
                const std::uint8_t s = in.next();
                settings.emplace_back(s, in.next());
            }
            if (room) prog.create_v2(tid, slot, a, settings.empty() && (n & 0x80), settings);
            break;
        }
        case 2: prog.free_pool(tid, slot); break;
        case 3: prog.acquire(tid, r, a, false); break;
        case 4: prog.acquire(tid, r, a, true); break;
        case 5: prog.async(tid, r, a); break;
        case 6: prog.attempt(tid, r); break;
        case 7: prog.give_back(tid, a, false); break;
        case 8: prog.give_back(tid, a, true); break;
        case 9: prog.close_pool(tid, r); break;
        case 10: prog.stats(tid, r, a); break;
        case 11: prog.circuit(tid, r, a); break;
        case 12: prog.strategy(tid, r, a); break;
        case 13: prog.bad(tid, slot, a); break;
        case 14: prog.settle(r); break;
        case 15: std::this_thread::sleep_for(std::chrono::milliseconds(a % 4)); break;
        }
        prog.collect();
        prog.check_all();
    }
    prog.finish();
    for (auto& r : prog.records) graveyard().push_back(std::move(r));
    return 0;
}
