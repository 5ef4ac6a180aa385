#!/usr/bin/env bash
# What a user sees when a call to the scheduling API is wrong: each mistake
# below must fail to compile with one static_assert that names the fix, in a
# few lines, not a list of every overload, on a Timer and on a LocalTimer
# alike (both take their scheduling calls from timer/scheduling.h); and the
# mixed forms that are right must compile on both. Checked with the compiler
# CI uses ($CXX, default g++).
set -euo pipefail
cd "$(dirname "$0")/.."

cxx=${CXX:-g++}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/include"
ln -s "$(pwd)" "$tmp/include/tickwheel"
fail=0

# Each check runs once per timer type: its header and its class.
types=("timer.h Timer" "local_timer.h LocalTimer")
checked=0

# expect_error <name> <text the first error must contain> <body of f(T& t)>
expect_error() {
  local type
  for type in "${types[@]}"; do
    expect_error_on ${type} "$@"
  done
}

# expect_error_on <header> <class> <name> <text> <body of f(<class>& t)>
expect_error_on() {
  local header=$1 class=$2 name="$3_$2" want=$4 body=$5
  checked=$((checked + 1))
  printf '%s\n' '#include <chrono>' '#include <memory>' \
    "#include \"tickwheel/timer/$header\"" \
    'using namespace std::chrono_literals;' \
    "void f(tickwheel::$class& t) { $body }" >"$tmp/$name.cc"
  if "$cxx" -std=c++20 -I"$tmp/include" -fsyntax-only "$tmp/$name.cc" \
      >"$tmp/$name.log" 2>&1; then
    echo "check_diagnostics: $name compiled, but it must not"
    fail=1
    return
  fi
  local first lines
  first=$(grep -m1 'error' "$tmp/$name.log" || true)
  lines=$(wc -l <"$tmp/$name.log")
  if [[ "$first" != *"$want"* ]]; then
    echo "check_diagnostics: $name: the first error does not say \"$want\":"
    head -n 20 "$tmp/$name.log"
    fail=1
  elif ((lines > 20)); then
    echo "check_diagnostics: $name: $lines lines of errors (at most 20)"
    fail=1
  fi
}

expect_error move_only_lvalue "pass it with std::move" \
  'auto p = std::make_unique<int>(1);
   auto task = [p = std::move(p)] {};
   (void)t.newTimeout(task, absl::Seconds(1));'
expect_error not_callable "must be callable as" \
  '(void)t.newTimeout(42, absl::Seconds(1));'
expect_error not_a_delay "a delay is an absl::Duration or a std::chrono::duration" \
  '(void)t.newTimeout([] {}, 5);'
expect_error not_a_period "each an absl::Duration or a std::chrono::duration" \
  '(void)t.newPeriodic([] {}, 1s, 5);'
expect_error not_a_period_with_a_policy "each an absl::Duration or a std::chrono::duration" \
  '(void)t.newPeriodic([] {}, 1s, 5, tickwheel::MissedRuns::kBurst);'
expect_error not_a_policy "last argument is a tickwheel::MissedRuns" \
  '(void)t.newPeriodic([] {}, 1s, 1s, true);'
expect_error no_period "newPeriodic needs an initial delay and a period" \
  '(void)t.newPeriodic([] {}, 1s);'
expect_error no_durations "newPeriodic needs an initial delay and a period" \
  '(void)t.newPeriodic([] {});'

# Right, in the mixed forms a user writes.
for type in "${types[@]}"; do
  read -r header class <<<"$type"
  printf '%s\n' '#include <chrono>' '#include <memory>' \
    "#include \"tickwheel/timer/$header\"" \
    'using namespace std::chrono_literals;' \
    'void g() {}' \
    "void f(tickwheel::$class& t, tickwheel::Timeout& x) {" \
    '  (void)t.newPeriodic([] {}, 500ms, absl::Seconds(1));' \
    '  (void)t.newPeriodic([] {}, absl::Seconds(1), 2.5s);' \
    '  (void)t.newPeriodic([] {}, 1s, 1s, tickwheel::MissedRuns::kBurst);' \
    '  (void)t.newPeriodic([] {}, 0ms, absl::Seconds(1),' \
    '                      tickwheel::MissedRuns::kDelay);' \
    '  auto p = std::make_unique<int>(1);' \
    '  (void)t.newTimeout([p = std::move(p)] {}, 1s);' \
    '  (void)t.newTimeout(g, std::chrono::duration<long, std::ratio<1, 3>>(2));' \
    '  (void)t.newTimeout(tickwheel::TimerTask([](const tickwheel::Timeout&) {}),' \
    '                     absl::Milliseconds(5));' \
    '  (void)t.newTimeoutAt([](const tickwheel::Timeout&) {}, t.now() + 1ms);' \
    '  (void)x.reset(1.5s);' \
    '}' >"$tmp/right_$class.cc"
  if ! "$cxx" -std=c++20 -I"$tmp/include" -fsyntax-only "$tmp/right_$class.cc" \
      >"$tmp/right_$class.log" 2>&1; then
    echo "check_diagnostics: the right forms do not compile on a $class:"
    head -n 30 "$tmp/right_$class.log"
    fail=1
  fi
done

if ((fail)); then
  echo "check_diagnostics: FAILED"
  exit 1
fi
echo "check_diagnostics: OK ($checked mistakes on Timer and LocalTimer, each one short error; the mixed forms compile)"
