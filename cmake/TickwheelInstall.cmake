# Install rules (TICKWHEEL_INSTALL): the libraries, the headers, a CMake
# package (find_package(tickwheel CONFIG)) and a pkg-config file.
#
# Headers go to <prefix>/include/tickwheel/{timer,timer/idle,base}/, never
# to <prefix>/include/timer/ or <prefix>/include/base/: those names are
# common, and a prefix such as /usr/local is shared with other libraries and
# with a project's own include folders, so an unprefixed timer/timer.h could
# shadow or be shadowed by another one depending on the order of -I flags.
# Consumers include "tickwheel/timer/timer.h", the same path as with Bazel.

include(CMakePackageConfigHelpers)

set(TICKWHEEL_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/tickwheel")

# The public headers are timer/*.h (Bazel's public targets in timer/); what
# they include of timer/idle/ and base/ is installed with them, and nothing
# else: a user's translation unit never sees the engine (CONTRIBUTING.md,
# "Layers").
file(GLOB _tickwheel_public RELATIVE "${PROJECT_SOURCE_DIR}" CONFIGURE_DEPENDS
  "${PROJECT_SOURCE_DIR}/timer/*.h")
set(_tickwheel_installed_targets tickwheel_timer tickwheel_local_timer
  tickwheel_idle_tracker)
if(TARGET tickwheel_asio)
  list(APPEND _tickwheel_installed_targets tickwheel_asio)
else()
  list(REMOVE_ITEM _tickwheel_public timer/asio.h)
endif()
if(TARGET tickwheel_durable)
  # The public headers of //durable (the timer, and its metrics'
  # Prometheus exposition); its internals stay behind them.
  list(APPEND _tickwheel_public durable/durable_timer.h durable/prometheus.h)
  list(APPEND _tickwheel_installed_targets tickwheel_durable)
endif()
tickwheel_header_closure(TICKWHEEL_INSTALLED_HEADERS "${PROJECT_SOURCE_DIR}"
  ${_tickwheel_public})
foreach(_header IN LISTS TICKWHEEL_INSTALLED_HEADERS)
  get_filename_component(_dir "${_header}" DIRECTORY)
  install(FILES "${PROJECT_SOURCE_DIR}/${_header}"
    DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/tickwheel/${_dir}"
    COMPONENT tickwheel_development)
endforeach()

install(TARGETS ${_tickwheel_installed_targets}
  EXPORT tickwheelTargets
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT tickwheel_development
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT tickwheel_runtime
          NAMELINK_COMPONENT tickwheel_development
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT tickwheel_runtime)

install(EXPORT tickwheelTargets
  NAMESPACE tickwheel::
  DESTINATION "${TICKWHEEL_CMAKE_DIR}"
  COMPONENT tickwheel_development)

# tickwheelConfig.cmake finds hiredis for a consumer of a static
# tickwheel::durable (its link needs -lhiredis).
if(TARGET tickwheel_durable)
  set(TICKWHEEL_CONFIG_DURABLE ON)
else()
  set(TICKWHEEL_CONFIG_DURABLE OFF)
endif()
configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/tickwheelConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/tickwheelConfig.cmake"
  INSTALL_DESTINATION "${TICKWHEEL_CMAKE_DIR}")
# While the major version is 0, a minor version may change the API
# (CHANGELOG.md): find_package(tickwheel 0.2) accepts 0.2.x only.
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/tickwheelConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES
  "${PROJECT_BINARY_DIR}/tickwheelConfig.cmake"
  "${PROJECT_BINARY_DIR}/tickwheelConfigVersion.cmake"
  DESTINATION "${TICKWHEEL_CMAKE_DIR}"
  COMPONENT tickwheel_development)

# pkg-config: the Debian modules of what the targets link above. The
# installed headers include Abseil's any_invocable, status, statusor and time,
# its thread-safety macros (core_headers), and fmt (timer/metrics.h formats
# with it), so those are always required; the thread library is the sources'
# own, needed by the consumer's link only when the libraries are static (the
# default).
set(TICKWHEEL_PC_REQUIRES
  "absl_any_invocable absl_core_headers absl_status absl_statusor absl_time fmt")
if(BUILD_SHARED_LIBS)
  set(TICKWHEEL_PC_LIBS "")
  set(TICKWHEEL_PC_PRIVATE "Libs.private: -pthread\n")
else()
  set(TICKWHEEL_PC_LIBS " -pthread")
  set(TICKWHEEL_PC_PRIVATE "")
endif()
# The prefix is found relative to the .pc file itself (${pcfiledir}), so an
# install with `cmake --install --prefix <dir>`, under DESTDIR or moved
# elsewhere afterwards names the right folders.
set(TICKWHEEL_PC_DIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
if(IS_ABSOLUTE "${TICKWHEEL_PC_DIR}")
  set(TICKWHEEL_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _up "/${TICKWHEEL_PC_DIR}" "/")
  string(REGEX REPLACE "/$" "" _up "${_up}")
  set(TICKWHEEL_PC_PREFIX "\${pcfiledir}/${_up}")
endif()
foreach(_kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_kind}}")
    set(TICKWHEEL_PC_${_kind} "${CMAKE_INSTALL_${_kind}}")
  else()
    set(TICKWHEEL_PC_${_kind} "\${prefix}/${CMAKE_INSTALL_${_kind}}")
  endif()
endforeach()
configure_file("${PROJECT_SOURCE_DIR}/cmake/tickwheel.pc.in"
  "${PROJECT_BINARY_DIR}/tickwheel.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/tickwheel.pc"
  DESTINATION "${TICKWHEEL_PC_DIR}"
  COMPONENT tickwheel_development)
# tickwheel-durable.pc: the durable timers on top of tickwheel.pc, with
# hiredis for static links.
if(TARGET tickwheel_durable)
  # A static libtickwheel_durable.a needs -lhiredis in the consumer's link,
  # so hiredis is a plain requirement then, and a private one for a .so.
  if(BUILD_SHARED_LIBS)
    set(TICKWHEEL_PC_DURABLE_REQUIRES "tickwheel = ${PROJECT_VERSION}\nRequires.private: hiredis")
  else()
    set(TICKWHEEL_PC_DURABLE_REQUIRES "tickwheel = ${PROJECT_VERSION}, hiredis")
  endif()
  configure_file("${PROJECT_SOURCE_DIR}/cmake/tickwheel-durable.pc.in"
    "${PROJECT_BINARY_DIR}/tickwheel-durable.pc" @ONLY)
  install(FILES "${PROJECT_BINARY_DIR}/tickwheel-durable.pc"
    DESTINATION "${TICKWHEEL_PC_DIR}"
    COMPONENT tickwheel_development)
endif()
