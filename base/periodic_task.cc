#include "tickwheel/base/periodic_task.h"

#include <new>

#include "absl/functional/any_invocable.h"

namespace tickwheel::internal {
namespace {

PeriodicTask*& BoxIn(void* storage) {
  return *std::launder(static_cast<PeriodicTask**>(storage));
}

// What takeTask() hands out for a periodic timeout: the slot's reference.
struct TakenPeriodic {
  explicit TakenPeriodic(PeriodicTask* b) : box(b) {}
  TakenPeriodic(TakenPeriodic&& other) noexcept
      : box(std::exchange(other.box, nullptr)) {}
  TakenPeriodic& operator=(TakenPeriodic&&) = delete;
  ~TakenPeriodic() {
    if (box != nullptr) box->Unref();
  }
  void operator()(const Timeout& t) { box->task().Invoke(t); }
  PeriodicTask* box;
};

constexpr TaskOps kPeriodicOps = {
    [](void* s, TimeoutNode* node, SharedTimerState* shared) {
      BoxIn(s)->task().Run(node, shared);
    },
    [](void* s, const Timeout& t) { BoxIn(s)->task().Invoke(t); },
    [](void* s) noexcept { BoxIn(s)->Unref(); },
    [](void* s, void* task) noexcept {
      // TimerTask (timer/timeout.h) is this AnyInvocable; TakenPeriodic is 8
      // bytes and moves without throwing, so it is stored inline: no
      // allocation, nothing that can throw.
      *static_cast<absl::AnyInvocable<void(const Timeout&)>*>(task) =
          TakenPeriodic(BoxIn(s));
    },
};

}  // namespace

void PeriodicTask::Install(TaskSlot& slot, PeriodicTask* box) {
  ::new (slot.storage()) PeriodicTask*(box);
  slot.Install(&kPeriodicOps);
}

PeriodicTask* PeriodicTask::Of(TaskSlot& slot) {
  return slot.ops() == &kPeriodicOps ? BoxIn(slot.storage()) : nullptr;
}

}  // namespace tickwheel::internal
