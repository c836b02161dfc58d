# Install and packaging of tether (included by the top-level CMakeLists.txt after src/ and tools/):
#   <prefix>/include            public headers (include/, plus the generated tether/version.h)
#   <prefix>/<libdir>           libtether, libtether_shmem (+ soname links)
#   <prefix>/<libdir>/cmake/tether   the CMake package (tetherConfig.cmake, version file, exported targets)
#   <prefix>/<libdir>/pkgconfig      tether.pc, tether-shmem.pc (relocatable through ${pcfiledir})
#   <prefix>/share/doc/tether   README and docs/
# Executables (tetherrun, oshrun, oshcc/oshc++, tether-info) are installed by tools/*/CMakeLists.txt.
include(CMakePackageConfigHelpers)

set(TETHER_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tether)

install(TARGETS tether tether_shmem tether_device EXPORT tetherTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${TETHER_VERSION_HEADER} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tether)

install(EXPORT tetherTargets NAMESPACE tether:: DESTINATION ${TETHER_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/tetherConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tetherConfig.cmake INSTALL_DESTINATION ${TETHER_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tetherConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tetherConfig.cmake ${PROJECT_BINARY_DIR}/tetherConfigVersion.cmake
  DESTINATION ${TETHER_CMAKE_DIR})

# pkg-config: prefix = ${pcfiledir} followed by one ".." per component of <libdir>/pkgconfig, so the files stay
# true when the prefix is moved. Absolute install dirs can only be named as they are.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(TETHER_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(TETHER_PC_LIBDIR "${CMAKE_INSTALL_FULL_LIBDIR}")
  set(TETHER_PC_INCLUDEDIR "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
else()
  string(REGEX REPLACE "[^/]+" ".." _tether_up "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
  set(TETHER_PC_PREFIX "\${pcfiledir}/${_tether_up}")
  set(TETHER_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  set(TETHER_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
foreach(pc tether tether-shmem)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/${pc}.pc.in ${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()

install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})
