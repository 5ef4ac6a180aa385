// timer/task.h
// -----------------------------------------------------------------------------
// What Timer::newTimeout(), newTimeoutAt() and newPeriodic() accept as a task,
// and how a callable becomes the task of a timeout. Include timer/timer.h,
// which includes this file.
//
// A task is any callable invocable as `void(const Timeout&)` or as `void()`
// (a result, if any, is ignored): a lambda, a function or function pointer,
// a std::function, a TimerTask. The TimerTaskCallable concept names exactly
// that; anything else is refused at compile time with a message that says
// so. A task that takes its Timeout can, e.g., cancel its own periodic
// timeout or look at its deadline.
//
// Pass the callable itself rather than a TimerTask made from it: a callable
// of at most 16 bytes and 8-byte alignment whose move constructor does not
// throw is stored inside the timeout's own 64-byte cell; a TimerTask (whose
// type is erased already) and other callables take one more allocation, and
// so does every periodic task (one, for all its runs).

#ifndef TICKWHEEL_TIMER_TASK_H_
#define TICKWHEEL_TIMER_TASK_H_

#if __cplusplus < 202002L
#error "tickwheel needs C++20: compile with -std=c++20 (or /std:c++20)"
#endif

#include <atomic>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "tickwheel/base/task_slot.h"
#include "tickwheel/timer/timeout.h"

namespace tickwheel {

// A callable that can be a timer task: invocable as void(const Timeout&) or
// void(), and constructible from what is passed (copied from an lvalue,
// moved from an rvalue).
template <typename F>
concept TimerTaskCallable = std::constructible_from<std::decay_t<F>, F> &&
    (std::invocable<std::decay_t<F>&, const Timeout&> ||
     std::invocable<std::decay_t<F>&>);

namespace internal {

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

// Calls `d` with the handle of the timeout of `node`, lent the worker's
// reference for the call (no reference count traffic).
template <typename D>
void CallWithTimeout(D& d, TimeoutNode* node, SharedTimerState* shared) {
  Timeout timeout = TimeoutAccess::Adopt(node, shared);
  struct GiveBack {
    Timeout& t;
    ~GiveBack() { TimeoutAccess::Disown(t); }
  } give_back{timeout};
  CallTask(d, std::as_const(timeout));
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
      if constexpr (std::is_invocable_v<D&, const Timeout&>) {
        *static_cast<TimerTask*>(task) = TimerTask(std::move(d));
      } else {
        *static_cast<TimerTask*>(task) =
            TimerTask(AsTimerTask<D>{std::move(d)});
      }
      std::destroy_at(&d);
    },
    nullptr,
    nullptr,
    nullptr,
    nullptr,
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
    nullptr,
    nullptr,
    nullptr,
    nullptr,
};

// A periodic task's callable with its period, shared by the slot and the
// runs in progress (reference-counted; the last reference destroys it).
template <typename D>
struct PeriodicBox {
  std::atomic<int32_t> refs{1};
  int64_t period_nanos;
  D d;

  PeriodicBox* Ref() {
    refs.fetch_add(1, std::memory_order_relaxed);
    return this;
  }
  void Unref() {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
};

// What takeTask() hands out for a periodic timeout: the slot's reference.
template <typename D>
struct PeriodicCall {
  struct Drop {
    void operator()(PeriodicBox<D>* box) const { box->Unref(); }
  };
  std::unique_ptr<PeriodicBox<D>, Drop> box;
  void operator()(const Timeout& t) { CallTask(box->d, t); }
};

template <typename D>
inline constexpr TaskOps kPeriodicOps = {
    [](void* s, TimeoutNode* node, SharedTimerState* shared) {
      CallWithTimeout(BoxedCallable<PeriodicBox<D>>(s)->d, node, shared);
    },
    [](void* s) noexcept { BoxedCallable<PeriodicBox<D>>(s)->Unref(); },
    [](void* s, void* task) noexcept {
      *static_cast<TimerTask*>(task) =
          TimerTask(PeriodicCall<D>{{BoxedCallable<PeriodicBox<D>>(s), {}}});
    },
    [](const void* s) {
      return (*std::launder(static_cast<PeriodicBox<D>* const*>(s)))
          ->period_nanos;
    },
    [](void* s) -> void* { return BoxedCallable<PeriodicBox<D>>(s)->Ref(); },
    [](void* box, TimeoutNode* node, SharedTimerState* shared) {
      CallWithTimeout(static_cast<PeriodicBox<D>*>(box)->d, node, shared);
    },
    [](void* box) noexcept { static_cast<PeriodicBox<D>*>(box)->Unref(); },
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

// The TaskEmplacer for a one-shot task of type F (base/task_slot.h).
template <typename F>
void EmplaceTask(TaskSlot& slot, void* callable) {
  using Object = std::remove_reference_t<F>;  // const for an lvalue const
  EmplaceInto(slot, std::forward<F>(*static_cast<Object*>(callable)));
}

// What a periodic task's emplacer gets: the callable and its period.
struct PeriodicArgs {
  void* callable;
  int64_t period_nanos;
};

// The TaskEmplacer for a periodic task of type F: `args` is a PeriodicArgs.
template <typename F>
void EmplacePeriodicTask(TaskSlot& slot, void* args) {
  using Object = std::remove_reference_t<F>;
  using D = std::decay_t<F>;
  auto* a = static_cast<PeriodicArgs*>(args);
  auto* box = new PeriodicBox<D>{
      {1},
      a->period_nanos,
      D(std::forward<F>(*static_cast<Object*>(a->callable)))};
  ::new (slot.storage()) PeriodicBox<D>*(box);
  slot.Install(&kPeriodicOps<D>);
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
