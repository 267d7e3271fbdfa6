# The Python extension attn_trace._core (docs/PYTHON.md): nanobind over the commands
# layer, the same library targets the CLI links, so nothing is computed, rendered or
# worded twice. nanobind comes from PyPI (pyproject.toml's build requirements, or
# `pip install nanobind` for the plain build); its CMake folder is asked of Python.
find_package(Python 3.11 REQUIRED COMPONENTS Interpreter Development.Module)
execute_process(COMMAND "${Python_EXECUTABLE}" -m nanobind --cmake_dir
                OUTPUT_VARIABLE nanobind_ROOT OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE nanobind_found)
if(NOT nanobind_found EQUAL 0)
  message(FATAL_ERROR "ATTN_TRACE_PYTHON needs nanobind for ${Python_EXECUTABLE}: pip install nanobind")
endif()
find_package(nanobind CONFIG REQUIRED)
file(GLOB ATTN_TRACE_PYTHON_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/python/*.cpp)
nanobind_add_module(_core NB_STATIC ${ATTN_TRACE_PYTHON_SOURCES})
target_link_libraries(_core PRIVATE attn_trace_commands)
target_include_directories(_core PRIVATE ${PROJECT_SOURCE_DIR}/src)
# The plain build puts the extension beside the package's Python files' copy in the build
# tree, so that pytest imports the package from there (tools/test.sh).
set(ATTN_TRACE_PYTHON_PACKAGE ${CMAKE_BINARY_DIR}/python/attn_trace)
set_target_properties(_core PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ATTN_TRACE_PYTHON_PACKAGE})
file(GLOB ATTN_TRACE_PYTHON_FILES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/python/attn_trace/*)
add_custom_target(python_package ALL
  COMMAND ${CMAKE_COMMAND} -E copy_if_different ${ATTN_TRACE_PYTHON_FILES} ${ATTN_TRACE_PYTHON_PACKAGE}
  DEPENDS ${ATTN_TRACE_PYTHON_FILES} _core
  COMMENT "the Python package in ${ATTN_TRACE_PYTHON_PACKAGE}")
# Type stubs for the extension (nanobind's stubgen), shipped beside it. The extension is
# imported alone (as _core, from its own folder): the package's __init__ needs numpy,
# which the isolated build environment of `pip install .` does not hold.
nanobind_add_stub(_core_stub MODULE _core OUTPUT ${ATTN_TRACE_PYTHON_PACKAGE}/_core.pyi
                  PYTHON_PATH ${ATTN_TRACE_PYTHON_PACKAGE} DEPENDS _core)
if(SKBUILD)
  install(TARGETS _core LIBRARY DESTINATION attn_trace)
  install(FILES ${ATTN_TRACE_PYTHON_PACKAGE}/_core.pyi DESTINATION attn_trace)
  install(TARGETS attn-trace RUNTIME DESTINATION ${SKBUILD_SCRIPTS_DIR})
endif()
