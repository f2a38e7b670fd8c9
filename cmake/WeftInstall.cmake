# What `cmake --install` puts under a prefix, laid out as NCCL's packages are, and the two ways a
# consumer finds it: a CMake package (find_package(weft) -> weft::weft, weft::nccl, weft::rccl) and
# pkg-config files (weft.pc, nccl.pc). Every path written into those files is relative to the file
# itself, so an installed tree can be moved and is still found (the .deb's pc files name /usr:
# see weft_install_tree).
include(CMakePackageConfigHelpers)

# The names a consumer links, also in this build tree, so a project that adds Weft with
# add_subdirectory or FetchContent writes the same target_link_libraries as one that installs it.
add_library(weft::weft ALIAS weft)
add_library(weft::nccl ALIAS weft_nccl)
add_library(weft::rccl ALIAS weft_rccl)
set_target_properties(weft PROPERTIES EXPORT_NAME weft)
set_target_properties(weft_nccl PROPERTIES EXPORT_NAME nccl)
set_target_properties(weft_rccl PROPERTIES EXPORT_NAME rccl)

# nccl.pc reports the NCCL version the library implements, read from nccl.h (the one place it is
# written), as NCCL's own nccl.pc does.
file(STRINGS ${PROJECT_SOURCE_DIR}/include/nccl.h _weft_nccl_defines REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
foreach(part MAJOR MINOR PATCH)
  string(REGEX MATCH "NCCL_${part} ([0-9]+)" _weft_match "${_weft_nccl_defines}")
  if(NOT _weft_match)
    message(FATAL_ERROR "include/nccl.h defines no NCCL_${part}: nccl.pc needs it for its version")
  endif()
  set(WEFT_NCCL_VERSION_${part} ${CMAKE_MATCH_1})
endforeach()
set(WEFT_NCCL_API_VERSION ${WEFT_NCCL_VERSION_MAJOR}.${WEFT_NCCL_VERSION_MINOR}.${WEFT_NCCL_VERSION_PATCH})

# weft_install_tree(<component> <libdir> [EXCLUDE_FROM_ALL] [PC_PREFIX <dir>]): installs the whole
# tree with its libraries, CMake package and pkg-config files under <libdir> (relative to the
# prefix), as install component <component>. Called twice: for `cmake --install` (GNUInstallDirs'
# libdir) and for the .deb (Debian's multiarch libdir, cmake/WeftPackage.cmake), because install
# rules fix their destinations when CMake configures, and the .deb must not depend on the prefix
# configured. PC_PREFIX writes that prefix into the pc files instead of one found from the file's
# own place (see below).
function(weft_install_tree component libdir)
  cmake_parse_arguments(PARSE_ARGV 2 arg "EXCLUDE_FROM_ALL" "PC_PREFIX" "")
  set(only_if_asked "")
  if(arg_EXCLUDE_FROM_ALL)
    set(only_if_asked EXCLUDE_FROM_ALL)
  endif()
  set(cmakedir ${libdir}/cmake/weft)
  set(gen ${PROJECT_BINARY_DIR}/install-${component})

  # The libraries with their SONAME links (libnccl.so.2 -> libnccl.so.2.30.7) and the unversioned
  # development links (libnccl.so -> libnccl.so.2), and weft-info. (The include directory the
  # imported targets carry is the INSTALL_INTERFACE one that weft_shared_library gives them.)
  install(TARGETS weft weft_nccl weft_rccl EXPORT weftTargets-${component}
    LIBRARY DESTINATION ${libdir} COMPONENT ${component} ${only_if_asked})
  install(TARGETS weft-info RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT ${component} ${only_if_asked})
  install(FILES ${PROJECT_SOURCE_DIR}/include/nccl.h ${PROJECT_SOURCE_DIR}/include/rccl.h
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT ${component} ${only_if_asked})
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/rccl ${PROJECT_SOURCE_DIR}/include/weft
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT ${component} ${only_if_asked})
  install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/README.md
    DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT ${component} ${only_if_asked})

  # The CMake package: weftTargets.cmake (written by CMake, prefix-relative), weftConfig.cmake
  # and the version file.
  install(EXPORT weftTargets-${component} FILE weftTargets.cmake NAMESPACE weft::
    DESTINATION ${cmakedir} COMPONENT ${component} ${only_if_asked})
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/weftConfig.cmake.in ${gen}/weftConfig.cmake
    INSTALL_DESTINATION ${cmakedir})
  # 0.x releases may change the API at every minor version, so 0.1 accepts 0.1.* only.
  write_basic_package_version_file(${gen}/weftConfigVersion.cmake COMPATIBILITY SameMinorVersion)
  install(FILES ${gen}/weftConfig.cmake ${gen}/weftConfigVersion.cmake
    DESTINATION ${cmakedir} COMPONENT ${component} ${only_if_asked})

  # pkg-config: weft.pc links libweft.so, nccl.pc libnccl.so (NCCL's own `make install` writes an
  # nccl.pc; NVIDIA's and Debian's .debs ship none, so build scripts that ask pkg-config for nccl
  # find Weft's). The prefix is found from ${pcfiledir}, so the files follow the tree. A package for
  # a fixed place (the .deb's /usr) writes it instead: pkg-config then recognises its system
  # directories and leaves -I/usr/include and -L/usr/lib/<multiarch> out of the flags, and an
  # unpacked copy is still used with --define-variable=prefix=<dir>. (A libdir or includedir given
  # as an absolute path is written as it is: such a tree cannot move.)
  if(arg_PC_PREFIX)
    set(WEFT_PC_PREFIX ${arg_PC_PREFIX})
    set(WEFT_PC_LIBDIR "\${prefix}/${libdir}")
  elseif(IS_ABSOLUTE ${libdir})
    set(WEFT_PC_PREFIX ${CMAKE_INSTALL_PREFIX})
    set(WEFT_PC_LIBDIR ${libdir})
  else()
    file(RELATIVE_PATH pc_to_prefix /${libdir}/pkgconfig /)
    string(REGEX REPLACE "/$" "" pc_to_prefix "${pc_to_prefix}")
    set(WEFT_PC_PREFIX "\${pcfiledir}/${pc_to_prefix}")
    set(WEFT_PC_LIBDIR "\${prefix}/${libdir}")
  endif()
  if(IS_ABSOLUTE ${CMAKE_INSTALL_INCLUDEDIR})
    set(WEFT_PC_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR})
  else()
    set(WEFT_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
  endif()
  foreach(pc weft nccl)
    if(pc STREQUAL "weft")
      set(WEFT_PC_DESCRIPTION "Weft, a collective communication library with the NCCL/RCCL C API")
      set(WEFT_PC_VERSION ${PROJECT_VERSION})
    else()
      set(WEFT_PC_DESCRIPTION "The NCCL C API (libnccl.so.2), as provided by Weft ${PROJECT_VERSION}")
      set(WEFT_PC_VERSION ${WEFT_NCCL_API_VERSION})
    endif()
    set(WEFT_PC_NAME ${pc})
    configure_file(${PROJECT_SOURCE_DIR}/cmake/weft.pc.in ${gen}/${pc}.pc @ONLY)
    install(FILES ${gen}/${pc}.pc DESTINATION ${libdir}/pkgconfig COMPONENT ${component} ${only_if_asked})
  endforeach()
endfunction()

# `cmake --install build [--prefix DIR]`: component "weft", libraries in ${CMAKE_INSTALL_LIBDIR}
# (lib, or lib/<multiarch> when the prefix configured is /usr on Debian).
weft_install_tree(weft ${CMAKE_INSTALL_LIBDIR})
