#include <respool/pool.hpp>
