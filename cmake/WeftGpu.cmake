# The GPU backends (WEFT_GPU=cuda or hip), included by the root CMakeLists.txt before the library's
# targets exist. It enables the language, and sets for the root to use:
#   WEFT_GPU_SOURCES   the .cu files of src/, transports/ and collectives/ (one source, both vendors)
#   WEFT_GPU_LIBS      what every binary holding the library's objects must link
# Host .cc files stay with the C++ compiler; only the .cu files go to nvcc or clang -x hip.

file(GLOB_RECURSE WEFT_GPU_SOURCES CONFIGURE_DEPENDS src/*.cu transports/*.cu collectives/*.cu)
# The primitives' compile check has a target of its own (WEFT_CUDA_PRIMITIVES_CHECK).
list(FILTER WEFT_GPU_SOURCES EXCLUDE REGEX "/src/math/cuda_check/")

if(WEFT_GPU STREQUAL "cuda")
  # Both must be in place before enable_language() reads them. A100 (sm_80) and H100 (sm_90) first.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  # The static runtime finds libcuda.so.1 with dlopen when first used, so libnccl.so.2 still loads
  # (and runs in host mode) on a machine without a driver. Linking the driver library itself
  # (CUDA::cuda_driver, -lcuda) would make the loader refuse the library there.
  set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  # C++17: CMake 3.25 cannot spell C++20 for nvcc 13, and the shared headers promise C++17.
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  set(CMAKE_CUDA_EXTENSIONS OFF)
  set(CMAKE_CUDA_VISIBILITY_PRESET hidden)
  set(WEFT_GPU_LIBS CUDA::cudart_static)
  add_compile_definitions(WEFT_GPU_CUDA=1)
  return()
endif()

# --- HIP ------------------------------------------------------------------------------------------
if(NOT DEFINED CMAKE_HIP_ARCHITECTURES)
  set(CMAKE_HIP_ARCHITECTURES gfx90a)  # MI200; MI300 (gfx942) needs clang 17 / ROCm 5.7 or newer
endif()

# clang 15 leaves an empty directory in TMPDIR for every HIP compile (probe-1a2b3c, step_kernel-...),
# so each configure and build would leave a few in /tmp. Its HIP compiles, at configure time and
# at build time, get a TMPDIR in the build tree instead.
set(_weft_hip_tmp ${CMAKE_BINARY_DIR}/hip-tmp)
file(MAKE_DIRECTORY ${_weft_hip_tmp})
set(_weft_had_tmpdir FALSE)
if(DEFINED ENV{TMPDIR})
  set(_weft_had_tmpdir TRUE)
  set(_weft_tmpdir_before "$ENV{TMPDIR}")
endif()
set(ENV{TMPDIR} ${_weft_hip_tmp})
set(CMAKE_HIP_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env TMPDIR=${_weft_hip_tmp} ${CMAKE_HIP_COMPILER_LAUNCHER})

# Debian packages ROCm under /usr with its CMake files in /usr/lib/<arch>/cmake, where CMake's HIP
# support (3.25) does not look, and its clang cannot find the device libraries alone. The shim is a
# ROCm root in the build tree whose lib/cmake/hip-lang and bin point at Debian's files.
set(_weft_deb_cmake /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake)
if(NOT DEFINED CMAKE_HIP_COMPILER AND NOT DEFINED ENV{HIPCXX}
   AND EXISTS ${_weft_deb_cmake}/hip-lang/hip-lang-config.cmake AND NOT EXISTS /usr/lib/cmake/hip-lang)
  find_program(WEFT_HIP_CLANG NAMES clang++-15 clang++-17 clang++-16 clang++
               DOC "clang used to compile HIP (Debian's hipcc uses clang++-15 on bookworm)")
  if(NOT WEFT_HIP_CLANG)
    message(FATAL_ERROR "WEFT_GPU=hip: no clang++ found; install hipcc (tools/setup-debian.sh --hip)")
  endif()
  set(_weft_shim ${CMAKE_BINARY_DIR}/rocm-shim)
  file(MAKE_DIRECTORY ${_weft_shim}/lib/cmake)
  file(CREATE_LINK ${_weft_deb_cmake}/hip-lang ${_weft_shim}/lib/cmake/hip-lang SYMBOLIC)
  file(CREATE_LINK /usr/bin ${_weft_shim}/bin SYMBOLIC)
  # From its own bin directory (/usr/lib/llvm-15/bin/clang++): hip-lang looks for compiler-rt
  # next to the compiler, and /usr/bin/../lib/clang holds clang 14's.
  get_filename_component(_weft_clang_real ${WEFT_HIP_CLANG} REALPATH)
  get_filename_component(_weft_clang_dir ${_weft_clang_real} DIRECTORY)
  if(EXISTS ${_weft_clang_dir}/clang++)
    set(_weft_clang_real ${_weft_clang_dir}/clang++)
  endif()
  set(CMAKE_HIP_COMPILER ${_weft_clang_real})
  set(CMAKE_HIP_COMPILER_ROCM_ROOT ${_weft_shim})
  set(_weft_bitcode /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/amdgcn/bitcode)
  set(CMAKE_HIP_FLAGS_INIT "--rocm-path=/usr --hip-device-lib-path=${_weft_bitcode}")
  # CMake's compiler checks look for amd_comgr through the environment's prefix path.
  set(ENV{CMAKE_PREFIX_PATH} "${_weft_deb_cmake}:$ENV{CMAKE_PREFIX_PATH}")

  # clang 15 stops at gfx940 and ROCm 5.2 ships no device libraries for newer chips. Try each
  # target on an empty file first, so that the error says so instead of failing deep in CMake.
  set(_weft_probe ${CMAKE_BINARY_DIR}/rocm-shim/probe.hip)
  file(WRITE ${_weft_probe} "")
  separate_arguments(_weft_flags UNIX_COMMAND "${CMAKE_HIP_FLAGS_INIT}")
  foreach(_arch IN LISTS CMAKE_HIP_ARCHITECTURES)
    execute_process(COMMAND ${_weft_clang_real} -x hip ${_weft_flags} --offload-arch=${_arch} --cuda-device-only
                            -nogpuinc -c ${_weft_probe} -o ${_weft_probe}.o
                    RESULT_VARIABLE _rc ERROR_VARIABLE _err OUTPUT_QUIET)
    if(NOT _rc EQUAL 0)
      string(STRIP "${_err}" _err)
      message(FATAL_ERROR "WEFT_GPU=hip: ${_weft_clang_real} cannot build for ${_arch}:\n  ${_err}\n"
        "Debian 12's ROCm 5.2 (clang 15) builds gfx90a and gfx940; gfx942 (MI300X) needs ROCm 5.7 / "
        "clang 17 or newer (Debian 13, or -DCMAKE_HIP_COMPILER pointing at a newer ROCm clang). "
        "Choose targets with -DCMAKE_HIP_ARCHITECTURES.")
    endif()
  endforeach()
endif()

enable_language(HIP)
find_package(hip CONFIG REQUIRED)
if(_weft_had_tmpdir)
  set(ENV{TMPDIR} "${_weft_tmpdir_before}")
else()
  unset(ENV{TMPDIR})
endif()
set(CMAKE_HIP_STANDARD 17)
set(CMAKE_HIP_STANDARD_REQUIRED ON)
set(CMAKE_HIP_EXTENSIONS OFF)
set(CMAKE_HIP_VISIBILITY_PRESET hidden)
# The .cu files are HIP here: the same source, compiled by clang with -x hip.
set_source_files_properties(${WEFT_GPU_SOURCES} PROPERTIES LANGUAGE HIP)
# The runtime library alone: hip::host would also pull in the compiler-rt of whichever clang
# hip-config found first (clang 14 on Debian 12), and the .cc files never include HIP headers.
set(WEFT_GPU_LIBS hip::amdhip64)
add_compile_definitions(WEFT_GPU_HIP=1)
