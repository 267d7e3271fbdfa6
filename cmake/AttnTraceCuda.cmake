# The optional CUDA backend (docs/COMMANDS.md#the-cuda-backend): built only when asked
# (-DATTN_TRACE_CUDA=ON) and a CUDA compiler is found; otherwise the project builds and
# tests without it, and --backend cuda exits 3. CI builds it once (.ci/run) so that it
# cannot rot. Sanitizer builds leave it out: ASan's shadow memory and the CUDA runtime
# clash.
option(ATTN_TRACE_CUDA "Build the CUDA backend (needs nvcc)" OFF)
set(ATTN_TRACE_HAS_CUDA OFF)
if(ATTN_TRACE_CUDA AND NOT ATTN_TRACE_SANITIZE)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # A100 (sm_80) and H100/H200 (sm_90); the tensor-core kernel's bf16 WMMA needs sm_80 or later.
      set(CMAKE_CUDA_ARCHITECTURES "80;90")
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 knows no CUDA20 dialect; the headers it includes need only C++17
    add_library(attn_trace_cuda STATIC src/backend/cuda/backend_cuda.cu src/backend/cuda/backend_cuda_tensor_cores.cu)
    # Part of the backend layer: it sees the layers below and the backend's own headers.
    target_include_directories(attn_trace_cuda PRIVATE include/backend src)
    target_link_libraries(attn_trace_cuda PUBLIC attn_trace_problem PRIVATE CUDA::cudart_static)
    target_link_libraries(attn_trace_backend PUBLIC attn_trace_cuda)
    # The one place code asks whether CUDA was built: src/backend/backend.cpp.
    target_compile_definitions(attn_trace_backend PRIVATE ATTN_TRACE_HAS_CUDA)
    set(ATTN_TRACE_HAS_CUDA ON)
  endif()
endif()
message(STATUS "attn-trace: CUDA backend ${ATTN_TRACE_HAS_CUDA}")
