// The Asio build this library was compiled for, as a symbol that programs of the same build refer to
// (RESPOOL_LAYER_ASIO_BUILD_CHECK in <respool/pg/connection.hpp>).
#include <respool/pg/connection.hpp>

namespace respool::pg::detail {
inline namespace RESPOOL_ASIO_BUILD {
extern const int asio_build_tag = 0;
}
}  // namespace respool::pg::detail
