# tickwheel's version comes from timer/timer.h, the one place it is written:
# the TICKWHEEL_VERSION_MAJOR, _MINOR and _PATCH macros, and the
# TICKWHEEL_VERSION string, which must agree with them.

# Sets `out_var` to "MAJOR.MINOR.PATCH" as read from `header`; stops the
# configuration when a macro is missing or the string disagrees.
function(tickwheel_read_version header out_var)
  file(STRINGS "${header}" _lines REGEX "^#define TICKWHEEL_VERSION")
  foreach(_part MAJOR MINOR PATCH)
    set(_${_part} "")
    foreach(_line IN LISTS _lines)
      if(_line MATCHES "^#define TICKWHEEL_VERSION_${_part} +([0-9]+)$")
        set(_${_part} "${CMAKE_MATCH_1}")
      endif()
    endforeach()
    if(_${_part} STREQUAL "")
      message(FATAL_ERROR "${header}: no #define TICKWHEEL_VERSION_${_part} <number>")
    endif()
  endforeach()
  set(_numbers "${_MAJOR}.${_MINOR}.${_PATCH}")
  set(_string "")
  foreach(_line IN LISTS _lines)
    if(_line MATCHES "^#define TICKWHEEL_VERSION +\"([^\"]*)\"$")
      set(_string "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  if(NOT _string STREQUAL _numbers)
    message(FATAL_ERROR "${header}: TICKWHEEL_VERSION \"${_string}\" disagrees "
                        "with TICKWHEEL_VERSION_MAJOR/_MINOR/_PATCH (${_numbers})")
  endif()
  set(${out_var} "${_numbers}" PARENT_SCOPE)
endfunction()
