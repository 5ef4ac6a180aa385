// durable/testing/redis_test.h
// -----------------------------------------------------------------------------
// Test-only. RedisTest: a GoogleTest fixture whose every test starts a
// redis-server of its own (redis_server.h) and stops it, by its pid, when the
// test ends. A test that cannot start one fails in SetUp().

#ifndef TICKWHEEL_DURABLE_TESTING_REDIS_TEST_H_
#define TICKWHEEL_DURABLE_TESTING_REDIS_TEST_H_

#include <memory>
#include <utility>

#include <gtest/gtest.h>

#include "absl/status/statusor.h"
#include "tickwheel/durable/testing/redis_server.h"

namespace tickwheel::durable::testing {

class RedisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<RedisServer>> r = RedisServer::Start();
    ASSERT_TRUE(r.ok()) << r.status();
    redis_ = *std::move(r);
  }

  std::unique_ptr<RedisServer> redis_;
};

}  // namespace tickwheel::durable::testing

#endif  // TICKWHEEL_DURABLE_TESTING_REDIS_TEST_H_
