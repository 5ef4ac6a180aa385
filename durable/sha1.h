// durable/sha1.h
// -----------------------------------------------------------------------------
// Internal. SHA-1 as lowercase hex: the name Redis gives a script (EVALSHA,
// SCRIPT LOAD), computed here so that commands can name a script without a
// round trip. Not for security.

#ifndef TICKWHEEL_DURABLE_SHA1_H_
#define TICKWHEEL_DURABLE_SHA1_H_

#include <string>
#include <string_view>

namespace tickwheel::durable::internal {

// The 40 hex digits of SHA-1(data).
std::string Sha1Hex(std::string_view data);

}  // namespace tickwheel::durable::internal

#endif  // TICKWHEEL_DURABLE_SHA1_H_
