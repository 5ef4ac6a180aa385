// timer/task_slot.h
// -----------------------------------------------------------------------------
// Internal. The task inside a TimeoutNode: a move-only callable
// `void(const Timeout&)` erased into 24 bytes, where TimerTask
// (absl::AnyInvocable) takes 32.
//
// Why not keep a TimerTask in the node: a pending timeout's budget is 64
// bytes with its 8-byte wheel slot (issue 6, target 3). AnyInvocable keeps
// two function pointers and 16 bytes of 16-aligned storage; this keeps one
// pointer to a per-type table and 16 bytes of 8-aligned storage, which makes
// the node 48 bytes. The table costs one dependent load per call, from a line
// that stays hot while many timeouts of one type expire.
//
// What goes inline: a callable of at most 16 bytes and at most 8-byte
// alignment whose move constructor does not throw (the usual lambda
// capturing a pointer or two, a shared_ptr, a function pointer). Anything
// else is moved into its own heap block, and so is a TimerTask handed over
// as one (its type is already erased; one allocation of 32 bytes).
//
// Take() never throws: an inline callable moves into a TimerTask's own
// inline storage (it fits, and its move is noexcept), and a boxed one is
// handed over by its pointer, never moved. So a task whose move may throw
// cannot be lost on its way out of a stopped timeout.
//
// Lifecycle: Emplace() into an empty slot; operator() any number of times;
// Reset() destroys the callable, Take() moves it out as a TimerTask. Both
// leave the slot empty, and the slot is marked empty before the callable's
// destructor runs, so a destructor that reaches the slot again finds it
// empty.
//
// Thread-safety: none; TimeoutNode's state machine decides which thread may
// touch the slot (timer/timeout_node.h).

#ifndef TICKWHEEL_TIMER_TASK_SLOT_H_
#define TICKWHEEL_TIMER_TASK_SLOT_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "absl/functional/any_invocable.h"

namespace tickwheel {

class Timeout;
// What a timer runs. Users may pass any callable with this signature to
// Timer::newTimeout(); a TimerTask is what Timeout::takeTask() gives back.
using TimerTask = absl::AnyInvocable<void(const Timeout&)>;

namespace internal {

// A callable newTimeout() accepts in place of a TimerTask: invocable with a
// const Timeout&, and constructible from what was passed.
template <typename F>
inline constexpr bool kIsTaskCallable =
    !std::is_same_v<std::decay_t<F>, TimerTask> &&
    std::is_invocable_v<std::decay_t<F>&, const Timeout&> &&
    std::is_constructible_v<std::decay_t<F>, F&&>;

template <typename T>
struct IsStdFunction : std::false_type {};
template <typename Sig>
struct IsStdFunction<std::function<Sig>> : std::true_type {};

// True for a null (member) function pointer, an empty std::function or an
// empty TimerTask: the nullable callables newTimeout() rejects. (A
// captureless lambda also converts to a pointer, but is never null.)
template <typename F>
bool IsEmptyCallable(const F& f) {
  if constexpr (std::is_pointer_v<F> || std::is_member_pointer_v<F>) {
    return f == nullptr;
  } else if constexpr (IsStdFunction<F>::value ||
                       std::is_same_v<F, TimerTask>) {
    return !f;
  } else {
    return false;
  }
}

class TaskSlot {
 public:
  static constexpr size_t kInlineBytes = 16;
  template <typename D>
  static constexpr bool kFitsInline =
      sizeof(D) <= kInlineBytes && alignof(D) <= alignof(void*) &&
      std::is_nothrow_move_constructible_v<D>;

  TaskSlot() = default;
  ~TaskSlot() { Reset(); }
  TaskSlot(const TaskSlot&) = delete;
  TaskSlot& operator=(const TaskSlot&) = delete;

  explicit operator bool() const { return ops_ != nullptr; }

  // Stores `f` (decayed). Precondition: the slot is empty. An empty `f`
  // (IsEmptyCallable) leaves the slot empty. If constructing the copy or
  // the heap block throws, the slot stays empty and the exception propagates.
  template <typename F>
  void Emplace(F&& f) {
    using D = std::decay_t<F>;
    if (IsEmptyCallable<D>(f)) return;
    if constexpr (kFitsInline<D>) {
      ::new (static_cast<void*>(storage_)) D(std::forward<F>(f));
      ops_ = &kInlineOps<D>;
    } else {
      D* boxed = new D(std::forward<F>(f));
      ::new (static_cast<void*>(storage_)) D*(boxed);
      ops_ = &kBoxedOps<D>;
    }
  }

  // Runs the callable. Precondition: not empty.
  void operator()(const Timeout& timeout) { ops_->invoke(storage_, timeout); }

  // Destroys the callable, if any. No call at all for a trivially
  // destructible inline callable (a lambda capturing pointers or integers):
  // every cancel() and expiry comes through here.
  void Reset() noexcept {
    if (const Ops* ops = ops_) {
      ops_ = nullptr;
      if (ops->destroy != nullptr) ops->destroy(storage_);
    }
  }

  // Moves the callable out (an empty TimerTask if none). Never throws (see
  // the file comment).
  TimerTask Take() noexcept {
    const Ops* ops = ops_;
    if (ops == nullptr) return nullptr;
    ops_ = nullptr;
    return ops->take(storage_);
  }

 private:
  struct Ops {
    void (*invoke)(void* storage, const Timeout& timeout);
    void (*destroy)(void* storage) noexcept;  // nullptr: nothing to do
    // Moves the callable into a TimerTask and destroys what is left.
    TimerTask (*take)(void* storage) noexcept;
  };

  template <typename D>
  static D& Inline(void* storage) {
    return *std::launder(static_cast<D*>(storage));
  }
  template <typename D>
  static D*& Boxed(void* storage) {
    return *std::launder(static_cast<D**>(storage));
  }

  template <typename D>
  static constexpr Ops kInlineOps = {
      [](void* s, const Timeout& t) { std::invoke(Inline<D>(s), t); },
      std::is_trivially_destructible_v<D>
          ? nullptr
          : +[](void* s) noexcept { std::destroy_at(&Inline<D>(s)); },
      [](void* s) noexcept {
        // Stored inside the TimerTask (fits, noexcept move): no allocation.
        static_assert(sizeof(D) <= sizeof(void*) * 2 &&
                      std::is_nothrow_move_constructible_v<D>);
        D& d = Inline<D>(s);
        TimerTask task(std::move(d));
        std::destroy_at(&d);
        return task;
      },
  };
  // What Take() hands out for a boxed callable: the box itself, so that the
  // callable is never moved (8 bytes, stored inside the TimerTask).
  template <typename D>
  struct BoxedCall {
    std::unique_ptr<D> d;
    void operator()(const Timeout& t) { std::invoke(*d, t); }
  };
  template <typename D>
  static constexpr Ops kBoxedOps = {
      [](void* s, const Timeout& t) { std::invoke(*Boxed<D>(s), t); },
      [](void* s) noexcept { delete Boxed<D>(s); },
      [](void* s) noexcept {
        std::unique_ptr<D> d(Boxed<D>(s));
        if constexpr (std::is_same_v<D, TimerTask>) {
          return std::move(*d);  // noexcept; the box goes
        } else {
          return TimerTask(BoxedCall<D>{std::move(d)});
        }
      },
  };

  const Ops* ops_ = nullptr;
  alignas(void*) unsigned char storage_[kInlineBytes];
};

static_assert(sizeof(TaskSlot) == 24, "a pointer and 16 bytes of storage");

}  // namespace internal
}  // namespace tickwheel

#endif  // TICKWHEEL_TIMER_TASK_SLOT_H_
