# Fails unless EXECUTABLE depends on the shared rtx library (EXPECTED=shared) or does not
# (EXPECTED=static). Run by ctest in script mode:
#   cmake -DEXECUTABLE=<path> -DEXPECTED=shared|static -DSONAME=librtx.so.N -P check_linkage.cmake
cmake_minimum_required(VERSION 3.16)

file(GET_RUNTIME_DEPENDENCIES
  EXECUTABLES "${EXECUTABLE}"
  RESOLVED_DEPENDENCIES_VAR resolved
  UNRESOLVED_DEPENDENCIES_VAR unresolved)
set(rtx_dependencies "")
foreach(dependency IN LISTS resolved unresolved)
  get_filename_component(name "${dependency}" NAME)
  if(name STREQUAL "${SONAME}")
    list(APPEND rtx_dependencies "${dependency}")
  endif()
endforeach()

if(EXPECTED STREQUAL "shared" AND NOT rtx_dependencies)
  message(FATAL_ERROR "${EXECUTABLE} should need ${SONAME} but does not (needs: ${resolved};${unresolved})")
elseif(EXPECTED STREQUAL "static" AND rtx_dependencies)
  message(FATAL_ERROR "${EXECUTABLE} should contain rtx statically but needs ${rtx_dependencies}")
endif()
message(STATUS "${EXECUTABLE}: linked ${EXPECTED} as expected (${SONAME}: ${rtx_dependencies})")
