/* load_test: many host threads, many contexts, all on `local-task`, checked value by value and
 * thread by thread.
 *
 *   load_test <programs_embedded.vmfb>
 *
 * The module (tests/fixtures/hal_run, from tests/fixtures/hal_run/src/programs.mlir) is loaded
 * once. Two contexts are created up front and shared by every thread; then THREADS host threads
 * each run ROUNDS rounds of: create a context of its own with the `local-task` device, add the
 * module, call
 *   scale_dynamic(tensor<?xf32>, f32) -> tensor<?xf32>   (several workgroups: the worker pool)
 *   matmul(tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
 * CALLS times each on its own context and on a shared one, with inputs that differ per thread,
 * round and call, comparing every element with the value computed here; then release the
 * context. The thread count (/proc/self/task) is read before anything, while the threads run,
 * and after everything is released: contexts share the process's worker threads (one queue per
 * spec, one local-task pool), so a second live context starts none, the count while the threads
 * run stays within what one context accounts for (plus the host threads), and it comes back to
 * where it started once every context is released. The exit status is 0 only if every check
 * holds. */
#define _POSIX_C_SOURCE 200809L

#include <rtx.h>

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { THREADS = 4, ROUNDS = 3, CALLS = 8, SHARED = 2, SCALE_LENGTH = 20000 };

/* IREE HAL element type code of f32: (FLOAT_IEEE 0x21 << 24) | 32 bits. */
#define ELEMENT_TYPE_F32 0x21000020u

static atomic_int failures;
static atomic_int checks;
static atomic_int most_threads;
static rtx_module_t* module;
static rtx_context_t* shared_contexts[SHARED];

/* Records a failed check with what failed (the first few only). */
static void fail(const char* what, int thread, int round, int call) {
  if (atomic_fetch_add(&failures, 1) < 10) {
    printf("  FAILED: %s (thread %d, round %d, call %d)\n", what, thread, round, call);
  }
}

/* Records an unexpected error; returns whether there was none. */
static bool succeeded(const char* what, rtx_error_t* error) {
  if (error == NULL) {
    return true;
  }
  if (atomic_fetch_add(&failures, 1) < 10) {
    printf("  FAILED: %s: %s: %s\n", what, rtx_status_code_name(rtx_error_code(error)), rtx_error_message(error));
  }
  rtx_error_delete(error);
  return false;
}

/* The number of threads of this process: the entries of /proc/self/task; -1 if unreadable. */
static int thread_count(void) {
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == NULL) {
    return -1;
  }
  int count = 0;
  for (struct dirent* entry = readdir(tasks); entry != NULL; entry = readdir(tasks)) {
    count += entry->d_name[0] != '.';
  }
  closedir(tasks);
  return count;
}

static void note_thread_count(void) {
  const int now = thread_count();
  int most = atomic_load(&most_threads);
  while (now > most && !atomic_compare_exchange_weak(&most_threads, &most, now)) {
  }
}

/* A context with the local-task device and the module; NULL (reported) on failure. Its work
 * queue (shared by every context that names it) has one worker and at most one blocking thread
 * (started on demand), so contexts in use have at most one thread more than a new one. */
static rtx_context_t* new_context(void) {
  rtx_context_options_t options;
  rtx_context_options_init(&options);
  options.work_queue = "mstd:1,1";
  rtx_context_t* context = NULL;
  if (!succeeded("rtx_context_new", rtx_context_new(&options, &context))) {
    return NULL;
  }
  if (!succeeded("rtx_context_add_device", rtx_context_add_device(context, "local-task")) ||
      !succeeded("rtx_context_add_module", rtx_context_add_module(context, module))) {
    rtx_context_release(context);
    return NULL;
  }
  return context;
}

/* Calls `function` with `count` arguments (taken over) and one tensor result; the result view
 * (the caller releases it) or NULL, reported. */
static rtx_buffer_view_t* call(rtx_context_t* context, const char* function, rtx_async_value_t** args, size_t count) {
  rtx_buffer_view_t* out = NULL;
  rtx_async_value_t* result = NULL;
  if (succeeded(function, rtx_context_invoke(context, function, args, count, &result, 1))) {
    if (succeeded("rtx_async_value_await", rtx_async_value_await(context, &result, 1))) {
      succeeded(function, rtx_async_value_get_buffer_view(result, &out));
    }
    rtx_async_value_release(result);
  }
  for (size_t i = 0; i < count; ++i) {
    rtx_async_value_release(args[i]);
  }
  return out;
}

/* An async value holding a new f32 tensor of `shape` over a copy of `values`; NULL on failure. */
static rtx_async_value_t* f32_tensor(const int64_t* shape, size_t rank, const float* values, size_t count) {
  rtx_buffer_view_t* view = NULL;
  if (!succeeded("rtx_buffer_view_new",
                 rtx_buffer_view_new(ELEMENT_TYPE_F32, shape, rank, values, count * sizeof(float), &view))) {
    return NULL;
  }
  rtx_async_value_t* value = rtx_async_value_new_buffer_view(view);
  rtx_buffer_view_release(view);
  return value;
}

/* Whether `view` holds `count` f32 elements equal to `expected` (exactly: every value here is a
 * small integer or a multiple of 1/4, so the products and sums are exact). */
static bool f32_equals(const rtx_buffer_view_t* view, const float* expected, size_t count) {
  if (view == NULL || rtx_buffer_view_element_type(view) != ELEMENT_TYPE_F32 ||
      rtx_buffer_view_byte_length(view) != count * sizeof(float)) {
    return false;
  }
  return memcmp(rtx_buffer_view_data(view), expected, count * sizeof(float)) == 0;
}

/* scale_dynamic(x, k) = x * k over SCALE_LENGTH elements. */
static void check_scale(rtx_context_t* context, int thread, int round, int call_index) {
  float* input = malloc(2 * SCALE_LENGTH * sizeof(float));
  if (input == NULL) {
    fail("malloc", thread, round, call_index);
    return;
  }
  float* expected = input + SCALE_LENGTH;
  const float k = (float)(thread * 100 + round * 10 + call_index) - 50.0f;
  for (int i = 0; i < SCALE_LENGTH; ++i) {
    input[i] = (float)((i + thread * 7 + call_index) % 1000) * 0.25f - 100.0f;
    expected[i] = input[i] * k;
  }
  const int64_t shape[1] = {SCALE_LENGTH};
  rtx_async_value_t* args[2] = {f32_tensor(shape, 1, input, SCALE_LENGTH), rtx_async_value_new_f32(k)};
  rtx_buffer_view_t* out = args[0] != NULL ? call(context, "scale_dynamic", args, 2) : NULL;
  if (args[0] == NULL) {
    rtx_async_value_release(args[1]);
  }
  if (!f32_equals(out, expected, SCALE_LENGTH) || rtx_buffer_view_rank(out) != 1 ||
      rtx_buffer_view_dim(out, 0) != SCALE_LENGTH) {
    fail("scale_dynamic(x, k) = x * k computed in C", thread, round, call_index);
  }
  atomic_fetch_add(&checks, 1);
  rtx_buffer_view_release(out);
  free(input);
}

/* matmul(a, b) = a . b for 4x8 and 8x4 inputs. */
static void check_matmul(rtx_context_t* context, int thread, int round, int call_index) {
  float a[4 * 8], b[8 * 4], expected[4 * 4];
  for (int i = 0; i < 32; ++i) {
    a[i] = (float)((i + thread + call_index) % 7) - 3.0f;
    b[i] = (float)((i * 3 + round) % 5) * 0.5f;
  }
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      float sum = 0.0f;
      for (int k = 0; k < 8; ++k) {
        sum += a[i * 8 + k] * b[k * 4 + j];
      }
      expected[i * 4 + j] = sum;
    }
  }
  const int64_t a_shape[2] = {4, 8}, b_shape[2] = {8, 4};
  rtx_async_value_t* args[2] = {f32_tensor(a_shape, 2, a, 32), f32_tensor(b_shape, 2, b, 32)};
  rtx_buffer_view_t* out = NULL;
  if (args[0] != NULL && args[1] != NULL) {
    out = call(context, "matmul", args, 2);
  } else {
    rtx_async_value_release(args[0]);
    rtx_async_value_release(args[1]);
  }
  if (!f32_equals(out, expected, 16)) {
    fail("matmul(a, b) = the 4x4 product computed in C", thread, round, call_index);
  }
  atomic_fetch_add(&checks, 1);
  rtx_buffer_view_release(out);
}

static void* run_thread(void* argument) {
  const int thread = (int)(intptr_t)argument;
  for (int round = 0; round < ROUNDS; ++round) {
    rtx_context_t* own = new_context();
    note_thread_count();
    rtx_context_t* shared = shared_contexts[(thread + round) % SHARED];
    for (int i = 0; own != NULL && shared != NULL && i < CALLS; ++i) {
      check_scale(own, thread, round, i);
      check_matmul(own, thread, round, i);
      check_scale(shared, thread, round, i);
      check_matmul(shared, thread, round, i);
    }
    note_thread_count();
    rtx_context_release(own);
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <programs_embedded.vmfb>\n", argv[0]);
    return 2;
  }
  const int before = thread_count();
  if (before < 1) {
    printf("cannot read /proc/self/task: this test counts threads there (Linux)\n");
    return 1;
  }
  if (!succeeded("rtx_module_load_file", rtx_module_load_file(argv[1], &module))) {
    return 1;
  }
  /* What the first context with its device costs in threads (the shared queue's worker and the
   * shared device workers); in use, the queue may add its one blocking thread. Released, its
   * threads stop with it: it was the only context. */
  rtx_context_t* probe = new_context();
  const int per_context = thread_count() - before;
  rtx_context_release(probe);
  const int after_probe = thread_count();
  for (int s = 0; s < SHARED; ++s) {
    shared_contexts[s] = new_context();
  }
  const int with_shared = thread_count();
  printf("%d host threads x %d rounds x %d calls of scale_dynamic (%d elements) and matmul on local-task,\n"
         "each on its own context and on one of %d shared ones\n",
         THREADS, ROUNDS, CALLS, SCALE_LENGTH, SHARED);
  printf("threads: %d before, %d with one context, %d after releasing it, %d with %d live contexts\n", before,
         before + per_context, after_probe, with_shared, SHARED);

  pthread_t threads[THREADS];
  int started = 0;
  for (; started < THREADS; ++started) {
    if (pthread_create(&threads[started], NULL, run_thread, (void*)(intptr_t)started) != 0) {
      fail("pthread_create", started, 0, 0);
      break;
    }
  }
  for (int t = 0; t < started; ++t) {
    pthread_join(threads[t], NULL);
  }
  for (int s = 0; s < SHARED; ++s) {
    rtx_context_release(shared_contexts[s]);
  }
  rtx_module_release(module);

  const int after = thread_count();
  const int most = atomic_load(&most_threads);
  const int bound = before + THREADS + per_context + 1;
  printf("threads: at most %d while running (bound %d), %d after every context is released\n", most, bound, after);
  if (per_context < 1) {
    fail("a local-task context starts worker threads", -1, -1, -1);
  }
  if (after_probe != before) {
    fail("the only context's threads stop when it is released", -1, -1, -1);
  }
  if (with_shared != before + per_context) {
    fail("a second live context starts no threads of its own", -1, -1, -1);
  }
  if (most > bound) {
    fail("thread count bounded by one context's threads while many are alive", -1, -1, -1);
  }
  if (after != before) {
    fail("thread count back to where it started", -1, -1, -1);
  }
  printf("%d results checked; %s\n", atomic_load(&checks),
         atomic_load(&failures) == 0 ? "all checks passed" : "SOME CHECKS FAILED");
  return atomic_load(&failures) == 0 ? 0 : 1;
}
