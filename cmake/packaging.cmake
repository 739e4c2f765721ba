# The Debian packages, made by `cpack -G DEB` in a build configured with CMAKE_INSTALL_PREFIX=/usr
# (scripts/package): one per install component.
#   librespool<major>  runtime  the C ABI's shared library (librespool.so.<major>)
#   respool-dev        dev      headers, static C++ libraries, the CMake package, the .pc files, librespool.so
#   respool            cli      bin/respool (only when the CLI is built)
# The runtime libraries a package's binaries need (libc, libstdc++, libpq, SQLite) are found by
# dpkg-shlibdeps; respool-dev names what a program built against it needs: the Boost headers (>= 1.81;
# Debian 12's libboost-dev is 1.74, so its libboost1.81-dev is the alternative), libpq and SQLite's
# development files.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME respool)
set(CPACK_PACKAGE_VENDOR respool)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "asynchronous connection pool for C++20 and Boost.Asio")
set(CPACK_PACKAGE_CONTACT "respool maintainers <maintainers@respool.invalid>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # <package>_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_GENERATE_SHLIBS ON)  # ldconfig runs on install and removal
set(CPACK_COMPONENTS_ALL runtime dev)
if(RESPOOL_BUILD_TOOLS)
  list(APPEND CPACK_COMPONENTS_ALL cli)
endif()

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME librespool${PROJECT_VERSION_MAJOR})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION "respool's C ABI (librespool.so.${PROJECT_VERSION_MAJOR})")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME respool-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "respool's headers, C++ libraries (core, PostgreSQL, SQLite, HTTP), CMake package and pkg-config files")
set(CPACK_COMPONENT_DEV_DEPENDS runtime)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)  # so the above becomes "librespool<major> (= version)"
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "libboost-dev (>= ${RESPOOL_BOOST_MIN}) | libboost${RESPOOL_BOOST_MIN}-dev, libpq-dev, libsqlite3-dev")

set(CPACK_DEBIAN_CLI_PACKAGE_NAME respool)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION database)
set(CPACK_COMPONENT_CLI_DESCRIPTION "the respool command: serve (an HTTP key-value service on a pool) and demo")

include(CPack)
