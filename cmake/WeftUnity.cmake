# Unity builds for the check builds (tools/test.sh: the sanitizer, CUDA and HIP trees), which
# compile the whole library again: one translation unit per source folder parses the shared
# headers once instead of once per file, and the check builds take about half as long on two cores.
# The host build (and so clang-tidy's compile database) keeps one unit per file, which checks that
# every file includes what it uses.
#
# A folder is one unit because a folder is one responsibility (docs/architecture.md): its files may
# not define two internal helpers of the same name, which would be a duplicate anyway (shared text
# helpers live in base/text.h). Folders of more than WEFT_UNITY_MAX_FILES files are split into
# groups of that many, in name order, so that no unit becomes one long serial compile. Only the
# library is merged: test files name their local helpers freely (Case, Buffer), and merging them
# would make every new test a possible clash.
option(WEFT_UNITY_BUILD "Compile each source folder as one unit (faster cold builds; the check builds use it)" OFF)
set(WEFT_UNITY_MAX_FILES 8 CACHE STRING "The most files one unity unit takes (WEFT_UNITY_BUILD)")

function(weft_unity_by_folder target)
  if(NOT WEFT_UNITY_BUILD)
    return()
  endif()
  get_target_property(sources ${target} SOURCES)
  get_target_property(targetDir ${target} SOURCE_DIR)
  set(seen "")
  foreach(src IN LISTS sources)
    if(NOT src MATCHES "\\.(cc|cpp|c)$")
      continue()  # headers, and .cu/.hip sources, which CMake does not merge
    endif()
    cmake_path(ABSOLUTE_PATH src BASE_DIRECTORY "${targetDir}" NORMALIZE OUTPUT_VARIABLE abs)
    cmake_path(GET abs PARENT_PATH folder)
    cmake_path(RELATIVE_PATH folder BASE_DIRECTORY "${PROJECT_SOURCE_DIR}" OUTPUT_VARIABLE rel)
    string(MAKE_C_IDENTIFIER "${rel}" key)
    if(NOT key IN_LIST seen)
      list(APPEND seen ${key})
      set(count_${key} 0)
    endif()
    math(EXPR part "${count_${key}} / ${WEFT_UNITY_MAX_FILES}")
    math(EXPR count_${key} "${count_${key}} + 1")
    set_property(SOURCE "${abs}" TARGET_DIRECTORY ${target} PROPERTY UNITY_GROUP "${key}_${part}")
  endforeach()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
endfunction()
