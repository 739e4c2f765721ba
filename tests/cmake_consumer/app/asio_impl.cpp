// This program compiles Asio once, here (BOOST_ASIO_SEPARATE_COMPILATION comes from
// respool::respool_asio_separate, or from the respool-cxx-asio-separate pkg-config file).
#include <boost/asio/impl/src.hpp>
