// raii_wrapper: rtx from C++17 through rtx.hpp. Lambdas with captures run as tasks and as
// continuations; errors come back as rtx::Error exceptions; every handle is released by a
// destructor, which valgrind confirms.
#include "rtx.hpp"

#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  std::printf("  %-70s %s\n", what, ok ? "ok" : "FAILED");
  if (!ok) {
    ++failures;
  }
}

// Fibonacci as a dataflow graph: fib[i] = fib[i-1] + fib[i-2], each sum a task that when_all
// schedules once both inputs are ready.
void fibonacci(const rtx::Context& context) {
  constexpr int count = 40;
  std::vector<rtx::AsyncValue> fib;
  for (int i = 0; i < count; ++i) {
    fib.push_back(i < 2 ? rtx::AsyncValue::of<std::int64_t>(i) : rtx::AsyncValue::unavailable());
  }
  for (int i = 2; i < count; ++i) {
    rtx::AsyncValue a = fib[i - 2];
    rtx::AsyncValue b = fib[i - 1];
    rtx::AsyncValue out = fib[i];
    rtx::when_all({a, b}, [context, a, b, out] {
      context.enqueue([a, b, out] { out.set(a.value<std::int64_t>() + b.value<std::int64_t>()); });
    });
  }
  context.await({fib.back()});
  context.quiesce();
  std::int64_t expected[count] = {0, 1};
  for (int i = 2; i < count; ++i) {
    expected[i] = expected[i - 1] + expected[i - 2];
  }
  bool all = true;
  for (int i = 0; i < count; ++i) {
    all = all && fib[i].value<std::int64_t>() == expected[i];
  }
  char line[128];
  std::snprintf(line, sizeof line, "fib[39] = %lld through 38 tasks (by hand %lld)",
                static_cast<long long>(fib.back().value<std::int64_t>()), static_cast<long long>(expected[count - 1]));
  expect(all, line);
}

void continuations_and_errors(const rtx::Context& context) {
  // and_then with a capturing lambda; the heap trampoline is freed after its one run.
  rtx::AsyncValue input = rtx::AsyncValue::unavailable();
  rtx::AsyncValue doubled = rtx::AsyncValue::unavailable();
  std::atomic<int> runs{0};
  input.and_then([input, doubled, &runs] {
    ++runs;
    doubled.set(2.0 * input.value<double>());
  });
  context.enqueue([input] { input.set(21.25); });
  context.await({doubled});
  context.quiesce();
  expect(doubled.value<double>() == 42.5 && runs == 1, "and_then lambda: 2 * 21.25 = 42.5, ran once");

  // Errors surface as rtx::Error with the producer's code and message.
  rtx::AsyncValue missing = rtx::AsyncValue::error(RTX_STATUS_CODE_NOT_FOUND, "no function 'main'");
  try {
    (void)missing.value<std::int32_t>();
    expect(false, "reading an error value throws");
  } catch (const rtx::Error& e) {
    expect(e.code() == RTX_STATUS_CODE_NOT_FOUND && e.message().find("no function 'main'") != std::string::npos,
           "reading an error value throws rtx::Error(NOT_FOUND, \"no function 'main'\")");
  }
  try {
    (void)rtx::AsyncValue::of(true).value<float>();
    expect(false, "wrong type throws");
  } catch (const rtx::Error& e) {
    expect(e.code() == RTX_STATUS_CODE_INVALID_ARGUMENT, "reading an i1 as f32 throws INVALID_ARGUMENT");
  }
  try {
    rtx::AsyncValue set_twice = rtx::AsyncValue::of<std::int32_t>(1);
    set_twice.set<std::int32_t>(2);
    expect(false, "double set throws");
  } catch (const rtx::Error& e) {
    expect(e.code() == RTX_STATUS_CODE_FAILED_PRECONDITION, "setting an available value throws FAILED_PRECONDITION");
  }
  try {
    rtx::Context bad("mstd:0");
    expect(false, "bad queue spec throws");
  } catch (const rtx::Error& e) {
    expect(e.code() == RTX_STATUS_CODE_INVALID_ARGUMENT, "Context(\"mstd:0\") throws INVALID_ARGUMENT");
  }

  // Cancel: enqueue throws CANCELLED, and the lambda (with its captured value) is freed unrun.
  rtx::AsyncValue never = rtx::AsyncValue::unavailable();
  context.cancel();
  try {
    context.enqueue([never] { never.set_chain(); });
    expect(false, "enqueue after cancel throws");
  } catch (const rtx::Error& e) {
    expect(e.code() == RTX_STATUS_CODE_CANCELLED && !never.is_available(), "enqueue after cancel throws CANCELLED");
  }
  context.restart();

  // An indirect value forwarded to a value that a blocking task produces.
  rtx::AsyncValue result = rtx::AsyncValue::indirect();
  rtx::AsyncValue produced = rtx::AsyncValue::unavailable();
  result.forward_to(produced);
  if (context.parallelism() > 1) {
    context.enqueue_blocking([produced] { produced.set<std::int32_t>(7); });
  } else {
    context.enqueue([produced] { produced.set<std::int32_t>(7); });
  }
  context.await({result});
  context.quiesce();
  expect(result.value<std::int32_t>() == 7, "indirect value forwarded to a task's result reads 7");

  // Copies share one value; moves leave the source empty.
  rtx::AsyncValue original = rtx::AsyncValue::of<std::int64_t>(5);
  rtx::AsyncValue copy = original;
  rtx::AsyncValue moved = std::move(copy);
  expect(moved.get() == original.get() && copy.get() == nullptr, "copies share the handle, moves transfer it");
}

void run(const char* work_queue) {
  rtx::Context context(work_queue);
  std::printf("queue \"%s\" (parallelism %u)\n", work_queue, context.parallelism());
  fibonacci(context);
  continuations_and_errors(context);
}

}  // namespace

int main() {
  std::printf("rtx raii_wrapper (C++17): library %s, header %s\n", rtx_version(), RTX_VERSION);
  try {
    run("s");
    run("mstd:2,4");
  } catch (const rtx::Error& e) {
    std::printf("unexpected rtx::Error: %s\n", e.what());
    return 1;
  }
  if (failures != 0) {
    std::printf("%d check(s) FAILED\n", failures);
    return 1;
  }
  std::printf("all checks passed\n");
  return 0;
}
