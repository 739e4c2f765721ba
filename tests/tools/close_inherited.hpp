// For a test's child process, between fork and exec: closes every descriptor from 3 up, so that nothing
// of the test (its chaos proxies' sockets, its pools' connections; Asio does not mark accepted sockets
// close-on-exec) lives on in the program it runs. A PostgreSQL server started by such a child kept
// them open for its lifetime: a connection the proxy closed stayed up for its client.
#pragma once

#include <unistd.h>

namespace test {

// Async-signal-safe. `open_max`: sysconf(_SC_OPEN_MAX), read before the fork; the bound of the
// fallback when the kernel has no close_range (before Linux 5.9).
inline void close_inherited_descriptors(long open_max) noexcept {
    if (::close_range(3, ~0U, 0) == 0) return;
    for (long fd = 3; fd < open_max; ++fd) ::close(static_cast<int>(fd));
}

}  // namespace test
