// timer/task.h
// -----------------------------------------------------------------------------
// What Timer::newTimeout() accepts as a task, and how a callable becomes the
// task of a timeout. Include timer/timer.h, which includes this file.
//
// A task is any callable invocable as `void(const Timeout&)` (its result, if
// any, is ignored): a lambda, a function or function pointer, a
// std::function, a TimerTask. Pass the callable itself rather than a
// TimerTask made from it: a callable of at most 16 bytes and 8-byte
// alignment whose move constructor does not throw is stored inside the
// timeout's own 48-byte cell; a TimerTask (whose type is erased already) and
// other callables take one more allocation.

#ifndef TICKWHEEL_TIMER_TASK_H_
#define TICKWHEEL_TIMER_TASK_H_

#if __cplusplus < 202002L
#error "tickwheel needs C++20: compile with -std=c++20 (or /std:c++20)"
#endif

#include <functional>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "tickwheel/timer/timeout.h"
#include "tickwheel/worker/task_slot.h"

namespace tickwheel {
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

// Stored inline in the slot: fits, is 8-aligned at most, and moves without
// throwing (so that takeTask() can move it into a TimerTask's own inline
// storage, which needs exactly that).
template <typename D>
inline constexpr bool kFitsInline = sizeof(D) <= TaskSlot::kInlineBytes &&
                                    alignof(D) <= alignof(void*) &&
                                    std::is_nothrow_move_constructible_v<D>;

// Calls `d` with the handle of the timeout of `node`, lent the worker's
// reference for the call (no reference count traffic).
template <typename D>
void CallWithTimeout(D& d, TimeoutNode* node, SharedTimerState* shared) {
  Timeout timeout = TimeoutAccess::Adopt(node, shared);
  struct GiveBack {
    Timeout& t;
    ~GiveBack() { TimeoutAccess::Disown(t); }
  } give_back{timeout};
  std::invoke(d, std::as_const(timeout));
}

template <typename D>
D& InlineCallable(void* storage) {
  return *std::launder(static_cast<D*>(storage));
}
template <typename D>
D*& BoxedCallable(void* storage) {
  return *std::launder(static_cast<D**>(storage));
}

template <typename D>
inline constexpr TaskOps kInlineOps = {
    [](void* s, TimeoutNode* node, SharedTimerState* shared) {
      CallWithTimeout(InlineCallable<D>(s), node, shared);
    },
    std::is_trivially_destructible_v<D>
        ? nullptr
        : +[](void* s) noexcept { std::destroy_at(&InlineCallable<D>(s)); },
    [](void* s, void* task) noexcept {
      // Stored inside the TimerTask (it fits, and its move is noexcept): no
      // allocation, nothing that can throw.
      D& d = InlineCallable<D>(s);
      *static_cast<TimerTask*>(task) = TimerTask(std::move(d));
      std::destroy_at(&d);
    },
};

// What takeTask() hands out for a boxed callable: the box itself, so that
// the callable is never moved (8 bytes, stored inside the TimerTask).
template <typename D>
struct BoxedCall {
  std::unique_ptr<D> d;
  void operator()(const Timeout& t) { std::invoke(*d, t); }
};

template <typename D>
inline constexpr TaskOps kBoxedOps = {
    [](void* s, TimeoutNode* node, SharedTimerState* shared) {
      CallWithTimeout(*BoxedCallable<D>(s), node, shared);
    },
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

// The TaskEmplacer for a callable of type F (worker/task_slot.h).
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

}  // namespace internal
}  // namespace tickwheel

#endif  // TICKWHEEL_TIMER_TASK_H_
