// IntrusiveList (timer/idle/intrusive_list.h), the idle tracker's registry:
// linking is idempotent, unlinking an unlinked object does nothing, order is
// most recent first, and objects can be unlinked from anywhere in the list.

#include "tickwheel/timer/idle/intrusive_list.h"

#include <vector>

#include <gtest/gtest.h>

namespace tickwheel::internal {
namespace {

struct Item : IntrusiveListNode {
  explicit Item(int v) : value(v) {}
  int value;
};

std::vector<int> Values(const IntrusiveList<Item>& list) {
  std::vector<int> out;
  list.ForEach([&](Item* i) { out.push_back(i->value); });
  return out;
}

TEST(IdleIntrusiveListTest, PushFrontIsMostRecentFirstAndIdempotent) {
  IntrusiveList<Item> list;
  Item a(1), b(2), c(3);
  EXPECT_TRUE(list.empty());
  EXPECT_EQ(list.front(), nullptr);
  list.PushFront(&a);
  list.PushFront(&b);
  list.PushFront(&c);
  list.PushFront(&b);  // linked already: stays where it is
  EXPECT_EQ(Values(list), (std::vector<int>{3, 2, 1}));
  EXPECT_EQ(list.front(), &c);
  EXPECT_TRUE(IntrusiveList<Item>::Linked(&a));
  while (Item* i = list.front()) list.Remove(i);
}

TEST(IdleIntrusiveListTest, RemoveFromAnyPositionAndTwice) {
  for (int victim = 0; victim < 3; ++victim) {
    IntrusiveList<Item> list;
    Item items[] = {Item(0), Item(1), Item(2)};
    for (Item& i : items) list.PushFront(&i);
    list.Remove(&items[victim]);
    list.Remove(&items[victim]);  // not linked any more: nothing
    EXPECT_FALSE(IntrusiveList<Item>::Linked(&items[victim]));
    std::vector<int> expected;
    for (int v = 2; v >= 0; --v) {
      if (v != victim) expected.push_back(v);
    }
    EXPECT_EQ(Values(list), expected) << "victim " << victim;
    // Relinked after removal: at the front again.
    list.PushFront(&items[victim]);
    EXPECT_EQ(list.front(), &items[victim]);
    while (Item* i = list.front()) list.Remove(i);
    EXPECT_TRUE(list.empty());
  }
}

}  // namespace
}  // namespace tickwheel::internal
