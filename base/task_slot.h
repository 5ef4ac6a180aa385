// base/task_slot.h
// -----------------------------------------------------------------------------
// Internal. The task inside a TimeoutNode: a callable erased into 24 bytes (a
// pointer to a table of functions and 16 bytes of storage), where a
// TimerTask (absl::AnyInvocable) would take 32 and make the node 56 bytes.
//
// The slot does not know the callable's type, nor the Timeout a task is
// called with: the facade (timer/task.h) builds a TaskOps table per callable
// type, constructs the callable in storage() (inline when it is at most
// kInlineBytes, 8-aligned and nothrow-movable, else boxed on the heap with
// the pointer inline) and Install()s the table. The engine only invokes,
// destroys and hands out what is there, which keeps it free of the facade's
// types.
//
// Lifecycle: a callable is constructed into an empty slot and Install()ed;
// Invoke() any number of times; Reset() destroys it, TakeInto() moves it out.
// Both leave the slot empty, and the slot is marked empty before the
// callable's destructor runs, so a destructor that reaches the slot again
// finds it empty.
//
// Thread-safety: none; TimeoutNode's state machine decides which thread may
// touch the slot (worker/timeout_node.h).

#ifndef TICKWHEEL_BASE_TASK_SLOT_H_
#define TICKWHEEL_BASE_TASK_SLOT_H_

#include <cstddef>
#include <cstdint>
#include <utility>

namespace tickwheel::internal {

struct TimeoutNode;
struct SharedTimerState;

// What the facade provides for one callable type.
struct TaskOps {
  // Calls the callable for the timeout of `node`, lending it the worker's
  // reference for the call.
  void (*invoke)(void* storage, TimeoutNode* node, SharedTimerState* shared);
  // Destroys the callable; nullptr when there is nothing to do (a trivially
  // destructible inline callable), so that a cancel() or an expiry calls
  // nothing.
  void (*destroy)(void* storage) noexcept;
  // Moves the callable into the facade's task object at `task` (a
  // TimerTask) and destroys what is left. Never throws.
  void (*take)(void* storage, void* task) noexcept;

  // Periodic tasks only; nullptr for the others. A periodic task's callable
  // is shared: each run holds its own reference, so that a cancel() or a
  // takeTask() during the run cannot destroy it under the run.
  // The period, in nanoseconds (> 0).
  int64_t (*period)(const void* storage);
  // One more reference to the callable, for a run.
  void* (*share)(void* storage);
  void (*invoke_shared)(void* callable, TimeoutNode* node,
                        SharedTimerState* shared);
  void (*unshare)(void* callable) noexcept;
};

// A run's own reference to a periodic task's callable (TaskSlot::Share()):
// move-only; dropping it may destroy the callable, if the slot let go of it
// meanwhile.
class SharedTask {
 public:
  SharedTask(const TaskOps* ops, void* callable)
      : ops_(ops), callable_(callable) {}
  SharedTask(SharedTask&& other) noexcept
      : ops_(other.ops_), callable_(std::exchange(other.callable_, nullptr)) {}
  SharedTask& operator=(SharedTask&&) = delete;
  ~SharedTask() {
    if (callable_ != nullptr) ops_->unshare(callable_);
  }
  void Invoke(TimeoutNode* node, SharedTimerState* shared) {
    ops_->invoke_shared(callable_, node, shared);
  }

 private:
  const TaskOps* ops_;
  void* callable_;
};

class TaskSlot {
 public:
  static constexpr size_t kInlineBytes = 16;

  TaskSlot() = default;
  ~TaskSlot() { Reset(); }
  TaskSlot(const TaskSlot&) = delete;
  TaskSlot& operator=(const TaskSlot&) = delete;

  explicit operator bool() const { return ops_ != nullptr; }

  // Where the facade constructs a callable (kInlineBytes, 8-aligned), then
  // installs its table. Precondition: the slot is empty.
  void* storage() { return storage_; }
  void Install(const TaskOps* ops) { ops_ = ops; }

  // Runs the callable. Precondition: not empty.
  void Invoke(TimeoutNode* node, SharedTimerState* shared) {
    ops_->invoke(storage_, node, shared);
  }

  // Destroys the callable, if any.
  void Reset() noexcept {
    if (const TaskOps* ops = ops_) {
      ops_ = nullptr;
      if (ops->destroy != nullptr) ops->destroy(storage_);
    }
  }

  // A periodic task's period and a run's reference to its callable.
  // Precondition: not empty, and periodic (its table has `period`).
  int64_t PeriodNanos() const { return ops_->period(storage_); }
  SharedTask Share() { return SharedTask(ops_, ops_->share(storage_)); }

  // Moves the callable into the facade's task object at `task`; nothing if
  // the slot is empty. Never throws.
  void TakeInto(void* task) noexcept {
    if (const TaskOps* ops = ops_) {
      ops_ = nullptr;
      ops->take(storage_, task);
    }
  }

 private:
  const TaskOps* ops_ = nullptr;
  alignas(void*) unsigned char storage_[kInlineBytes];
};

static_assert(sizeof(TaskSlot) == 24, "a pointer and 16 bytes of storage");

// How newTimeout() hands its callable to the worker without making the
// worker a template: constructs the callable at `callable` into `slot`,
// instantiated by the facade per callable type. If that throws, the slot
// stays empty and the exception propagates.
using TaskEmplacer = void (*)(TaskSlot& slot, void* callable);

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_BASE_TASK_SLOT_H_
