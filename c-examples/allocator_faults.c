/* allocator_faults: a host allocator that refuses one request, over whole model runs.
 *
 *   allocator_faults <digits folder> <graphs.bef> <onnx folder> <onnx name>
 *
 * Three paths: the digit classifier compiled by IREE (<digits folder>/mlp.vmfb, on local-sync),
 * the same classifier as a BEF kernel graph (graphs.bef, function mlp), and an ONNX model
 * (<onnx folder>/<onnx name>.onnx with its <onnx name>.input_0.npy). Each path is first run with
 * an allocator that refuses nothing: it must make requests, and the context's memory stats must
 * count them. Then, for every N up to the number of requests that run made, a fresh context whose
 * allocator refuses request N takes the path from the start (device, module, call): each step
 * either succeeds or fails with RESOURCE_EXHAUSTED, and a call that succeeds gives the clean
 * run's bytes. The allocator then refuses nothing, and the same context finishes the steps left
 * with the clean run's bytes. Once the context is released, every block is back and the
 * allocator's destroy has run. The exit status is 0 only if every check holds. */
#include <rtx.h>
#include <stdatomic.h>

#include "npy.h"

enum { MAX_RESULTS = 8 };

static int failures;

static void check(bool ok, const char* path, const char* what) {
  if (!ok) {
    printf("  %-5s %s: FAILED\n", path, what);
    ++failures;
  }
}

/* A host allocator (malloc) that refuses request `fail_at` (numbered from 1; 0 refuses none). */
typedef struct failing_allocator {
  atomic_ulong requests;
  atomic_ulong fail_at;
  atomic_long live_blocks;
  atomic_int destroyed;
} failing_allocator_t;

static void* failing_allocate(void* user_data, size_t size, size_t align) {
  failing_allocator_t* allocator = user_data;
  const unsigned long request = atomic_fetch_add(&allocator->requests, 1) + 1;
  if (request == atomic_load(&allocator->fail_at)) {
    return NULL;
  }
  /* C11's aligned_alloc takes a size that is a multiple of the alignment. */
  void* block = aligned_alloc(align, (size + align - 1) / align * align);
  if (block == NULL) {
    return NULL;
  }
  atomic_fetch_add(&allocator->live_blocks, 1);
  return block;
}

static void failing_deallocate(void* user_data, void* ptr, size_t size, size_t align) {
  (void)size;
  (void)align;
  failing_allocator_t* allocator = user_data;
  free(ptr);
  atomic_fetch_sub(&allocator->live_blocks, 1);
}

static void failing_destroy(void* user_data) {
  failing_allocator_t* allocator = user_data;
  atomic_store(&allocator->destroyed, 1);
}

static rtx_context_t* new_context(failing_allocator_t* allocator) {
  rtx_allocator_callbacks_t callbacks = {
      .struct_size = sizeof callbacks,
      .user_data = allocator,
      .allocate = failing_allocate,
      .deallocate = failing_deallocate,
      .destroy = failing_destroy,
  };
  rtx_context_options_t options;
  rtx_context_options_init(&options);
  options.work_queue = "s"; /* one thread: the same requests in the same order every run */
  options.allocator = &callbacks;
  rtx_context_t* context = NULL;
  rtx_error_t* error = rtx_context_new(&options, &context);
  if (error != NULL) {
    printf("  rtx_context_new: %s\n", rtx_error_message(error));
    rtx_error_delete(error);
    ++failures;
  }
  return context;
}

/* A path: its device (NULL for none), module, function and input. */
typedef struct model_path {
  const char* name;
  const char* device;
  rtx_module_t* module;
  const char* function;
  rtx_buffer_view_t* input;
  size_t num_results;
} model_path_t;

/* The results' bytes, one block of `lengths[k]` bytes each. */
typedef struct results {
  void* bytes[MAX_RESULTS];
  size_t lengths[MAX_RESULTS];
} results_t;

static void results_free(results_t* results) {
  for (size_t k = 0; k < MAX_RESULTS; ++k) {
    free(results->bytes[k]);
    results->bytes[k] = NULL;
  }
}

static bool results_equal(const results_t* a, const results_t* b, size_t count) {
  for (size_t k = 0; k < count; ++k) {
    if (a->lengths[k] != b->lengths[k] || memcmp(a->bytes[k], b->bytes[k], a->lengths[k]) != 0) {
      return false;
    }
  }
  return true;
}

/* How far a context got: steps done are not done again. */
typedef struct progress {
  bool device;
  bool module;
} progress_t;

/* Takes `path` on from where `progress` says, the results' bytes into `out`. */
static rtx_error_t* advance(rtx_context_t* context, const model_path_t* path, progress_t* progress, results_t* out) {
  rtx_error_t* error = NULL;
  if (path->device != NULL && !progress->device) {
    if ((error = rtx_context_add_device(context, path->device)) != NULL) {
      return error;
    }
    progress->device = true;
  }
  if (!progress->module) {
    if ((error = rtx_context_add_module(context, path->module)) != NULL) {
      return error;
    }
    progress->module = true;
  }
  rtx_buffer_view_t* results[MAX_RESULTS] = {NULL};
  if ((error = rtx_context_call(context, path->function, &path->input, 1, results, path->num_results)) != NULL) {
    return error;
  }
  for (size_t k = 0; k < path->num_results; ++k) {
    out->lengths[k] = rtx_buffer_view_byte_length(results[k]);
    out->bytes[k] = malloc(out->lengths[k] + 1);
    if (out->bytes[k] != NULL) {
      memcpy(out->bytes[k], rtx_buffer_view_data(results[k]), out->lengths[k]);
    }
    rtx_buffer_view_release(results[k]);
  }
  return NULL;
}

/* Every block back and destroy run once the context is gone. */
static void check_returned(const failing_allocator_t* allocator, const char* path, const char* when) {
  char what[128];
  snprintf(what, sizeof what, "%s: every block is back and destroy ran", when);
  check(atomic_load(&allocator->live_blocks) == 0 && atomic_load(&allocator->destroyed) == 1, path, what);
}

static void run_path(const model_path_t* path) {
  results_t clean = {{NULL}, {0}};
  failing_allocator_t counted = {0};
  rtx_context_t* context = new_context(&counted);
  if (context == NULL) {
    return;
  }
  progress_t progress = {false, false};
  rtx_error_t* error = advance(context, path, &progress, &clean);
  if (error != NULL) {
    printf("  %-5s the clean run failed: %s\n", path->name, rtx_error_message(error));
    rtx_error_delete(error);
    ++failures;
    rtx_context_release(context);
    results_free(&clean);
    return;
  }
  rtx_memory_stats_t stats = {.struct_size = sizeof stats};
  error = rtx_context_memory_stats(context, &stats);
  check(error == NULL && stats.allocations > 0 && stats.allocations <= atomic_load(&counted.requests) &&
            stats.peak_bytes >= stats.bytes_in_use && stats.peak_bytes > 0,
        path->name, "the clean run's memory is the allocator's, and counted");
  rtx_error_delete(error);
  rtx_context_release(context);
  check_returned(&counted, path->name, "the clean run");
  const unsigned long requests = atomic_load(&counted.requests);
  check(requests > 0, path->name, "the clean run asks the host allocator for memory");

  unsigned long refused = 0;
  for (unsigned long n = 1; n <= requests; ++n) {
    failing_allocator_t allocator = {0};
    atomic_store(&allocator.fail_at, n);
    context = new_context(&allocator);
    if (context == NULL) {
      continue;
    }
    char what[160];
    progress = (progress_t){false, false};
    results_t results = {{NULL}, {0}};
    error = advance(context, path, &progress, &results);
    if (error == NULL) {
      snprintf(what, sizeof what, "request %lu refused: the results are the clean run's", n);
      check(results_equal(&results, &clean, path->num_results), path->name, what);
    } else {
      ++refused;
      snprintf(what, sizeof what, "request %lu refused: RESOURCE_EXHAUSTED (got %s: %s)", n,
               rtx_status_code_name(rtx_error_code(error)), rtx_error_message(error));
      check(rtx_error_code(error) == RTX_STATUS_CODE_RESOURCE_EXHAUSTED, path->name, what);
      rtx_error_delete(error);
    }
    results_free(&results);
    atomic_store(&allocator.fail_at, 0);
    error = advance(context, path, &progress, &results);
    snprintf(what, sizeof what, "after request %lu was refused, the context finishes with the clean results", n);
    check(error == NULL && results_equal(&results, &clean, path->num_results), path->name, what);
    rtx_error_delete(error);
    results_free(&results);
    rtx_context_release(context);
    snprintf(what, sizeof what, "request %lu refused", n);
    check_returned(&allocator, path->name, what);
  }
  check(refused > 0, path->name, "some refusal was felt");
  printf("  %-5s %lu requests of a clean run, each refused in turn: %lu runs failed cleanly, the others matched\n",
         path->name, requests, refused);
  results_free(&clean);
}

static rtx_module_t* load(const char* file) {
  rtx_module_t* module = NULL;
  rtx_error_t* error = rtx_module_load_file(file, &module);
  if (error != NULL) {
    printf("  loading %s: %s\n", file, rtx_error_message(error));
    rtx_error_delete(error);
    ++failures;
  }
  return module;
}

static rtx_buffer_view_t* view_of(const npy_array* array) {
  rtx_buffer_view_t* view = NULL;
  rtx_error_t* error =
      rtx_buffer_view_new(array->element_type, array->shape, array->rank, array->data, array->byte_length, &view);
  if (error != NULL) {
    printf("  rtx_buffer_view_new: %s\n", rtx_error_message(error));
    rtx_error_delete(error);
    ++failures;
  }
  return view;
}

/* How many <folder>/<name>.output_K.npy files there are. */
static size_t count_outputs(const char* folder, const char* name) {
  size_t count = 0;
  char file[4096];
  for (; count < MAX_RESULTS; ++count) {
    snprintf(file, sizeof file, "%s/%s.output_%zu.npy", folder, name, count);
    FILE* f = fopen(file, "rb");
    if (f == NULL) {
      break;
    }
    fclose(f);
  }
  return count;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s <digits folder> <graphs.bef> <onnx folder> <onnx name>\n", argv[0]);
    return 2;
  }
  char file[4096];
  npy_array digit, onnx_input;
  snprintf(file, sizeof file, "%s/digit_3.npy", argv[1]);
  bool ready = npy_read(file, &digit);
  snprintf(file, sizeof file, "%s/%s.input_0.npy", argv[3], argv[4]);
  ready = npy_read(file, &onnx_input) && ready;
  if (!ready) {
    printf("allocator_faults: FAILED (inputs missing)\n");
    return 1;
  }
  snprintf(file, sizeof file, "%s/mlp.vmfb", argv[1]);
  model_path_t vm = {"VM", "local-sync", load(file), "predict", view_of(&digit), 1};
  model_path_t bef = {"BEF", NULL, load(argv[2]), "mlp", vm.input, 1};
  snprintf(file, sizeof file, "%s/%s.onnx", argv[3], argv[4]);
  model_path_t onnx = {"ONNX", NULL, load(file), argv[4], view_of(&onnx_input), count_outputs(argv[3], argv[4])};
  const model_path_t* paths[] = {&vm, &bef, &onnx};
  for (size_t p = 0; p < sizeof paths / sizeof paths[0]; ++p) {
    if (paths[p]->module != NULL && paths[p]->input != NULL && paths[p]->num_results > 0) {
      run_path(paths[p]);
    } else {
      check(false, paths[p]->name, "the module and its input load");
    }
  }
  rtx_module_release(vm.module);
  rtx_module_release(bef.module);
  rtx_module_release(onnx.module);
  rtx_buffer_view_release(vm.input);
  rtx_buffer_view_release(onnx.input);
  npy_free(&digit);
  npy_free(&onnx_input);
  printf("allocator_faults: %s\n",
         failures == 0 ? "every refused request is RESOURCE_EXHAUSTED or harmless, and nothing leaks" : "FAILED");
  return failures == 0 ? 0 : 1;
}
