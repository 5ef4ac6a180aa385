#include "tools/bench/asio_bench.h"

#include <unistd.h>

#include <future>

#include "tools/bench/proc_stats.h"

namespace tickwheel::bench {

AsioBench::AsioBench(const BenchTimerOptions& /*options: no tick*/)
    : work_(boost::asio::make_work_guard(io_)) {
  // Shared, so that the promise outlives set_value() on the other thread.
  auto started = std::make_shared<std::promise<void>>();
  std::future<void> ready = started->get_future();
  thread_ = std::thread([this, started] {
    io_tid_.store(static_cast<int>(gettid()), std::memory_order_relaxed);
    started->set_value();
    io_.run();
  });
  ready.wait();
}

AsioBench::~AsioBench() {
  Stop();
  // io_'s destructor destroys the waits still armed, and with them the State
  // objects (and tasks) that only they referenced.
}

void AsioBench::Arm(const Handle& state,
                    std::chrono::steady_clock::time_point deadline) {
  state->timer.emplace(io_, deadline);
  Add(pending_, 1);
  state->timer->async_wait(
      [this, state](const boost::system::error_code& ec) {
        if (!ec) {
          Add(pending_, -1);
          Add(fired_, 1);
          state->task();
          state->task = nullptr;
        }
        state->timer.reset();  // on the io thread, where it belongs
      });
}

bool AsioBench::Cancel(const Handle& h) {
  if (h == nullptr) return false;
  boost::asio::post(io_, [this, h] {
    if (h->timer && h->timer->cancel() > 0) {
      Add(pending_, -1);
      Add(cancelled_, 1);
      h->task = nullptr;  // captures die at cancellation
    }
  });
  return true;
}

int64_t AsioBench::Stop() {
  if (stopped_) return unprocessed_;
  stopped_ = true;
  // Requests are handled in order on the one io thread: once this handler
  // runs, every earlier Schedule/Cancel has been applied.
  auto count = std::make_shared<std::promise<int64_t>>();
  std::future<int64_t> result = count->get_future();
  boost::asio::post(io_, [this, count] {
    count->set_value(pending_.load(std::memory_order_relaxed));
  });
  unprocessed_ = result.get();
  work_.reset();
  io_.stop();
  thread_.join();
  return unprocessed_;
}

int64_t AsioBench::Wakeups() {
  return ThreadVoluntarySwitches(io_tid_.load(std::memory_order_relaxed));
}

CounterMap AsioBench::Counters() {
  return {
      {"io_thread_voluntary_switches", static_cast<double>(Wakeups())},
      {"fired", static_cast<double>(fired_.load(std::memory_order_relaxed))},
      {"cancelled",
       static_cast<double>(cancelled_.load(std::memory_order_relaxed))},
  };
}

}  // namespace tickwheel::bench
