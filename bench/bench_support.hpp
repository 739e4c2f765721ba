// What the benchmarks share: a resource that does nothing and hooks with only a factory, so only
// pool overhead is measured.
#pragma once

#include <respool/hooks.hpp>

namespace bench {

struct resource {
    int id;
};

inline respool::hooks<resource> plain_hooks() {
    respool::hooks<resource> h;
    h.factory = [] { return resource{1}; };
    return h;
}

}  // namespace bench
