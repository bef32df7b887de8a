// cpp_host: the host runtime from C++17 through the installed <rtx.hpp>. Lambdas with captures
// run as tasks and as continuations; errors come back as rtx::Error exceptions; a work queue and
// an allocator written in C++ serve a context; every handle is released by a destructor, which
// valgrind confirms. Every result is compared with the value computed here.
#include <rtx.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  std::printf("  %-78s %s\n", what.c_str(), ok ? "ok" : "FAILED");
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
      context.enqueue([a, b, out] { out.set(a.get<std::int64_t>() + b.get<std::int64_t>()); });
    });
  }
  rtx::await(context, fib.back());
  context.quiesce();
  std::int64_t expected[count] = {0, 1};
  for (int i = 2; i < count; ++i) {
    expected[i] = expected[i - 1] + expected[i - 2];
  }
  bool all = true;
  for (int i = 0; i < count; ++i) {
    all = all && fib[i].get<std::int64_t>() == expected[i];
  }
  expect(all, "fib[39] = " + std::to_string(fib.back().get<std::int64_t>()) + " through 38 tasks (by hand " +
                  std::to_string(expected[count - 1]) + ")");
}

void continuations_and_errors(const rtx::Context& context) {
  // and_then with a capturing lambda; the heap copy is freed after its one run.
  rtx::AsyncValue input = rtx::AsyncValue::unavailable();
  rtx::AsyncValue doubled = rtx::AsyncValue::unavailable();
  std::atomic<int> runs{0};
  input.and_then([input, doubled, &runs] {
    ++runs;
    doubled.set(2.0 * input.get<double>());
  });
  context.enqueue([input] { input.set(21.25); });
  context.await(doubled);
  context.quiesce();
  expect(doubled.get<double>() == 42.5 && runs == 1, "and_then lambda: 2 * 21.25 = 42.5, ran once");

  // Errors surface as rtx::Error with the producer's code and message.
  rtx::AsyncValue missing = rtx::AsyncValue::error(RTX_STATUS_CODE_NOT_FOUND, "no function 'main'");
  try {
    (void)missing.get<std::int32_t>();
    expect(false, "reading an error value throws");
  } catch (const rtx::Error& e) {
    expect(e.code() == RTX_STATUS_CODE_NOT_FOUND && e.message().find("no function 'main'") != std::string::npos,
           "reading an error value throws rtx::Error(NOT_FOUND, \"no function 'main'\")");
  }
  expect(missing.status().code() == RTX_STATUS_CODE_NOT_FOUND && rtx::AsyncValue::of(1).status().ok(),
         "status(): the value's error, OK for a concrete value");
  try {
    (void)rtx::AsyncValue::of(true).get<float>();
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
    rtx::Context bad(rtx::ContextOptions{"mstd:0", nullptr, nullptr});
    expect(false, "bad queue spec throws");
  } catch (const rtx::Error& e) {
    expect(e.code() == RTX_STATUS_CODE_INVALID_ARGUMENT, "Context(\"mstd:0\") throws INVALID_ARGUMENT");
  }

  // Cancel: enqueue throws CANCELLED, the lambda (with its captured value) is freed unrun, and
  // the cancellation value becomes CANCELLED.
  rtx::AsyncValue never = rtx::AsyncValue::unavailable();
  rtx::AsyncValue cancellation = context.cancellation_value();
  const bool quiet_before = !cancellation.is_available();
  context.cancel();
  try {
    context.enqueue([never] { never.set_chain(); });
    expect(false, "enqueue after cancel throws");
  } catch (const rtx::Error& e) {
    expect(e.code() == RTX_STATUS_CODE_CANCELLED && !never.is_available() && context.is_cancelled(),
           "enqueue after cancel throws CANCELLED");
  }
  expect(quiet_before && cancellation.status().code() == RTX_STATUS_CODE_CANCELLED,
         "the cancellation value becomes CANCELLED");
  context.restart();
  expect(!context.is_cancelled(), "restart clears the cancellation");

  // An indirect value forwarded to a value that a blocking task produces.
  rtx::AsyncValue result = rtx::AsyncValue::indirect();
  rtx::AsyncValue produced = rtx::AsyncValue::unavailable();
  result.forward_to(produced);
  if (context.parallelism() > 1) {
    context.enqueue_blocking([produced] { produced.set<std::int32_t>(7); });
  } else {
    context.enqueue([produced] { produced.set<std::int32_t>(7); });
  }
  context.await(result);
  context.quiesce();
  expect(result.get<std::int32_t>() == 7, "indirect value forwarded to a task's result reads 7");

  // Copies share one value; moves leave the source empty.
  rtx::AsyncValue original = rtx::AsyncValue::of<std::int64_t>(5);
  rtx::AsyncValue copy = original;
  rtx::AsyncValue moved = std::move(copy);
  expect(moved == original && !copy, "copies share the handle, moves transfer it");

  void* memory = context.allocate(256, 64);
  expect(reinterpret_cast<std::uintptr_t>(memory) % 64 == 0, "allocate(256, 64) is 64-byte aligned");
  context.deallocate(memory, 256, 64);
}

void run(const char* work_queue) {
  rtx::Context context(rtx::ContextOptions{work_queue, nullptr, nullptr});
  std::printf("queue \"%s\" (parallelism %u)\n", work_queue, context.parallelism());
  fibonacci(context);
  continuations_and_errors(context);
}

// A work queue of one std::thread; it takes no blocking work.
class ThreadQueue : public rtx::WorkQueue {
 public:
  ThreadQueue() : worker_([this] { loop(); }) {}
  ~ThreadQueue() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    worker_.join();
  }
  void add_task(rtx::Task task) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    ++added;
    ready_.notify_one();
  }
  std::string name() const override { return "one std::thread"; }

  std::atomic<int> added{0};

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) {
        return;
      }
      rtx::Task task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task.run();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<rtx::Task> tasks_;
  bool stopping_ = false;
  std::thread worker_;
};

// An allocator that counts what it hands out.
class CountingAllocator : public rtx::Allocator {
 public:
  void* allocate(std::size_t size, std::size_t align) override {
    ++allocations;
    live += static_cast<long>(size);
    return std::aligned_alloc(align, (size + align - 1) / align * align);
  }
  void deallocate(void* ptr, std::size_t size, std::size_t) override {
    live -= static_cast<long>(size);
    std::free(ptr);
  }
  std::atomic<int> allocations{0};
  std::atomic<long> live{0};
};

void host_queue_and_allocator() {
  std::printf("a work queue and an allocator written in C++\n");
  auto queue = std::make_shared<ThreadQueue>();
  auto allocator = std::make_shared<CountingAllocator>();
  {
    rtx::Context context(rtx::ContextOptions{"", queue, allocator});
    expect(context.parallelism() == 1, "parallelism is the queue's (1)");
    rtx::AsyncValue sum = rtx::AsyncValue::unavailable();
    std::atomic<bool> on_worker{false};
    context.enqueue([&on_worker, context, sum] {
      on_worker = context.is_in_worker_thread();
      sum.set<std::int32_t>(40 + 2);
    });
    context.await(sum);
    context.quiesce();
    expect(sum.get<std::int32_t>() == 42 && queue->added >= 1 && on_worker,
           "a task ran on the C++ queue's thread (42)");
    try {
      context.enqueue_blocking([] {});
      expect(false, "blocking work on a queue that refuses it throws");
    } catch (const rtx::Error& e) {
      expect(e.code() == RTX_STATUS_CODE_RESOURCE_EXHAUSTED, "blocking work the queue refuses: RESOURCE_EXHAUSTED");
    }
    void* memory = context.allocate(100, 32);
    const rtx::MemoryStats stats = context.memory_stats();
    expect(stats.allocations >= 1 && stats.bytes_in_use >= 100 && stats.peak_bytes >= stats.bytes_in_use,
           "memory_stats() counts the block");
    context.deallocate(memory, 100, 32);
    expect(allocator->allocations >= 1, "allocate() goes to the C++ allocator");
    expect(queue.use_count() == 2 && allocator.use_count() == 2, "the context holds the queue and the allocator");
  }
  expect(queue.use_count() == 1 && allocator.use_count() == 1 && allocator->live == 0,
         "released with the context; every byte returned");
}

void memory_limit() {
  std::printf("a context held under a memory limit\n");
  rtx::ContextOptions options;
  options.work_queue = "s";
  options.memory_limit = 4096;
  rtx::Context context(options);
  try {
    context.allocate(8192, 64);
    expect(false, "an allocation past the limit throws");
  } catch (const rtx::Error& e) {
    expect(e.code() == RTX_STATUS_CODE_RESOURCE_EXHAUSTED, "an allocation past memory_limit: RESOURCE_EXHAUSTED");
  }
  void* memory = context.allocate(1024, 64);
  context.deallocate(memory, 1024, 64);
  const rtx::MemoryStats stats = context.memory_stats();
  expect(stats.bytes_in_use == 0 && stats.peak_bytes >= 1024 && stats.peak_bytes <= 4096,
         "within the limit it allocates, and the peak stays under it");
}

}  // namespace

int main() {
  std::printf("rtx cpp_host (C++17): library %s, header %s\n", rtx::version().c_str(), RTX_VERSION);
  try {
    run("s");
    run("mstd:2,4");
    host_queue_and_allocator();
    memory_limit();
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
