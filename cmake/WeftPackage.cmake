# `cpack` in the build directory makes weft_<version>-<release>_<arch>.deb for Debian 12: the tree of
# cmake/WeftInstall.cmake under /usr, with the libraries, the CMake package and the pkg-config files
# in Debian's multiarch directory (/usr/lib/x86_64-linux-gnu), whatever prefix the build was
# configured for. Needs dpkg-dev (dpkg-shlibdeps) for the dependencies.

# Debian's multiarch triplet: CMake reads it from the compiler on Debian; dpkg-architecture is the
# fallback. Without either (not a Debian system) the .deb keeps plain lib/.
set(WEFT_DEB_MULTIARCH "${CMAKE_LIBRARY_ARCHITECTURE}")
if(NOT WEFT_DEB_MULTIARCH)
  find_program(WEFT_DPKG_ARCHITECTURE dpkg-architecture)
  if(WEFT_DPKG_ARCHITECTURE)
    execute_process(COMMAND ${WEFT_DPKG_ARCHITECTURE} -qDEB_HOST_MULTIARCH
      OUTPUT_VARIABLE WEFT_DEB_MULTIARCH OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
endif()
if(WEFT_DEB_MULTIARCH)
  set(WEFT_DEB_LIBDIR lib/${WEFT_DEB_MULTIARCH})
else()
  set(WEFT_DEB_LIBDIR lib)
endif()

# The .deb's own copy of the tree: component "deb", left out of a plain `cmake --install`.
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
weft_install_tree(deb ${WEFT_DEB_LIBDIR} EXCLUDE_FROM_ALL PC_PREFIX ${CPACK_PACKAGING_INSTALL_PREFIX})
# Debian policy: every package has /usr/share/doc/<package>/copyright.
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/weft RENAME copyright
  COMPONENT deb EXCLUDE_FROM_ALL)

set(WEFT_DEB_MAINTAINER "The Weft Authors <weft@localhost>" CACHE STRING
  "Maintainer field of the .deb (Name <address>); set it when publishing a package")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME weft)
set(CPACK_PACKAGE_VENDOR "The Weft Authors")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "collective communication library with the NCCL and RCCL C API")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
# Only the "deb" component, as one package (no per-component packages).
set(CPACK_INSTALL_CMAKE_PROJECTS "${PROJECT_BINARY_DIR};weft;deb;/")
# The libraries are one set of objects three times over; with their debug information the .deb
# would be about 55 MB, stripped it is about 4 MB.
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${WEFT_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The extended description, below the summary (CPack puts that first, as the synopsis). Debian
# wants lines of at most 80 columns; CPack indents them by one.
string(JOIN "\n" CPACK_DEBIAN_PACKAGE_DESCRIPTION
  "Weft provides libnccl.so.2 and librccl.so.1 (one library under NCCL's and"
  "RCCL's names) and libweft.so. Every collective also runs in host mode, on"
  "CPUs, between threads or processes. The package holds the libraries, the"
  "headers (nccl.h, rccl.h, weft/weft.h), a CMake package (find_package(weft)),"
  "pkg-config files (weft, nccl) and the weft-info tool.")
# dpkg-shlibdeps reads what the libraries need (libc6, libstdc++6, libgcc-s1, libhwloc15) into
# Depends; the shlibs file lets packages built against libnccl.so.2 depend on this one. ldconfig
# runs through the trigger in cmake/deb/triggers, as Debian's library packages have it (CPack's
# postinst and postrm also call it directly: twice is harmless).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/cmake/deb/triggers)
# NVIDIA's and Debian's NCCL packages, and Debian's RCCL ones, install files of the same names
# (libnccl.so.2, nccl.h, librccl.so.1, rccl.h): only one of them can be installed.
set(CPACK_DEBIAN_PACKAGE_CONFLICTS "libnccl2, libnccl-dev, librccl1, librccl-dev")
# The Python package is built for one interpreter (its extension's ABI tag) and the library works
# without it, so that Python version and NumPy are recommended rather than required.
if(TARGET weft_python_ext)
  string(REPLACE "." ";" _py_parts "${WEFT_PYTHON_VERSION}")
  list(GET _py_parts 0 _py_major)
  list(GET _py_parts 1 _py_minor)
  math(EXPR _py_next "${_py_minor} + 1")
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS
    "python3 (>= ${WEFT_PYTHON_VERSION}), python3 (<< ${_py_major}.${_py_next}), python3-numpy")
endif()
include(CPack)
