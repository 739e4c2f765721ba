// Which Asio build a translation unit uses, as a name: a program either includes Asio header-only or
// compiles it once itself (BOOST_ASIO_SEPARATE_COMPILATION), and respool's libraries exist once per build.
// The name goes into mangled names so that a program linked against a library of the other build fails
// to link, naming the build, instead of mixing two builds of Asio in one binary.
#pragma once

#if defined(BOOST_ASIO_SEPARATE_COMPILATION)
#define RESPOOL_ASIO_BUILD asio_separate_compilation
#else
#define RESPOOL_ASIO_BUILD asio_header_only
#endif

// For a layer library (pg, sqlite, http), whose headers' calls into the library would link against
// either build: the library defines respool::<layer>::detail::<its build>::asio_build_tag
// (src/<layer>/asio_build_tag.cpp), and one header of the layer says RESPOOL_LAYER_ASIO_BUILD_CHECK(<layer>),
// so that every translation unit including it refers to the tag of its own build. `used`: the reference
// stays even when nothing reads it.
#define RESPOOL_LAYER_ASIO_BUILD_CHECK(layer)                                 \
    namespace respool::layer::detail {                                        \
    inline namespace RESPOOL_ASIO_BUILD {                                     \
    extern const int asio_build_tag;                                          \
    }                                                                         \
    [[gnu::used]] static const int* const asio_build_check = &asio_build_tag; \
    }
