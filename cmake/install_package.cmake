# Writes the CMake package files and the pkg-config file of an rtx install tree.
# Run in script mode by scripts/setup/install.sh (which copies the libraries and the header first):
#
#   cmake -DRTX_PREFIX=<prefix> -DRTX_VERSION=<x.y.z> -DRTX_ABI_VERSION=<n> -DRTX_SONAME=<librtx.so.n>
#         -DRTX_NATIVE_STATIC_LIBS="<-lfoo -lbar ...>" -DRTX_POINTER_SIZE=<bytes>
#         -DRTX_DESCRIPTION="<text>" -DRTX_FEATURES="<feature,feature,...>" -P cmake/install_package.cmake
#
# Output: <prefix>/lib/cmake/rtx/rtxConfig.cmake, rtxConfigVersion.cmake, <prefix>/lib/pkgconfig/rtx.pc.
cmake_minimum_required(VERSION 3.16)

foreach(required RTX_PREFIX RTX_VERSION RTX_ABI_VERSION RTX_SONAME RTX_NATIVE_STATIC_LIBS RTX_POINTER_SIZE
                 RTX_DESCRIPTION)
  if(NOT DEFINED ${required} OR "${${required}}" STREQUAL "")
    message(FATAL_ERROR "install_package.cmake: -D${required}=... is required")
  endif()
endforeach()

include(CMakePackageConfigHelpers)

# The Cargo features the library was built with: a CMake list for rtxConfig.cmake, words for rtx.pc.
string(REPLACE "," ";" RTX_FEATURES_CMAKE "${RTX_FEATURES}")
string(REPLACE "," " " RTX_FEATURES_PC "${RTX_FEATURES}")

# The native libraries a static librtx needs, as rustc printed them: "-lfoo" becomes "foo" for
# INTERFACE_LINK_LIBRARIES; pkg-config's Libs.private takes the flags as they are.
separate_arguments(native_flags UNIX_COMMAND "${RTX_NATIVE_STATIC_LIBS}")
set(RTX_NATIVE_STATIC_LIBS_CMAKE "")
foreach(flag IN LISTS native_flags)
  if(flag MATCHES "^-l(.+)$")
    list(APPEND RTX_NATIVE_STATIC_LIBS_CMAKE "${CMAKE_MATCH_1}")
  else()
    list(APPEND RTX_NATIVE_STATIC_LIBS_CMAKE "${flag}")
  endif()
endforeach()
list(JOIN native_flags " " RTX_NATIVE_STATIC_LIBS_PC)

set(source_dir "${CMAKE_CURRENT_LIST_DIR}")
set(package_dir "lib/cmake/rtx")
set(RTX_INCLUDE_DIR "include")
set(RTX_LIBRARY_DIR "lib")
set(CMAKE_INSTALL_PREFIX "${RTX_PREFIX}")

configure_package_config_file("${source_dir}/rtxConfig.cmake.in" "${RTX_PREFIX}/${package_dir}/rtxConfig.cmake"
  INSTALL_DESTINATION "${package_dir}"
  INSTALL_PREFIX "${RTX_PREFIX}"
  PATH_VARS RTX_INCLUDE_DIR RTX_LIBRARY_DIR)

# Before 1.0 a minor bump may break the API, so only the same MAJOR.MINOR is compatible; from 1.0
# on, the same MAJOR. write_basic_package_version_file also compares the consumer's
# CMAKE_SIZEOF_VOID_P with ours.
if(RTX_VERSION MATCHES "^0\\.")
  set(compatibility SameMinorVersion)
else()
  set(compatibility SameMajorVersion)
endif()
set(CMAKE_SIZEOF_VOID_P "${RTX_POINTER_SIZE}")
write_basic_package_version_file("${RTX_PREFIX}/${package_dir}/rtxConfigVersion.cmake"
  VERSION "${RTX_VERSION}"
  COMPATIBILITY ${compatibility})

configure_file("${source_dir}/rtx.pc.in" "${RTX_PREFIX}/lib/pkgconfig/rtx.pc" @ONLY)
