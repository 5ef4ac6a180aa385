// Tests of the intrusive MPSC queue: FIFO order, reuse of popped nodes, and
// many producers against one consumer (run under TSan by the CI).

#include "tickwheel/worker/mpsc_queue.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace tickwheel::internal {
namespace {

struct Item {
  int producer = -1;
  int seq = -1;
  std::atomic<Item*> link{nullptr};
};

using Queue = MpscQueue<Item, &Item::link>;

TEST(MpscQueueTest, EmptyQueuePopsNothing) {
  Queue q;
  EXPECT_TRUE(q.Empty());
  EXPECT_EQ(q.Pop(), nullptr);
}

TEST(MpscQueueTest, SingleThreadFifo) {
  Queue q;
  std::vector<Item> items(10);
  for (int i = 0; i < 10; ++i) {
    items[i].seq = i;
    q.Push(&items[i]);
  }
  EXPECT_FALSE(q.Empty());
  for (int i = 0; i < 10; ++i) {
    Item* it = q.Pop();
    ASSERT_NE(it, nullptr);
    EXPECT_EQ(it->seq, i);
  }
  EXPECT_EQ(q.Pop(), nullptr);
  EXPECT_TRUE(q.Empty());
}

TEST(MpscQueueTest, PoppedNodesCanBePushedAgain) {
  Queue q;
  Item a, b;
  for (int round = 0; round < 5; ++round) {
    q.Push(&a);
    EXPECT_EQ(q.Pop(), &a);
    EXPECT_EQ(q.Pop(), nullptr);
    q.Push(&b);
    q.Push(&a);
    EXPECT_EQ(q.Pop(), &b);
    EXPECT_EQ(q.Pop(), &a);
    EXPECT_TRUE(q.Empty());
  }
}

TEST(MpscQueueTest, ManyProducersOneConsumerKeepPerProducerOrder) {
  constexpr int kProducers = 4;
  constexpr int kPerProducer = 20000;
  Queue q;
  std::vector<std::unique_ptr<Item[]>> items;
  for (int p = 0; p < kProducers; ++p) {
    items.push_back(std::make_unique<Item[]>(kPerProducer));
  }
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        items[p][i].producer = p;
        items[p][i].seq = i;
        q.Push(&items[p][i]);
      }
    });
  }
  std::vector<int> next(kProducers, 0);
  int popped = 0;
  while (popped < kProducers * kPerProducer) {
    Item* it = q.Pop();
    if (it == nullptr) {
      std::this_thread::yield();
      continue;
    }
    ASSERT_EQ(it->seq, next[it->producer]) << "producer " << it->producer;
    ++next[it->producer];
    ++popped;
  }
  for (auto& t : producers) t.join();
  EXPECT_EQ(q.Pop(), nullptr);
  EXPECT_TRUE(q.Empty());
}

}  // namespace
}  // namespace tickwheel::internal
