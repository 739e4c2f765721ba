#!/usr/bin/env python3
"""Drive respool's C ABI from Python with ctypes: a pool of Python-side "connections".

Usage: ctypes_pool.py /path/to/librespool.so   (run by the test suite)
"""
import ctypes as C
import sys
import threading

lib = C.CDLL(sys.argv[1] if len(sys.argv) > 1 else "librespool.so")

RESPOOL_OK, RESPOOL_E_INVALID, RESPOOL_E_EXHAUSTED, RESPOOL_E_TIMEOUT = 0, -1, -6, -3

CREATE = C.CFUNCTYPE(C.c_int, C.c_void_p, C.POINTER(C.c_void_p))
DESTROY = C.CFUNCTYPE(None, C.c_void_p, C.c_void_p)
CHECK = C.CFUNCTYPE(C.c_bool, C.c_void_p, C.c_void_p)
ACQUIRED = C.CFUNCTYPE(None, C.c_void_p, C.c_int, C.c_void_p)


class Hooks(C.Structure):
    _fields_ = [("ctx", C.c_void_p), ("create", CREATE), ("destroy", DESTROY), ("healthcheck", CHECK),
                ("before_acquire", CHECK), ("before_release", CHECK)]


class Config(C.Structure):
    _fields_ = [("min", C.c_uint32), ("max", C.c_uint32), ("healthcheck_interval_ms", C.c_uint32),
                ("max_waiters", C.c_uint32)]


class Stats(C.Structure):
    _fields_ = [(n, C.c_uint32) for n in ("idle", "active", "total", "waiting", "max")] + \
               [(n, C.c_uint64) for n in ("acquires", "waits", "timeouts", "cancellations", "creations",
                                          "create_failures", "destructions", "poisoned",
                                          "unavailable_rejections")]


lib.respool_status_string.restype = C.c_char_p
lib.respool_create.argtypes = [C.POINTER(Config), C.POINTER(Hooks), C.POINTER(C.c_void_p)]
lib.respool_acquire.argtypes = [C.c_void_p, C.POINTER(C.c_void_p), C.c_int64]
lib.respool_try_acquire.argtypes = [C.c_void_p, C.POINTER(C.c_void_p)]
lib.respool_release.argtypes = [C.c_void_p, C.c_void_p]
lib.respool_acquire_async.argtypes = [C.c_void_p, C.c_int64, ACQUIRED, C.c_void_p]
lib.respool_get_stats.argtypes = [C.c_void_p, C.POINTER(Stats)]
lib.respool_close.argtypes = [C.c_void_p]
lib.respool_free.argtypes = [C.c_void_p]

# Python objects behind opaque handles: the pool only ever sees the integer handle.
connections = {}
next_handle = [0]


@CREATE
def create(ctx, out):
    next_handle[0] += 1
    handle = next_handle[0] * 8
    connections[handle] = {"id": next_handle[0], "queries": 0}
    out[0] = handle
    return 0


@DESTROY
def destroy(ctx, resource):
    del connections[resource]


@CHECK
def before_release(ctx, resource):
    return connections[resource]["queries"] < 1000  # retire heavily used connections


def check(status, want, what):
    if status != want:
        raise SystemExit(f"{what}: {lib.respool_status_string(status).decode()} (want {want})")


hooks = Hooks(None, create, destroy, CHECK(0), CHECK(0), before_release)
pool = C.c_void_p()
check(lib.respool_create(C.byref(Config(1, 2, 0, 0)), C.byref(hooks), C.byref(pool)), RESPOOL_OK, "create")

a, b, c = C.c_void_p(), C.c_void_p(), C.c_void_p()
check(lib.respool_acquire(pool, C.byref(a), 100), RESPOOL_OK, "acquire")
connections[a.value]["queries"] += 1
check(lib.respool_try_acquire(pool, C.byref(b)), RESPOOL_OK, "try_acquire")
check(lib.respool_try_acquire(pool, C.byref(c)), RESPOOL_E_EXHAUSTED, "try_acquire when exhausted")
check(lib.respool_acquire(pool, C.byref(c), 10), RESPOOL_E_TIMEOUT, "acquire with timeout")

done = threading.Event()
got = {}


@ACQUIRED
def on_acquired(user, status, resource):  # runs on the pool's own thread
    got["status"], got["resource"] = status, resource
    done.set()


check(lib.respool_acquire_async(pool, 0, on_acquired, None), RESPOOL_OK, "acquire_async")
check(lib.respool_release(pool, a), RESPOOL_OK, "release")  # hands `a` to the async waiter
done.wait(10)
check(got.get("status", 99), RESPOOL_OK, "async completion")
assert got["resource"] == a.value, "the released connection went to the waiter"
check(lib.respool_release(pool, a), RESPOOL_OK, "release after async")
check(lib.respool_release(pool, a), RESPOOL_E_INVALID, "double release")
check(lib.respool_release(pool, b), RESPOOL_OK, "release b")

stats = Stats()
check(lib.respool_get_stats(pool, C.byref(stats)), RESPOOL_OK, "stats")
print(f"python ctypes: idle {stats.idle} total {stats.total} acquires {stats.acquires} "
      f"timeouts {stats.timeouts} waits {stats.waits}")
assert (stats.idle, stats.total, stats.acquires, stats.timeouts) == (2, 2, 3, 1), "unexpected stats"
check(lib.respool_close(pool), RESPOOL_OK, "close")
lib.respool_free(pool)
assert not connections, "every connection was destroyed"
print("python ctypes: ok")
