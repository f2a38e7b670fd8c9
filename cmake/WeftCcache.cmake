# Compiles through ccache when it is installed (WEFT_CCACHE, on by default). tools/test.sh builds
# the same sources five ways (host, ASan, TSan, CUDA, HIP), and a CI runner builds them again for
# every change: with the cache, each build compiles only what changed since one before it. A
# launcher set by the user (CMAKE_<LANG>_COMPILER_LAUNCHER) wins. Without ccache nothing changes.
option(WEFT_CCACHE "Compile through ccache when it is installed" ON)
if(WEFT_CCACHE)
  find_program(WEFT_CCACHE_PROGRAM ccache)
  if(WEFT_CCACHE_PROGRAM)
    foreach(lang C CXX CUDA HIP)
      if(NOT CMAKE_${lang}_COMPILER_LAUNCHER)
        set(CMAKE_${lang}_COMPILER_LAUNCHER ${WEFT_CCACHE_PROGRAM})
      endif()
    endforeach()
  endif()
endif()
