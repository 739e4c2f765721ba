// respool_last_error(): the text of this thread's last failed respool call.
//
// Kept per thread under a POSIX thread-specific key, in a fixed buffer from malloc that the key frees
// with free() when the thread ends: no thread_local (see callback_scope in c_pool.hpp: this library is
// often dlopen'ed), and the key's destructor is libc's own, so it stays valid after a dlclose.
#include "c_pool.hpp"

#include <cstdlib>
#include <cstring>

namespace respool::c_abi {

namespace {

constexpr std::size_t text_size = 512;

struct error_key {
    pthread_key_t k{};
    bool ok = pthread_key_create(&k, &std::free) == 0;
    ~error_key() {
        if (ok) pthread_key_delete(k);
    }
};

const error_key& key() noexcept {
    static const error_key instance;
    return instance;
}

// This thread's buffer; created on first use. nullptr without a key or memory.
char* buffer(bool create) noexcept {
    if (!key().ok) return nullptr;
    auto* b = static_cast<char*>(pthread_getspecific(key().k));
    if (b || !create) return b;
    b = static_cast<char*>(std::calloc(text_size, 1));
    if (b && pthread_setspecific(key().k, b) != 0) {
        std::free(b);
        return nullptr;
    }
    return b;
}

}  // namespace

void set_last_error(std::string_view text) noexcept {
    char* b = buffer(true);
    if (!b) return;
    const std::size_t n = text.size() < text_size - 1 ? text.size() : text_size - 1;  // truncated
    std::memcpy(b, text.data(), n);
    b[n] = '\0';
}

void clear_last_error() noexcept {
    if (char* b = buffer(false)) b[0] = '\0';
}

}  // namespace respool::c_abi

extern "C" const char* respool_last_error(void) {
    const char* b = respool::c_abi::buffer(false);
    return b ? b : "";
}
