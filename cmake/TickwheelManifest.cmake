# Writes <build>/tickwheel_manifest.txt: what this configuration builds, read
# back from the targets themselves, for tools/check_cmake_sync.sh to compare
# with what Bazel builds. One entry a line:
#   library <path>     a source or header of tickwheel::timer, ::local_timer,
#                      ::idle_tracker or ::durable
#   skipped durable    tickwheel::durable is not built (no hiredis); the drift
#                      check then leaves //durable out
#   skipped asio       tickwheel::asio is not made (no standalone Asio); the
#                      drift check then leaves timer/asio.h (and its service) out
#   test <name>        a test that ctest runs (tests of tests/ by their bare
#                      name, the others as <folder>/<name>)
#   bazel_only <name>  a Bazel test that the CMake build leaves out on purpose
#                      (tests/CMakeLists.txt says why)

set(_manifest "")
set(_targets tickwheel_timer tickwheel_local_timer tickwheel_idle_tracker)
if(TARGET tickwheel_durable)
  list(APPEND _targets tickwheel_durable)
else()
  string(APPEND _manifest "skipped durable\n")
endif()
if(TARGET tickwheel_asio)
  list(APPEND _targets tickwheel_asio)
else()
  string(APPEND _manifest "skipped asio\n")
endif()
foreach(_target IN LISTS _targets)
  get_target_property(_sources ${_target} SOURCES)
  foreach(_source IN LISTS _sources)
    file(RELATIVE_PATH _rel "${PROJECT_SOURCE_DIR}" "${_source}")
    string(APPEND _manifest "library ${_rel}\n")
  endforeach()
endforeach()
if(TICKWHEEL_BUILD_TESTS)
  foreach(_dir tests examples)
    get_directory_property(_tests DIRECTORY ${_dir} TESTS)
    foreach(_test IN LISTS _tests)
      string(APPEND _manifest "test ${_test}\n")
    endforeach()
  endforeach()
  get_directory_property(_bazel_only DIRECTORY tests
    DEFINITION TICKWHEEL_BAZEL_ONLY_TESTS)
  foreach(_test IN LISTS _bazel_only)
    string(APPEND _manifest "bazel_only ${_test}\n")
  endforeach()
endif()
file(CONFIGURE OUTPUT "${PROJECT_BINARY_DIR}/tickwheel_manifest.txt"
  CONTENT "${_manifest}" @ONLY)
