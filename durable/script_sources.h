// durable/script_sources.h
// -----------------------------------------------------------------------------
// Internal. Lua sources that durable/scripts.cc assembles into scripts and
// that live in files of their own: the helpers every shard script opens with
// (durable/scripts_prelude.cc), and the dead-letter helpers and the scripts
// of Get() and of the dead-letter calls (durable/scripts_admin.cc).
// durable/scripts.h documents what each script takes and answers.

#ifndef TICKWHEEL_DURABLE_SCRIPT_SOURCES_H_
#define TICKWHEEL_DURABLE_SCRIPT_SOURCES_H_

#include <string_view>

namespace tickwheel::durable::internal::lua {

// fail(), int_arg(), id_arg(), now_us(), parse(), record(), tuples(),
// held(), clamp_us(), requeue(): the shard scripts' shared helpers.
extern const std::string_view kPrelude;
// purge_dead(), trim_dead(), bury() and limits(), for the scripts that need
// them; they use kPrelude's helpers.
extern const std::string_view kDeadHelpers;
extern const std::string_view kGet;
extern const std::string_view kDeadList;
extern const std::string_view kDeadOp;

}  // namespace tickwheel::durable::internal::lua

#endif  // TICKWHEEL_DURABLE_SCRIPT_SOURCES_H_
