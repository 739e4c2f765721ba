// Boost.JSON, compiled into the tool from its headers (its own build is not needed): this is the one
// file that includes its implementation.
#include <boost/json/src.hpp>
