/* onnx_model: ONNX models loaded from C as modules, with the outputs onnxruntime computes.
 *
 *   onnx_model <folder> <name>...
 *
 * For each name, loads <folder>/<name>.onnx with rtx_module_load_file (the model is imported in
 * memory to a BEF graph whose function is named after the ONNX graph), reads the inputs
 * <name>.input_0.npy, <name>.input_1.npy, ... and the expected outputs <name>.output_K.npy
 * (tests/fixtures/onnx/architectures, written by architectures.py beside them), and on the
 * single-threaded queue and on a pool of two workers calls the function with rtx_context_call:
 * every output must have the expected element type and shape, and values within 1e-4 of the
 * largest expected magnitude. A call with one input too few must be INVALID_ARGUMENT. The exit
 * status is 0 only if every check holds. */
#include <rtx.h>

#include "npy.h"

enum { MAX_VALUES = 8 };

static int failures;

static void report(bool ok, const char* what, const char* name, const char* queue) {
  printf("  %-10s %-10s %-52s %s\n", name, queue, what, ok ? "ok" : "FAILED");
  if (!ok) {
    ++failures;
  }
}

/* Reports an unexpected error; returns whether there was none. */
static bool succeeded(const char* call, rtx_error_t* error) {
  if (error == NULL) {
    return true;
  }
  printf("  %s failed: %s: %s\n", call, rtx_status_code_name(rtx_error_code(error)), rtx_error_message(error));
  rtx_error_delete(error);
  ++failures;
  return false;
}

/* Reads <folder>/<name>.<kind>_0.npy, _1, ... into `arrays`; returns how many there are. */
static size_t read_numbered(const char* folder, const char* name, const char* kind, npy_array* arrays) {
  size_t count = 0;
  char path[4096];
  while (count < MAX_VALUES) {
    snprintf(path, sizeof path, "%s/%s.%s_%zu.npy", folder, name, kind, count);
    if (!npy_read(path, &arrays[count])) {
      break;
    }
    ++count;
  }
  return count;
}

/* Calls `name` with `inputs` on `context`, checking the results against `expected`. */
static void check_call(rtx_context_t* context, const char* name, const char* queue, rtx_buffer_view_t** inputs,
                       size_t num_inputs, const npy_array* expected, size_t num_outputs) {
  rtx_buffer_view_t* results[MAX_VALUES] = {NULL};
  if (!succeeded("rtx_context_call", rtx_context_call(context, name, inputs, num_inputs, results, num_outputs))) {
    return;
  }
  for (size_t k = 0; k < num_outputs; ++k) {
    int64_t shape[NPY_MAX_RANK] = {0};
    const size_t rank = rtx_buffer_view_rank(results[k]);
    for (size_t i = 0; i < rank && i < NPY_MAX_RANK; ++i) {
      shape[i] = rtx_buffer_view_dim(results[k], i);
    }
    char what[64];
    snprintf(what, sizeof what, "output %zu is onnxruntime's (type, shape, 1e-4)", k);
    report(rank <= NPY_MAX_RANK && npy_close(&expected[k], rtx_buffer_view_element_type(results[k]), shape, rank,
                                             rtx_buffer_view_data(results[k]), 1e-4),
           what, name, queue);
    rtx_buffer_view_release(results[k]);
  }
  rtx_error_t* error = rtx_context_call(context, name, inputs, num_inputs - 1, results, num_outputs);
  report(rtx_error_code(error) == RTX_STATUS_CODE_INVALID_ARGUMENT, "one input too few is INVALID_ARGUMENT", name,
         queue);
  rtx_error_delete(error);
}

static void check_model(const char* folder, const char* name) {
  npy_array inputs[MAX_VALUES], expected[MAX_VALUES];
  const size_t num_inputs = read_numbered(folder, name, "input", inputs);
  const size_t num_outputs = read_numbered(folder, name, "output", expected);
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.onnx", folder, name);
  rtx_module_t* module = NULL;
  rtx_buffer_view_t* views[MAX_VALUES] = {NULL};
  bool ready = num_inputs > 0 && num_outputs > 0;
  report(ready, "has inputs and expected outputs", name, "");
  ready = ready && succeeded("rtx_module_load_file", rtx_module_load_file(path, &module));
  for (size_t k = 0; ready && k < num_inputs; ++k) {
    ready = succeeded("rtx_buffer_view_new",
                      rtx_buffer_view_new(inputs[k].element_type, inputs[k].shape, inputs[k].rank, inputs[k].data,
                                          inputs[k].byte_length, &views[k]));
  }
  const char* queues[] = {"s", "mstd:2"};
  for (size_t q = 0; ready && q < sizeof queues / sizeof queues[0]; ++q) {
    rtx_context_options_t options;
    rtx_context_options_init(&options);
    options.work_queue = queues[q];
    rtx_context_t* context = NULL;
    if (!succeeded("rtx_context_new", rtx_context_new(&options, &context))) {
      continue;
    }
    if (succeeded("rtx_context_add_module", rtx_context_add_module(context, module))) {
      check_call(context, name, queues[q], views, num_inputs, expected, num_outputs);
    }
    rtx_context_release(context);
  }
  for (size_t k = 0; k < MAX_VALUES; ++k) {
    rtx_buffer_view_release(views[k]);
  }
  rtx_module_release(module);
  for (size_t k = 0; k < num_inputs; ++k) {
    npy_free(&inputs[k]);
  }
  for (size_t k = 0; k < num_outputs; ++k) {
    npy_free(&expected[k]);
  }
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s <folder> <name>...\n", argv[0]);
    return 2;
  }
  for (int i = 2; i < argc; ++i) {
    check_model(argv[1], argv[i]);
  }
  printf("onnx_model: %s\n", failures == 0 ? "every model gives onnxruntime's outputs" : "FAILED");
  return failures == 0 ? 0 : 1;
}
