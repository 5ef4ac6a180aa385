// base/task_slot.h
// -----------------------------------------------------------------------------
// Internal. TaskSlot: the task inside a timeout, a callable erased into 24
// bytes (a pointer to a table of three functions and 16 bytes of storage),
// where a TimerTask (absl::AnyInvocable) would take 32.
//
// The slot does not know the callable's type: the facade
// (timer/internal/task.h) builds a TaskOps table per callable type,
// constructs the callable in storage() (inline when it is at most
// kInlineBytes, 8-aligned and nothrow-movable, else boxed on the heap with
// the pointer inline) and Install()s the table. The engine only invokes,
// destroys and hands out what is there. A task receives its Timeout, the
// facade's handle, which this layer names but never builds: the engine runs a
// task with Run(), whose table entry, the facade's, lends the engine's node
// and shared state to a Timeout for the call (one indirect call per run).
//
// Lifecycle: a callable is constructed into an empty slot and Install()ed;
// Invoke() any number of times; Reset() destroys it, TakeInto() moves it out.
// Both leave the slot empty, and the slot is marked empty before the
// callable's destructor runs, so a destructor that reaches the slot again
// finds it empty.
//
// Thread-safety: none; the timeout's state machine decides which thread may
// touch the slot (worker/timeout_node.h).

#ifndef TICKWHEEL_BASE_TASK_SLOT_H_
#define TICKWHEEL_BASE_TASK_SLOT_H_

#include <cstddef>
#include <cstdint>

namespace tickwheel {
class Timeout;
}  // namespace tickwheel

namespace tickwheel::internal {

// The engine's node and shared state (worker/), named here only as what
// TaskOps::run passes through to the facade.
struct TimeoutNode;
struct SharedTimerState;

// What the facade provides for one callable type.
struct TaskOps {
  // Calls the callable with the handle of the timeout of `node`, lent the
  // caller's reference for the call: how the engine runs a task.
  void (*run)(void* storage, TimeoutNode* node, SharedTimerState* shared);
  // Calls the callable with a handle the caller has (a taken task's).
  void (*invoke)(void* storage, const Timeout& timeout);
  // Destroys the callable; nullptr when there is nothing to do (a trivially
  // destructible inline callable), so that a cancel() or an expiry calls
  // nothing.
  void (*destroy)(void* storage) noexcept;
  // Moves the callable into the facade's task object at `task` (a
  // TimerTask) and destroys what is left. Never throws.
  void (*take)(void* storage, void* task) noexcept;
};

class TaskSlot {
 public:
  static constexpr size_t kInlineBytes = 16;

  TaskSlot() = default;
  ~TaskSlot() { Reset(); }
  TaskSlot(const TaskSlot&) = delete;
  TaskSlot& operator=(const TaskSlot&) = delete;

  explicit operator bool() const { return ops_ != nullptr; }
  const TaskOps* ops() const { return ops_; }

  // Where the facade constructs a callable (kInlineBytes, 8-aligned), then
  // installs its table. Precondition: the slot is empty.
  void* storage() { return storage_; }
  const void* storage() const { return storage_; }
  void Install(const TaskOps* ops) { ops_ = ops; }

  // Runs the callable with the handle of the timeout of `node`, lent the
  // caller's reference (TaskOps::run). Precondition: not empty.
  void Run(TimeoutNode* node, SharedTimerState* shared) {
    ops_->run(storage_, node, shared);
  }
  // Runs the callable with `timeout`. Precondition: not empty.
  void Invoke(const Timeout& timeout) { ops_->invoke(storage_, timeout); }

  // Destroys the callable, if any.
  void Reset() noexcept {
    if (const TaskOps* ops = ops_) {
      ops_ = nullptr;
      if (ops->destroy != nullptr) ops->destroy(storage_);
    }
  }

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

// How newTimeout() hands its callable to the engine without making the
// engine a template: constructs the callable at `callable` into `slot`,
// instantiated by the facade per callable type. If that throws, the slot
// stays empty and the exception propagates.
using TaskEmplacer = void (*)(TaskSlot& slot, void* callable);

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_BASE_TASK_SLOT_H_
