#!/usr/bin/env bash
# Checks that the names the documents give still exist, so that a rename or
# a removal cannot leave README.md, CONTRIBUTING.md or docs/*.md pointing at
# nothing. Every span in backticks that names something of this repository
# is looked up:
#   timer/timer.h, tickwheel/timer/timer.h, worker.{h,cc}   a file or folder
#   //tests:stress_test, //timer                              a Bazel target
#   Worker::Pass(), TimeoutNode::filed                        each name, in the sources
#   cancelAll(), newTimeout()                                 the name, in the sources
#   reset_test, reset_test.Some...Behaviour, Suite.TestName   a test file or name
# Commands, shell variables, placeholders and globs are skipped, and so are
# other libraries' names (std::, absl::, ...). Names only: whether each
# sentence is still true is for its reader. CHANGELOG.md is not checked: it
# names what is gone on purpose.
#   tools/check_docs.sh            exit 1 with a list of what is missing
set -euo pipefail
cd "$(dirname "$0")/.."

docs=(README.md CONTRIBUTING.md docs/*.md)
sources=(timer worker base durable tests tools examples cmake CMakeLists.txt)

# Named in the documents although they are not in the tree: a file the
# project decided not to ship, one an install generates, and another
# package's.
absent_on_purpose=(
  MODULE.bazel
  tickwheelConfigVersion.cmake
  GTestConfig.cmake
)

missing=()
checked=0
note() { missing+=("$1: $2"); }

in_sources() {  # a whole word in the sources
  grep -rqw --include='*.h' --include='*.cc' --include='*.sh' \
    --include='*.bazel' --include='*.cmake' --include='*.txt' \
    -e "$1" "${sources[@]}"
}

tracked=$(git ls-files 2>/dev/null || find . -type f | sed 's|^\./||')
file_anywhere() {  # a bare file name, anywhere in the repository
  grep -qE "(^|/)$(sed 's/[.]/[.]/g' <<<"$1")\$" <<<"$tracked"
}

path_exists() {
  local p=${1#tickwheel/}  # the installed include prefix
  [[ -e "$p" ]]
}

bazel_target_exists() {  # //pkg or //pkg:name
  local label=${1#//} pkg name
  pkg=${label%%:*}
  [[ -f "$pkg/BUILD.bazel" ]] || return 1
  [[ "$label" != *:* ]] && return 0
  name=${label#*:}
  [[ "$name" == all || "$name" == '...' ]] && return 0
  grep -qE "\"$name\"" "$pkg/BUILD.bazel"
}

is_test_name() {  # a test target: its file, its example or its BUILD entry
  [[ -f "tests/$1.cc" || -f "tests/$1.sh" || -f "examples/$1.cc" ||
     -f "examples/${1%_test}.cc" ]] ||
    grep -qE "\"$1\"" tests/BUILD.bazel examples/BUILD.bazel 2>/dev/null
}

while IFS=$'\t' read -r doc span; do
  for skip in "${absent_on_purpose[@]}"; do
    [[ "$span" == "$skip" ]] && continue 2
  done
  case "$span" in
    # commands, variables, placeholders (one-letter names: //pkg:x), globs,
    # home and system paths, Bazel's rule names
    *' '* | *'$'* | *'<'* | *'*'* | '~'* | /[a-z]* | *'='* | *:[a-z] ) continue ;;
    cc_* | sh_* ) continue ;;
    std::* | absl::* | fmt::* | boost::* | asio::* | testing::* | ::* ) continue ;;
  esac
  checked=$((checked + 1))
  if [[ "$span" =~ ^//[a-z_/]+(:[A-Za-z0-9_.]+)?$ ]]; then
    bazel_target_exists "$span" || note "$doc" "no Bazel target $span"
  elif [[ "$span" =~ ^(tickwheel/)?(timer|worker|base|durable|tests|tools|docs|examples|third_party|cmake|\.ci)(/[A-Za-z0-9_.{},-]*)*/?$ ]]; then
    # Brace lists expand to every file they name (the span holds no
    # characters the shell could act on).
    for p in $(eval "echo $span"); do
      path_exists "$p" || note "$doc" "no file $p"
    done
  elif [[ "$span" =~ ^[A-Za-z0-9_.-]+\.(\{[a-z,]+\}|h|cc|sh|md|bazel|cmake|json|in)$ ]]; then
    for p in $(eval "echo $span"); do
      file_anywhere "$p" || note "$doc" "no file named $p"
    done
  elif [[ "$span" =~ ^([A-Za-z_][A-Za-z0-9_]*)((::~?[A-Za-z_][A-Za-z0-9_]*)+)(\(\))?$ ]]; then
    IFS=':' read -ra parts <<<"${span%()}"
    for part in "${parts[@]}"; do
      [[ -z "$part" ]] && continue
      in_sources "${part#\~}" || note "$doc" "no $part (in $span) in the sources"
    done
  elif [[ "$span" =~ ^[A-Za-z_][A-Za-z0-9_]*\(\)$ ]]; then
    in_sources "${span%()}" || note "$doc" "no ${span%()} in the sources"
  elif [[ "$span" =~ ^([a-z0-9_]+_test)$ ]]; then
    is_test_name "$span" || note "$doc" "no test $span"
  elif [[ "$span" =~ ^([A-Za-z0-9_]+)\.([A-Z][A-Za-z0-9_]*)$ ]]; then
    suite=${BASH_REMATCH[1]} test=${BASH_REMATCH[2]}
    if [[ "$suite" == *_test ]]; then
      is_test_name "$suite" || note "$doc" "no test $suite (in $span)"
    fi
    grep -rqw -e "$test" tests examples || note "$doc" "no test $test (in $span)"
  else
    checked=$((checked - 1))  # not a name of this repository's
  fi
done < <(for doc in "${docs[@]}"; do
           grep -o '`[^`]*`' "$doc" | tr -d '`' | sort -u | sed "s|^|$doc\t|"
         done)

if ((${#missing[@]})); then
  printf 'check_docs: %s\n' "${missing[@]}"
  echo "check_docs: FAILED: ${#missing[@]} names in the documents are not in the repository"
  exit 1
fi
echo "check_docs: OK ($checked names in ${#docs[@]} documents)"
