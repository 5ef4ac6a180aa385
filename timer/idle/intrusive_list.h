// timer/idle/intrusive_list.h
// -----------------------------------------------------------------------------
// Internal. IntrusiveList<T>: a doubly linked list threaded through the
// objects it holds, for IdleCore's registry of entries. Linking and unlinking
// are O(1) and allocate nothing, and an object can be unlinked knowing only
// its address.
//
// T derives from IntrusiveListNode, which carries the links. The links belong
// to the list: they are private to the node and only IntrusiveList reads or
// writes them, so the object that carries them knows neither which list holds
// it nor which lock guards that list. An object is in at most one list at a
// time.
//
// Thread-safety: thread-compatible. A list and the links of the objects in it
// are guarded together by whatever guards the list (IdleCore::mu_ for the
// registry); annotate the list, not the objects.

#ifndef TICKWHEEL_TIMER_IDLE_INTRUSIVE_LIST_H_
#define TICKWHEEL_TIMER_IDLE_INTRUSIVE_LIST_H_

#include <type_traits>

namespace tickwheel::internal {

template <typename T>
class IntrusiveList;

class IntrusiveListNode {
 public:
  IntrusiveListNode() = default;
  IntrusiveListNode(const IntrusiveListNode&) = delete;
  IntrusiveListNode& operator=(const IntrusiveListNode&) = delete;

 protected:
  ~IntrusiveListNode() = default;

 private:
  template <typename T>
  friend class IntrusiveList;
  IntrusiveListNode* prev_ = nullptr;
  IntrusiveListNode* next_ = nullptr;  // null iff not in a list
};

template <typename T>
class IntrusiveList {
 public:
  IntrusiveList() { head_.prev_ = head_.next_ = &head_; }
  IntrusiveList(const IntrusiveList&) = delete;
  IntrusiveList& operator=(const IntrusiveList&) = delete;

  bool empty() const { return head_.next_ == &head_; }

  // Whether `t` is in a list (this one, by the one-list rule).
  static bool Linked(const T* t) { return Node(t)->next_ != nullptr; }

  // Links `t` at the front; nothing if it is linked already.
  void PushFront(T* t) {
    IntrusiveListNode* n = Node(t);
    if (n->next_ != nullptr) return;
    n->prev_ = &head_;
    n->next_ = head_.next_;
    head_.next_->prev_ = n;
    head_.next_ = n;
  }

  // Unlinks `t`; nothing if it is not linked.
  void Remove(T* t) {
    IntrusiveListNode* n = Node(t);
    if (n->next_ == nullptr) return;
    n->prev_->next_ = n->next_;
    n->next_->prev_ = n->prev_;
    n->prev_ = n->next_ = nullptr;
  }

  // The first object; null when empty.
  T* front() const { return empty() ? nullptr : Object(head_.next_); }

  // Calls f(T*) for each object, front to back. f must not link or unlink.
  template <typename F>
  void ForEach(F&& f) const {
    for (IntrusiveListNode* n = head_.next_; n != &head_; n = n->next_) {
      f(Object(n));
    }
  }

 private:
  static_assert(std::is_base_of_v<IntrusiveListNode, T>,
                "IntrusiveList<T>: T derives from IntrusiveListNode");

  // The sentinel: the list is circular through it.
  struct Head : IntrusiveListNode {};

  static IntrusiveListNode* Node(const T* t) {
    return const_cast<IntrusiveListNode*>(
        static_cast<const IntrusiveListNode*>(t));
  }
  static T* Object(IntrusiveListNode* n) { return static_cast<T*>(n); }

  Head head_;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_TIMER_IDLE_INTRUSIVE_LIST_H_
