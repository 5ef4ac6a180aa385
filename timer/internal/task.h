// timer/internal/task.h
// -----------------------------------------------------------------------------
// Internal to the facade: how a callable becomes the task of a timeout. The
// templates Timer's members instantiate per callable type, so they live in
// a header that timer/timer.h includes; users include timer/timer.h and
// never name anything here.
//
// A callable D goes into the timeout's TaskSlot (base/task_slot.h) inline
// when kFitsInline<D> (at most 16 bytes, 8-aligned, nothrow-movable), else
// boxed on the heap with the pointer inline; kInlineOps<D> or kBoxedOps<D>
// is its table. A periodic task's callable goes the same way into the slot
// of its PeriodicTask box, which the engine makes (base/periodic_task.h).
// Each table calls the callable with its Timeout, or without arguments if it
// takes none, and moves it out into a TimerTask for takeTask() without
// allocating or throwing.

#ifndef TICKWHEEL_TIMER_INTERNAL_TASK_H_
#define TICKWHEEL_TIMER_INTERNAL_TASK_H_

#include <concepts>
#include <functional>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "tickwheel/base/task_slot.h"
#include "tickwheel/timer/task.h"
#include "tickwheel/timer/timeout.h"

namespace tickwheel::internal {

template <typename>
inline constexpr bool kAlwaysFalse = false;

// The compile-time error for what newTimeout(), newTimeoutAt() and
// newPeriodic() cannot take as a task: the most likely fix, in one line.
template <typename F>
void TaskError() {
  using D = std::decay_t<F>;
  if constexpr ((std::invocable<D&, const Timeout&> ||
                 std::invocable<D&>)&&!std::constructible_from<D, F>) {
    static_assert(kAlwaysFalse<F>,
                  "tickwheel: this task cannot be copied (it holds a "
                  "move-only capture, such as a std::unique_ptr): pass it "
                  "with std::move(task)");
  } else {
    static_assert(kAlwaysFalse<F>,
                  "tickwheel: a timer task must be callable as "
                  "void(const tickwheel::Timeout&) or void()");
  }
}

template <typename T>
struct IsStdFunction : std::false_type {};
template <typename Sig>
struct IsStdFunction<std::function<Sig>> : std::true_type {};
template <typename T>
struct IsAnyInvocable : std::false_type {};
template <typename Sig>
struct IsAnyInvocable<absl::AnyInvocable<Sig>> : std::true_type {};

// True for a null (member) function pointer, an empty std::function or an
// empty AnyInvocable (a TimerTask among them): the nullable callables
// newTimeout() rejects. (A captureless lambda also converts to a pointer,
// but is never null.)
template <typename F>
bool IsEmptyCallable(const F& f) {
  if constexpr (std::is_pointer_v<F> || std::is_member_pointer_v<F>) {
    return f == nullptr;
  } else if constexpr (IsStdFunction<F>::value || IsAnyInvocable<F>::value) {
    return !f;
  } else {
    return false;
  }
}

// Calls a task with its Timeout, or without arguments if it takes none.
template <typename D>
void CallTask(D& d, const Timeout& timeout) {
  if constexpr (std::is_invocable_v<D&, const Timeout&>) {
    std::invoke(d, timeout);
  } else {
    std::invoke(d);
  }
}

// A TimerTask around any task, for takeTask(): a task that takes no
// arguments ignores its Timeout.
template <typename D>
struct AsTimerTask {
  D d;
  void operator()(const Timeout& t) { CallTask(d, t); }
};

// Stored inline in the slot: fits, is 8-aligned at most, and moves without
// throwing (so that takeTask() can move it into a TimerTask's own inline
// storage, which needs exactly that).
template <typename D>
inline constexpr bool kFitsInline =
    sizeof(D) <= TaskSlot::kInlineBytes &&
    alignof(D) <= alignof(void*) && std::is_nothrow_move_constructible_v<D>;

template <typename D>
D& InlineCallable(void* storage) {
  return *std::launder(static_cast<D*>(storage));
}
template <typename D>
D*& BoxedCallable(void* storage) {
  return *std::launder(static_cast<D**>(storage));
}

// A Timeout for the length of one call, lent its caller's reference to the
// node: it neither takes one nor drops one (it adopts the reference and
// disowns it when it goes), whether the call returns or throws.
class LentTimeout {
 public:
  LentTimeout(TimeoutNode* node, SharedTimerState* shared)
      : timeout_(TimeoutAccess::Adopt(node, shared)) {}
  LentTimeout(const LentTimeout&) = delete;
  LentTimeout& operator=(const LentTimeout&) = delete;
  ~LentTimeout() { TimeoutAccess::Disown(timeout_); }
  const Timeout& get() const { return timeout_; }

 private:
  Timeout timeout_;
};

// TaskOps::run for a callable at `d`: one function per callable type, so
// that the engine reaches the task in one indirect call.
template <typename D>
void RunWithLentHandle(D& d, TimeoutNode* node, SharedTimerState* shared) {
  const LentTimeout lent(node, shared);
  CallTask(d, lent.get());
}

template <typename D>
inline constexpr TaskOps kInlineOps = {
    [](void* s, TimeoutNode* node, SharedTimerState* shared) {
      RunWithLentHandle(InlineCallable<D>(s), node, shared);
    },
    [](void* s, const Timeout& t) { CallTask(InlineCallable<D>(s), t); },
    std::is_trivially_destructible_v<D>
        ? nullptr
        : +[](void* s) noexcept { std::destroy_at(&InlineCallable<D>(s)); },
    [](void* s, void* task) noexcept {
      // Stored inside the TimerTask (it fits, and its move is noexcept): no
      // allocation, nothing that can throw.
      D& d = InlineCallable<D>(s);
      if constexpr (std::is_invocable_v<D&, const Timeout&>) {
        *static_cast<TimerTask*>(task) = TimerTask(std::move(d));
      } else {
        *static_cast<TimerTask*>(task) =
            TimerTask(AsTimerTask<D>{std::move(d)});
      }
      std::destroy_at(&d);
    },
};

// What takeTask() hands out for a boxed callable: the box itself, so that
// the callable is never moved (8 bytes, stored inside the TimerTask).
template <typename D>
struct BoxedCall {
  std::unique_ptr<D> d;
  void operator()(const Timeout& t) { CallTask(*d, t); }
};

template <typename D>
inline constexpr TaskOps kBoxedOps = {
    [](void* s, TimeoutNode* node, SharedTimerState* shared) {
      RunWithLentHandle(*BoxedCallable<D>(s), node, shared);
    },
    [](void* s, const Timeout& t) { CallTask(*BoxedCallable<D>(s), t); },
    [](void* s) noexcept { delete BoxedCallable<D>(s); },
    [](void* s, void* task) noexcept {
      std::unique_ptr<D> d(BoxedCallable<D>(s));
      if constexpr (std::is_same_v<D, TimerTask>) {
        *static_cast<TimerTask*>(task) = std::move(*d);  // noexcept
      } else {
        *static_cast<TimerTask*>(task) = TimerTask(BoxedCall<D>{std::move(d)});
      }
    },
};

// Constructs `f` (decayed) into the empty `slot`, inline or boxed. An empty
// `f` (IsEmptyCallable) leaves the slot empty. If constructing the copy or
// the box throws, the slot stays empty and the exception propagates.
template <typename F>
void EmplaceInto(TaskSlot& slot, F&& f) {
  using D = std::decay_t<F>;
  if (IsEmptyCallable<D>(f)) return;
  if constexpr (kFitsInline<D>) {
    ::new (slot.storage()) D(std::forward<F>(f));
    slot.Install(&kInlineOps<D>);
  } else {
    D* boxed = new D(std::forward<F>(f));
    ::new (slot.storage()) D*(boxed);
    slot.Install(&kBoxedOps<D>);
  }
}

// The TaskEmplacer (base/task_slot.h) for a task of type F, one-shot or
// periodic alike: `callable` points at the caller's F.
template <typename F>
void EmplaceTask(TaskSlot& slot, void* callable) {
  using Object = std::remove_reference_t<F>;  // const for an lvalue const
  EmplaceInto(slot, std::forward<F>(*static_cast<Object*>(callable)));
}

// Moves the callable out of `slot` as a TimerTask (empty if none). Never
// throws.
inline TimerTask TakeTask(TaskSlot& slot) noexcept {
  TimerTask task;
  slot.TakeInto(&task);
  return task;
}

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_TIMER_INTERNAL_TASK_H_
