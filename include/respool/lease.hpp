// lease<T>: the caller's handle on an acquired resource. Move-only; the destructor returns the
// resource. A lease may outlive the pool object: its release then destroys the resource.
#pragma once

#include <respool/detail/pool_handle.hpp>

#include <cassert>
#include <utility>

namespace respool {
template <class T>
class lease;
}

namespace respool {

namespace detail {
// The library's way to wrap a resource it lends, and (the C ABI) to take it back out of a lease.
struct lease_access {
    template <class T>
    static lease<T> adopt(pool_impl* impl, resource_node* node) noexcept {
        return lease<T>(impl, node);
    }
    template <class T>
    static resource_node* detach(lease<T>& l) noexcept {
        l.impl_ = nullptr;
        return std::exchange(l.node_, nullptr);
    }
};
}  // namespace detail

template <class T>
class lease {
public:
    lease() noexcept = default;
    lease(lease&& o) noexcept
        : impl_(std::exchange(o.impl_, nullptr)), node_(std::exchange(o.node_, nullptr)) {}
    lease& operator=(lease&& o) noexcept {
        if (this != &o) {
            release();
            impl_ = std::exchange(o.impl_, nullptr);
            node_ = std::exchange(o.node_, nullptr);
        }
        return *this;
    }
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;
    ~lease() { release(); }

    // true while it holds a resource.
    explicit operator bool() const noexcept { return node_ != nullptr; }
    [[nodiscard]] bool empty() const noexcept { return node_ == nullptr; }

    T& get() const noexcept {
        assert(node_ && "respool::lease: no resource");
        return static_cast<detail::typed_node<T>*>(node_)->value;
    }
    T& operator*() const noexcept { return get(); }
    T* operator->() const noexcept { return &get(); }

    // Returns the resource now (before_release runs; a broken one is destroyed). Idempotent.
    void release() noexcept {
        if (node_) detail::release_node(std::exchange(impl_, nullptr), std::exchange(node_, nullptr), false);
    }
    // Destroys the resource instead of returning it (a connection-level error, say). Idempotent.
    void poison() noexcept {
        if (node_) detail::release_node(std::exchange(impl_, nullptr), std::exchange(node_, nullptr), true);
    }

private:
    friend struct detail::lease_access;
    lease(detail::pool_impl* impl, detail::resource_node* node) noexcept : impl_(impl), node_(node) {}

private:
    detail::pool_impl* impl_ = nullptr;
    detail::resource_node* node_ = nullptr;
};

}  // namespace respool
