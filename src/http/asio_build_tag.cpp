// The Asio build this library was compiled for, as a symbol that programs of the same build refer to
// (RESPOOL_LAYER_ASIO_BUILD_CHECK in <respool/http/response.hpp>).
#include <respool/http/response.hpp>

namespace respool::http::detail {
inline namespace RESPOOL_ASIO_BUILD {
extern const int asio_build_tag = 0;
}
}  // namespace respool::http::detail
