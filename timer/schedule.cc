// The errors every timer type gives for arguments it refuses.

#include <fmt/format.h>

#include "tickwheel/timer/internal/schedule.h"

namespace tickwheel::internal {

absl::Status EmptyTaskError() {
  return absl::InvalidArgumentError(
      "newTimeout: the task is empty; pass a callable");
}

absl::Status PeriodError(absl::Duration period) {
  return absl::InvalidArgumentError(
      fmt::format("newPeriodic: the period must be > 0 and finite, got {}",
                  absl::FormatDuration(period)));
}

absl::Status NanError(const char* call, const char* what) {
  return absl::InvalidArgumentError(
      fmt::format("{}: the {} is NaN; pass a number of seconds (or of any "
                  "std::chrono period)",
                  call, what));
}

}  // namespace tickwheel::internal
