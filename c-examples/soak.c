/* soak: host threads mixing VM, BEF and ONNX calls on shared and private contexts for a while,
 * creating, cancelling and releasing contexts with calls in flight.
 *
 *   soak <seconds> <digits folder> <graphs.bef> <onnx folder> <onnx name>
 *
 * Three paths: the digit classifier compiled by IREE (mlp.vmfb, `predict`, on local-task), the
 * same classifier as a BEF kernel graph (graphs.bef, `mlp`), and an ONNX model (<name>.onnx on
 * <name>.input_0.npy). A clean context gives each input's expected bytes first (the ten digits
 * for the classifier). Then THREADS host threads loop until the time is up, each iteration one
 * of:
 *   - a call on one of two shared contexts (`mstd`, every module), compared byte for byte;
 *   - a private context (`mstd` or `s`, an allocator of this program's), modules added, two
 *     calls compared, released;
 *   - chaos: a private context with calls invoked and not awaited, then cancelled (its results
 *     must each be the expected bytes or CANCELLED) or released at once with the calls in flight
 *     (their results dropped unread).
 * The main thread samples the resident set (/proc/self/statm) every 100 ms. At the end: every
 * result checked was right; the resident set at the end is within 5% of what it was once the
 * first tenth of the run (the warm-up) was over, for runs of a minute or more; every private
 * context's allocator got all its
 * blocks back and was destroyed; and once everything is released the thread count
 * (/proc/self/task) is where it started. The exit status is 0 only if every check holds. */
#define _POSIX_C_SOURCE 200809L

#include <rtx.h>

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "npy.h"

enum { THREADS = 8, SHARED = 2, DIGITS = 10, PATHS = 3, MAX_RESULTS = 8 };

/* Runs this long or longer check the resident set; a shorter one (a test's few seconds, under
 * valgrind too) has too short a warm-up for its growth to mean anything, and only reports it. */
enum { RSS_CHECKED_FROM = 60 };

static atomic_int failures;
static atomic_long calls_checked[PATHS];
static atomic_long private_contexts, cancelled_contexts, dropped_contexts;
static atomic_long allocators_live_blocks, allocators_destroyed;

static void fail(const char* what, const char* detail) {
  if (atomic_fetch_add(&failures, 1) < 10) {
    printf("  FAILED: %s%s%s\n", what, detail[0] ? ": " : "", detail);
  }
}

/* Records an unexpected error; returns whether there was none. */
static bool succeeded(const char* what, rtx_error_t* error) {
  if (error == NULL) {
    return true;
  }
  fail(what, rtx_error_message(error));
  rtx_error_delete(error);
  return false;
}

/* A path: its module and function, its inputs and each input's expected result bytes. */
typedef struct model_path {
  const char* name;
  rtx_module_t* module;
  const char* function;
  char qualified[256]; /* module.function: a bare name means the latest module's */
  size_t num_inputs;   /* inputs, each called alone */
  rtx_buffer_view_t* inputs[DIGITS];
  size_t num_results;
  void* expected[DIGITS][MAX_RESULTS];
  size_t expected_length[DIGITS][MAX_RESULTS];
} model_path_t;

static model_path_t paths[PATHS];
static rtx_context_t* shared[SHARED];

/* The private contexts' allocator: malloc, counted over all of them. */
static void* soak_allocate(void* user_data, size_t size, size_t align) {
  (void)user_data;
  void* block = aligned_alloc(align, (size + align - 1) / align * align);
  if (block != NULL) {
    atomic_fetch_add(&allocators_live_blocks, 1);
  }
  return block;
}

static void soak_deallocate(void* user_data, void* ptr, size_t size, size_t align) {
  (void)user_data;
  (void)size;
  (void)align;
  free(ptr);
  atomic_fetch_sub(&allocators_live_blocks, 1);
}

static void soak_destroy(void* user_data) {
  (void)user_data;
  atomic_fetch_add(&allocators_destroyed, 1);
}

/* A context with every module: shared ones on the process allocator, private ones on ours. */
static rtx_context_t* new_context(const char* queue, bool private_allocator) {
  rtx_allocator_callbacks_t callbacks = {
      .struct_size = sizeof callbacks,
      .allocate = soak_allocate,
      .deallocate = soak_deallocate,
      .destroy = soak_destroy,
  };
  rtx_context_options_t options;
  rtx_context_options_init(&options);
  options.work_queue = queue;
  options.allocator = private_allocator ? &callbacks : NULL;
  rtx_context_t* context = NULL;
  if (!succeeded("rtx_context_new", rtx_context_new(&options, &context))) {
    return NULL;
  }
  if (private_allocator) {
    atomic_fetch_add(&private_contexts, 1);
  }
  bool ready = succeeded("rtx_context_add_device", rtx_context_add_device(context, "local-task"));
  for (size_t p = 0; ready && p < PATHS; ++p) {
    ready = succeeded("rtx_context_add_module", rtx_context_add_module(context, paths[p].module));
  }
  if (!ready) {
    rtx_context_release(context);
    return NULL;
  }
  return context;
}

/* Whether `view` holds result `k` of input `i` of `path`. */
static bool expected_view(const model_path_t* path, size_t i, size_t k, const rtx_buffer_view_t* view) {
  return rtx_buffer_view_byte_length(view) == path->expected_length[i][k] &&
         memcmp(rtx_buffer_view_data(view), path->expected[i][k], path->expected_length[i][k]) == 0;
}

/* Calls input `i` of `path` on `context` and checks every result. */
static void call_and_check(rtx_context_t* context, size_t p, size_t i) {
  const model_path_t* path = &paths[p];
  rtx_buffer_view_t* results[MAX_RESULTS] = {NULL};
  if (!succeeded(path->name,
                 rtx_context_call(context, path->qualified, &path->inputs[i], 1, results, path->num_results))) {
    return;
  }
  for (size_t k = 0; k < path->num_results; ++k) {
    if (!expected_view(path, i, k, results[k])) {
      fail(path->name, "a result differs from the clean run's");
    }
    rtx_buffer_view_release(results[k]);
  }
  atomic_fetch_add(&calls_checked[p], 1);
}

/* Invokes input `i` of `path` without waiting; the results go to `results`. */
static bool invoke(rtx_context_t* context, size_t p, size_t i, rtx_async_value_t** results) {
  rtx_async_value_t* argument = rtx_async_value_new_buffer_view(paths[p].inputs[i]);
  const bool ok = succeeded("rtx_context_invoke", rtx_context_invoke(context, paths[p].qualified, &argument, 1,
                                                                      results, paths[p].num_results));
  rtx_async_value_release(argument);
  return ok;
}

/* A private context with calls in flight: cancelled and its results checked, or released at once. */
static void chaos(unsigned seed) {
  rtx_context_t* context = new_context(seed % 2 ? "mstd" : "s", true);
  if (context == NULL) {
    return;
  }
  enum { IN_FLIGHT = 4 };
  rtx_async_value_t* results[IN_FLIGHT][MAX_RESULTS] = {{NULL}};
  size_t path_of[IN_FLIGHT], input_of[IN_FLIGHT];
  bool invoked[IN_FLIGHT] = {false};
  for (size_t c = 0; c < IN_FLIGHT; ++c) {
    path_of[c] = (seed + c) % PATHS;
    input_of[c] = (seed / 3 + c) % paths[path_of[c]].num_inputs;
    invoked[c] = invoke(context, path_of[c], input_of[c], results[c]);
  }
  const bool cancel = (seed / 2) % 2 == 0;
  if (cancel) {
    rtx_context_cancel(context);
    atomic_fetch_add(&cancelled_contexts, 1);
    for (size_t c = 0; c < IN_FLIGHT; ++c) {
      if (!invoked[c]) {
        continue;
      }
      const model_path_t* path = &paths[path_of[c]];
      succeeded("rtx_async_value_await", rtx_async_value_await(context, results[c], path->num_results));
      for (size_t k = 0; k < path->num_results; ++k) {
        rtx_buffer_view_t* view = NULL;
        rtx_error_t* error = rtx_async_value_get_buffer_view(results[c][k], &view);
        if (error != NULL) {
          if (rtx_error_code(error) != RTX_STATUS_CODE_CANCELLED) {
            fail("a call of a cancelled context: neither its result nor CANCELLED", rtx_error_message(error));
          }
          rtx_error_delete(error);
        } else {
          if (!expected_view(path, input_of[c], k, view)) {
            fail(path->name, "a result of a cancelled context's call differs from the clean run's");
          }
          rtx_buffer_view_release(view);
        }
      }
    }
  } else {
    atomic_fetch_add(&dropped_contexts, 1);
  }
  rtx_context_release(context); /* with the calls still in flight when not cancelled */
  for (size_t c = 0; c < IN_FLIGHT; ++c) {
    for (size_t k = 0; invoked[c] && k < paths[path_of[c]].num_results; ++k) {
      rtx_async_value_release(results[c][k]);
    }
  }
}

static atomic_bool stop;

static void* host_thread(void* arg) {
  unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u;
  while (!atomic_load(&stop)) {
    seed = seed * 1103515245u + 12345u;
    const unsigned pick = (seed >> 8) % 16;
    const size_t p = (seed >> 12) % PATHS;
    const size_t i = (seed >> 16) % paths[p].num_inputs;
    if (pick < 12) {
      call_and_check(shared[pick % SHARED], p, i);
    } else if (pick < 14) {
      rtx_context_t* context = new_context(pick % 2 ? "mstd" : "s", true);
      if (context != NULL) {
        call_and_check(context, p, i);
        call_and_check(context, (p + 1) % PATHS, i % paths[(p + 1) % PATHS].num_inputs);
        rtx_context_release(context);
      }
    } else {
      chaos(seed >> 4);
    }
  }
  return NULL;
}

static long resident_kib(void) {
  FILE* statm = fopen("/proc/self/statm", "r");
  long pages = 0, resident = 0;
  if (statm != NULL) {
    if (fscanf(statm, "%ld %ld", &pages, &resident) != 2) {
      resident = 0;
    }
    fclose(statm);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static int thread_count(void) {
  DIR* dir = opendir("/proc/self/task");
  int count = 0;
  if (dir == NULL) {
    return -1;
  }
  for (struct dirent* entry; (entry = readdir(dir)) != NULL;) {
    count += entry->d_name[0] != '.';
  }
  closedir(dir);
  return count;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static rtx_module_t* load(const char* file) {
  rtx_module_t* module = NULL;
  succeeded(file, rtx_module_load_file(file, &module));
  return module;
}

static rtx_buffer_view_t* view_of(const char* file) {
  npy_array array;
  rtx_buffer_view_t* view = NULL;
  if (!npy_read(file, &array)) {
    fail("reading an input", file);
    return NULL;
  }
  succeeded("rtx_buffer_view_new", rtx_buffer_view_new(array.element_type, array.shape, array.rank, array.data,
                                                       array.byte_length, &view));
  npy_free(&array);
  return view;
}

/* Reads the inputs, and the expected bytes from a clean context. */
static bool prepare(char** argv) {
  char file[4096];
  paths[0] = (model_path_t){.name = "VM", .function = "predict", .num_inputs = DIGITS, .num_results = 1};
  paths[1] = (model_path_t){.name = "BEF", .function = "mlp", .num_inputs = DIGITS, .num_results = 1};
  paths[2] = (model_path_t){.name = "ONNX", .function = argv[5], .num_inputs = 1};
  snprintf(file, sizeof file, "%s/mlp.vmfb", argv[2]);
  paths[0].module = load(file);
  paths[1].module = load(argv[3]);
  snprintf(file, sizeof file, "%s/%s.onnx", argv[4], argv[5]);
  paths[2].module = load(file);
  for (size_t d = 0; d < DIGITS; ++d) {
    snprintf(file, sizeof file, "%s/digit_%zu.npy", argv[2], d);
    paths[0].inputs[d] = view_of(file);
    paths[1].inputs[d] = rtx_buffer_view_retain(paths[0].inputs[d]);
  }
  snprintf(file, sizeof file, "%s/%s.input_0.npy", argv[4], argv[5]);
  paths[2].inputs[0] = view_of(file);
  for (; paths[2].num_results < MAX_RESULTS; ++paths[2].num_results) {
    snprintf(file, sizeof file, "%s/%s.output_%zu.npy", argv[4], argv[5], paths[2].num_results);
    FILE* f = fopen(file, "rb");
    if (f == NULL) {
      break;
    }
    fclose(f);
  }
  if (atomic_load(&failures) > 0 || paths[2].num_results == 0) {
    return false;
  }
  for (size_t p = 0; p < PATHS; ++p) {
    snprintf(paths[p].qualified, sizeof paths[p].qualified, "%s.%s", rtx_module_name(paths[p].module),
             paths[p].function);
  }
  rtx_context_t* clean = new_context("s", false);
  for (size_t p = 0; clean != NULL && p < PATHS; ++p) {
    for (size_t i = 0; i < paths[p].num_inputs; ++i) {
      rtx_buffer_view_t* results[MAX_RESULTS] = {NULL};
      if (!succeeded("the clean run", rtx_context_call(clean, paths[p].qualified, &paths[p].inputs[i], 1, results,
                                                       paths[p].num_results))) {
        continue;
      }
      for (size_t k = 0; k < paths[p].num_results; ++k) {
        paths[p].expected_length[i][k] = rtx_buffer_view_byte_length(results[k]);
        paths[p].expected[i][k] = malloc(paths[p].expected_length[i][k] + 1);
        memcpy(paths[p].expected[i][k], rtx_buffer_view_data(results[k]), paths[p].expected_length[i][k]);
        rtx_buffer_view_release(results[k]);
      }
    }
  }
  rtx_context_release(clean);
  return clean != NULL && atomic_load(&failures) == 0;
}

static void release_paths(void) {
  for (size_t p = 0; p < PATHS; ++p) {
    for (size_t i = 0; i < paths[p].num_inputs; ++i) {
      rtx_buffer_view_release(paths[p].inputs[i]);
      for (size_t k = 0; k < MAX_RESULTS; ++k) {
        free(paths[p].expected[i][k]);
      }
    }
    rtx_module_release(paths[p].module);
  }
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s <seconds> <digits folder> <graphs.bef> <onnx folder> <onnx name>\n", argv[0]);
    return 2;
  }
  const double seconds = atof(argv[1]);
  const int threads_before = thread_count();
  if (!prepare(argv)) {
    printf("soak: FAILED (the clean run)\n");
    release_paths();
    return 1;
  }
  for (size_t s = 0; s < SHARED; ++s) {
    shared[s] = new_context("mstd", false);
  }
  pthread_t threads[THREADS];
  for (uintptr_t t = 0; t < THREADS; ++t) {
    pthread_create(&threads[t], NULL, host_thread, (void*)(t + 1));
  }
  const double start = now();
  long warm = 0, most = 0, last = 0;
  int most_threads = 0;
  for (double elapsed = 0; elapsed < seconds; elapsed = now() - start) {
    struct timespec tick = {0, 100 * 1000 * 1000};
    nanosleep(&tick, NULL);
    last = resident_kib();
    most = last > most ? last : most;
    if (warm == 0 && now() - start >= seconds / 10) {
      warm = last;
    }
    const int count = thread_count();
    most_threads = count > most_threads ? count : most_threads;
  }
  atomic_store(&stop, true);
  for (int t = 0; t < THREADS; ++t) {
    pthread_join(threads[t], NULL);
  }
  for (size_t s = 0; s < SHARED; ++s) {
    rtx_context_release(shared[s]);
  }
  release_paths();
  const double growth = warm > 0 ? (double)last / (double)warm - 1.0 : 0.0;
  const int threads_after = thread_count();
  printf("soak: %.0f s, %d host threads: %ld VM, %ld BEF, %ld ONNX calls checked; %ld private contexts (%ld "
         "cancelled with calls in flight, %ld released with calls in flight)\n",
         seconds, THREADS, atomic_load(&calls_checked[0]), atomic_load(&calls_checked[1]),
         atomic_load(&calls_checked[2]), atomic_load(&private_contexts), atomic_load(&cancelled_contexts),
         atomic_load(&dropped_contexts));
  printf("soak: resident set %ld KiB after warm-up, %ld KiB at the end (%+.1f%%), %ld KiB at most; threads %d "
         "before, %d at most, %d after\n",
         warm, last, 100.0 * growth, most, threads_before, most_threads, threads_after);
  if (seconds >= RSS_CHECKED_FROM && growth > 0.05) {
    fail("the resident set grew more than 5% after warm-up", "");
  }
  if (atomic_load(&allocators_destroyed) != atomic_load(&private_contexts) ||
      atomic_load(&allocators_live_blocks) != 0) {
    fail("a private context's allocator did not get its blocks back or was not destroyed", "");
  }
  if (threads_after != threads_before) {
    fail("threads are left once everything is released", "");
  }
  for (size_t p = 0; p < PATHS; ++p) {
    if (atomic_load(&calls_checked[p]) == 0) {
      fail(paths[p].name, "no call was checked");
    }
  }
  printf("soak: %s\n", atomic_load(&failures) == 0 ? "every result right, nothing left behind" : "FAILED");
  return atomic_load(&failures) == 0 ? 0 : 1;
}
