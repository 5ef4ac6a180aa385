// tests/model/fuzz_compare.h
// -----------------------------------------------------------------------------
// The comparison of the real timer (tests/model/fuzz_real_side.h) with the
// reference model (tests/model/timer_model.h) after an operation: each
// returns "" when they agree, else what differs.

#ifndef TICKWHEEL_TESTS_MODEL_FUZZ_COMPARE_H_
#define TICKWHEEL_TESTS_MODEL_FUZZ_COMPARE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tests/model/fuzz_real_side.h"
#include "tests/model/timer_model.h"

namespace tickwheel::model {

// Everything observable: the number of attempts, every task event in order,
// pendingTimeouts(), and for every task whether its captures are alive,
// isExpired(), isCancelled(), isPeriodic() and deadline(); and the task
// exceptions logged since `throws_before` (TaskThrowsLogged()).
std::string Compare(const TimerModel& model, RealSide& real,
                    int64_t throws_before);

// stop()'s result: OK from the test thread, the same ids as the model's, and
// in deadline order (the order among equal deadlines is not specified).
std::string CompareStop(const TimerModel& model, Code code,
                        const std::vector<int64_t>& real_ids,
                        const std::vector<int64_t>& model_ids);

}  // namespace tickwheel::model

#endif  // TICKWHEEL_TESTS_MODEL_FUZZ_COMPARE_H_
