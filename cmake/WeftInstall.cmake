# What `cmake --install` puts under a prefix, laid out as NCCL's packages are, and the two ways a
# consumer finds it: a CMake package (find_package(weft) -> weft::weft, weft::nccl, weft::rccl)
# and pkg-config files (weft.pc, nccl.pc). Every path here is relative to the prefix, so an
# installed tree (or an extracted .deb) can be moved and still found.
include(CMakePackageConfigHelpers)

set(WEFT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/weft)

# Libraries with their SONAME links and the unversioned development links (libnccl.so -> ...).
install(TARGETS weft weft_nccl weft_rccl EXPORT weftTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES include/nccl.h include/rccl.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/rccl include/weft DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES LICENSE README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The imported targets are named after what a consumer links: weft::nccl is libnccl.so.2.
set_target_properties(weft PROPERTIES EXPORT_NAME weft)
set_target_properties(weft_nccl PROPERTIES EXPORT_NAME nccl)
set_target_properties(weft_rccl PROPERTIES EXPORT_NAME rccl)
install(EXPORT weftTargets NAMESPACE weft:: DESTINATION ${WEFT_CMAKE_DIR})
configure_package_config_file(cmake/weftConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/weftConfig.cmake
  INSTALL_DESTINATION ${WEFT_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/weftConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/weftConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/weftConfigVersion.cmake
  DESTINATION ${WEFT_CMAKE_DIR})

# pkg-config: weft.pc links libweft.so; nccl.pc links libnccl.so for build scripts that ask
# pkg-config for NCCL by that name. Paths are written from ${pcfiledir}, so they follow the tree.
file(RELATIVE_PATH WEFT_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" WEFT_PC_TO_PREFIX "${WEFT_PC_TO_PREFIX}")
foreach(pc weft nccl)
  if(pc STREQUAL "weft")
    set(WEFT_PC_NAME "Weft")
    set(WEFT_PC_LIB weft)
    set(WEFT_PC_VERSION ${PROJECT_VERSION})
  else()
    set(WEFT_PC_NAME "NCCL (Weft)")
    set(WEFT_PC_LIB nccl)
    set(WEFT_PC_VERSION 2.28.9)
  endif()
  configure_file(cmake/weft.pc.in ${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/${pc}.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()

# `cpack -G DEB` in the build directory makes weft_<version>_<arch>.deb for Debian 12.
set(CPACK_PACKAGE_NAME weft)
set(CPACK_PACKAGE_VENDOR "Weft")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Collective communication library with the NCCL/RCCL C API, with a host (CPU) mode")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
# The three libraries are one set of objects; with their debug information a .deb would be 55 MB.
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "Weft developers <weft@localhost>")
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
# dpkg-shlibdeps reads the libraries' needs (libhwloc15, libc6, libstdc++6) into Depends.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# libnccl.so.2 is also the name of NVIDIA's package's library: the two cannot be installed together.
set(CPACK_DEBIAN_PACKAGE_CONFLICTS "libnccl2")
include(CPack)
