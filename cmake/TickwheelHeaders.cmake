# Headers as consumers name them: "tickwheel/timer/timer.h".
#
# The folders stay where they are (timer/, timer/idle/, worker/, base/), as with
# Bazel's include_prefix. The build tree gets a folder of links,
# <build>/include/tickwheel/<folder>/<header>, one per header rather than one
# per folder, so that no BUILD.bazel appears under a build folder that a user
# may have put inside the source tree (Bazel would take it for a package).

# Links each header among `files` (absolute paths under PROJECT_SOURCE_DIR;
# other files are skipped) as `dest`/<path relative to the source root>.
# `dest` is rebuilt from scratch, so a removed header leaves no stale link.
function(tickwheel_link_headers dest)
  file(REMOVE_RECURSE "${dest}")
  foreach(_file IN LISTS ARGN)
    if(NOT _file MATCHES "\\.h$")
      continue()
    endif()
    file(RELATIVE_PATH _rel "${PROJECT_SOURCE_DIR}" "${_file}")
    get_filename_component(_dir "${dest}/${_rel}" DIRECTORY)
    file(MAKE_DIRECTORY "${_dir}")
    file(CREATE_LINK "${_file}" "${dest}/${_rel}" SYMBOLIC COPY_ON_ERROR)
  endforeach()
endfunction()

# Sets `out_var` to the headers that `roots` (paths relative to `source_dir`,
# such as timer/timer.h) include, directly or through each other, by
# "tickwheel/..." paths, roots included: what an installed public header
# needs beside it. A change to any of these files re-runs the configuration,
# so a new include in a public header is installed too.
function(tickwheel_header_closure out_var source_dir)
  set(_todo ${ARGN})
  set(_seen "")
  while(_todo)
    list(POP_FRONT _todo _header)
    if(_header IN_LIST _seen)
      continue()
    endif()
    if(NOT EXISTS "${source_dir}/${_header}")
      message(FATAL_ERROR "tickwheel: a public header includes \"tickwheel/${_header}\", "
                          "which is not in the source tree")
    endif()
    list(APPEND _seen "${_header}")
    set_property(DIRECTORY "${PROJECT_SOURCE_DIR}" APPEND PROPERTY
      CMAKE_CONFIGURE_DEPENDS "${source_dir}/${_header}")
    file(STRINGS "${source_dir}/${_header}" _includes
      REGEX "^[ \t]*#[ \t]*include[ \t]+\"tickwheel/[^\"]+\"")
    foreach(_line IN LISTS _includes)
      string(REGEX REPLACE ".*\"tickwheel/([^\"]+)\".*" "\\1" _included "${_line}")
      list(APPEND _todo "${_included}")
    endforeach()
  endwhile()
  list(SORT _seen)
  set(${out_var} "${_seen}" PARENT_SCOPE)
endfunction()
