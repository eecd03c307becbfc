# Sourced by .ci/run (and by test/tooling/ci.test.ts): run_suite runs one tap suite and adds its counts to the
# totals; status becomes 1 when anything did not pass.
passed=0
failed=0
skipped=0
todo=0
status=0
log=${log:-$(mktemp)}

# ci_guards: what CI counts is what ran. UPDATE_FIXTURES would turn the fixture check into a pass (it rewrites the
# fixtures instead of comparing them): unset, and said. A todo test is a test that does not pass: tap counts it as a
# failure under TAP_FAIL_TODO (and run_suite as well, below).
ci_guards() {
  if [ -n "${UPDATE_FIXTURES:-}" ]; then
    echo "UPDATE_FIXTURES=$UPDATE_FIXTURES is ignored under CI (unset): the fixtures are checked, not rewritten"
    unset UPDATE_FIXTURES
  fi
  export TAP_FAIL_TODO=1
}

# tap_count SUMMARY FIELD: a number from tap's closing summary, e.g. "# { total: 512, pass: 510, fail: 1, skip: 1 }".
tap_count() { echo "$1" | grep -oE "$2: [0-9]+" | grep -oE '[0-9]+' || echo 0; }

# run_suite NAME COMMAND...: runs one tap suite, adds its counts to the totals, and counts a suite that failed
# without a failing assertion (type check, coverage below 100 %, a crashed file) as one failure.
run_suite() {
  local name=$1
  shift
  echo "== $name: $*"
  "$@" 2>&1 | tee "$log"
  local code=${PIPESTATUS[0]}
  local summary
  summary=$(grep -E '^# \{ total: [0-9]+' "$log" | tail -n 1)
  if [ -z "$summary" ]; then
    echo "$name: no tap summary (type check or test runner failed before the tests ran)"
    failed=$((failed + 1))
    status=1
    return
  fi
  local suite_passed suite_failed suite_skipped suite_todo
  suite_passed=$(tap_count "$summary" pass)
  suite_failed=$(tap_count "$summary" fail)
  suite_skipped=$(tap_count "$summary" skip)
  suite_todo=$(tap_count "$summary" todo)
  if [ "$code" -ne 0 ] && [ "$suite_failed" -eq 0 ]; then
    echo "$name: tap exited $code with no failing assertion (coverage below 100% or a crashed test file; see above)"
    suite_failed=1
  fi
  # No silent skips: every tool a test needs is built or provided above (REQUIRE_TOOLS=1 makes a missing one a
  # failure), so a skipped test here is one that did not run, and CI says so by failing.
  if [ "$suite_skipped" -gt 0 ]; then
    echo "$name: $suite_skipped skipped (CI expects none; tap's output above names them)"
    suite_failed=$((suite_failed + 1))
    code=1
  fi
  # A todo is a test that is known not to pass (without TAP_FAIL_TODO tap counts it apart, and a failing
  # assertion in it does not fail the run): CI expects none.
  if [ "$suite_todo" -gt 0 ]; then
    echo "$name: $suite_todo todo (CI expects none; tap's output above names them)"
    suite_failed=$((suite_failed + 1))
    code=1
  fi
  [ "$code" -ne 0 ] && status=1
  echo "== $name: $suite_passed passed, $suite_failed failed, $suite_skipped skipped, $suite_todo todo"
  passed=$((passed + suite_passed))
  failed=$((failed + suite_failed))
  skipped=$((skipped + suite_skipped))
  todo=$((todo + suite_todo))
}
