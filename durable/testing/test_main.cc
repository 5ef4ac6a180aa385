// The main() of the durable timer's tests: a process spawned with
// TICKWHEEL_DURABLE_ROLE runs that role (durable/testing/child_process.h);
// otherwise it runs the tests.

#include <optional>

#include <gtest/gtest.h>

#include "tickwheel/durable/testing/child_process.h"

int main(int argc, char** argv) {
  if (std::optional<int> rc = tickwheel::durable::testing::RunRoleIfAsked()) {
    return *rc;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
