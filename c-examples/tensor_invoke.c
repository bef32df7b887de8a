/* tensor_invoke: tensor programs compiled by iree-compile, called from C with buffer views.
 *
 *   tensor_invoke <programs_embedded.vmfb> [<programs_vmvx.vmfb> ...]
 *
 * For each module (tests/fixtures/hal_run, compiled from tests/fixtures/hal_run/src/programs.mlir
 * for the embedded-ELF and VMVX CPU targets) and each work queue kind: checks that the module is
 * refused by a context without a device, gives the context the local-sync device, adds the
 * module, and invokes
 *   matmul(tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
 *   dense_relu(tensor<1x4xf32>) -> tensor<1x3xf32>   (constant weights and bias inside the module)
 * with buffer views in async values, comparing every element with the value computed here. A
 * tensor of the wrong shape must come back as the program's INVALID_ARGUMENT. Then the same
 * through rtx_context_call, buffer views in and out. The exit status is 0 only if every check
 * holds. */
#include <rtx.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* IREE HAL element type code of f32: (FLOAT_IEEE 0x21 << 24) | 32 bits. */
#define ELEMENT_TYPE_F32 0x21000020u

static int failures;

static void report(bool ok, const char* what) {
  printf("  %-64s %s\n", what, ok ? "ok" : "FAILED");
  if (!ok) {
    ++failures;
  }
}

/* Reports an unexpected error from a call that must succeed; returns whether it succeeded. */
static bool succeeded(const char* call, rtx_error_t* error) {
  if (error == NULL) {
    return true;
  }
  printf("  %s failed: %s: %s\n", call, rtx_status_code_name(rtx_error_code(error)), rtx_error_message(error));
  ++failures;
  rtx_error_delete(error);
  return false;
}

/* A new f32 buffer view of `rank` dimensions over a copy of `values`; NULL on failure. */
static rtx_buffer_view_t* f32_view(const int64_t* shape, size_t rank, const float* values, size_t count) {
  rtx_buffer_view_t* view = NULL;
  succeeded("rtx_buffer_view_new",
            rtx_buffer_view_new(ELEMENT_TYPE_F32, shape, rank, values, count * sizeof(float), &view));
  return view;
}

/* Calls `function` with tensor arguments and one tensor result; returns the result view (the
 * caller releases it) or NULL, after reporting why. */
static rtx_buffer_view_t* call(rtx_context_t* context, const char* function, rtx_buffer_view_t* const* views,
                               size_t count) {
  rtx_async_value_t* args[4] = {NULL, NULL, NULL, NULL};
  for (size_t i = 0; i < count; ++i) {
    args[i] = rtx_async_value_new_buffer_view(views[i]);
  }
  rtx_buffer_view_t* out = NULL;
  rtx_async_value_t* result = NULL;
  if (succeeded("rtx_context_invoke", rtx_context_invoke(context, function, args, count, &result, 1))) {
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

/* Whether `view` is an f32 tensor of `shape` whose elements equal `expected` (to 1e-5). */
static bool f32_view_equals(const rtx_buffer_view_t* view, const int64_t* shape, size_t rank, const float* expected,
                            size_t count) {
  if (view == NULL || rtx_buffer_view_element_type(view) != ELEMENT_TYPE_F32 || rtx_buffer_view_rank(view) != rank ||
      rtx_buffer_view_byte_length(view) != count * sizeof(float)) {
    return false;
  }
  for (size_t i = 0; i < rank; ++i) {
    if (rtx_buffer_view_dim(view, i) != shape[i]) {
      return false;
    }
  }
  float actual[16];
  if (count > sizeof actual / sizeof actual[0] ||
      !succeeded("rtx_buffer_view_copy_data", rtx_buffer_view_copy_data(view, actual, sizeof actual))) {
    return false;
  }
  /* The borrowed pointer shows the same bytes. */
  if (memcmp(rtx_buffer_view_data(view), actual, count * sizeof(float)) != 0) {
    return false;
  }
  for (size_t i = 0; i < count; ++i) {
    const float difference = actual[i] > expected[i] ? actual[i] - expected[i] : expected[i] - actual[i];
    if (difference > 1e-5f) {
      printf("    element %zu: %g, expected %g\n", i, (double)actual[i], (double)expected[i]);
      return false;
    }
  }
  return true;
}

static void run_matmul(rtx_context_t* context) {
  float a[4 * 8], b[8 * 4], expected[4 * 4];
  for (int i = 0; i < 32; ++i) {
    a[i] = (float)(i % 7) - 3.0f;
    b[i] = (float)(i % 5) * 0.5f;
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
  const int64_t a_shape[2] = {4, 8}, b_shape[2] = {8, 4}, out_shape[2] = {4, 4};
  rtx_buffer_view_t* views[2] = {f32_view(a_shape, 2, a, 32), f32_view(b_shape, 2, b, 32)};
  rtx_buffer_view_t* out = views[0] != NULL && views[1] != NULL ? call(context, "matmul", views, 2) : NULL;
  report(f32_view_equals(out, out_shape, 2, expected, 16), "matmul(4x8, 8x4) = the 4x4 product computed in C");
  if (out != NULL) {
    printf("    row 0: [%g, %g, %g, %g]\n", (double)expected[0], (double)expected[1], (double)expected[2],
           (double)expected[3]);
  }
  rtx_buffer_view_release(out);
  rtx_buffer_view_release(views[0]);
  rtx_buffer_view_release(views[1]);
}

/* dense_relu's input here, and its result computed in C: relu(x . W + b). */
static const float dense_relu_x[4] = {0.5f, -1.0f, 2.0f, 1.0f};

static void dense_relu_expected(float expected[3]) {
  /* The constants of @dense_relu in tests/fixtures/hal_run/src/programs.mlir. */
  static const float weights[4][3] = {{1.0f, -1.0f, 0.5f}, {2.0f, 0.0f, -0.5f}, {-1.0f, 1.0f, 1.0f}, {0.5f, 2.0f, -2.0f}};
  static const float bias[3] = {0.5f, -1.0f, 0.25f};
  for (int j = 0; j < 3; ++j) {
    float sum = bias[j];
    for (int k = 0; k < 4; ++k) {
      sum += dense_relu_x[k] * weights[k][j];
    }
    expected[j] = sum > 0.0f ? sum : 0.0f;
  }
}

static void run_dense_relu(rtx_context_t* context) {
  const float* x = dense_relu_x;
  float expected[3];
  dense_relu_expected(expected);
  const int64_t x_shape[2] = {1, 4}, out_shape[2] = {1, 3};
  rtx_buffer_view_t* input = f32_view(x_shape, 2, x, 4);
  rtx_buffer_view_t* out = input != NULL ? call(context, "module.dense_relu", &input, 1) : NULL;
  report(f32_view_equals(out, out_shape, 2, expected, 3), "dense_relu(x) = relu(x . W + b) computed in C");
  if (out != NULL) {
    printf("    [%g, %g, %g]\n", (double)expected[0], (double)expected[1], (double)expected[2]);
  }
  rtx_buffer_view_release(out);
  rtx_buffer_view_release(input);
}

/* A 1x5 tensor for dense_relu's 1x4 input: the program's own check fails the result. */
static void run_wrong_shape(rtx_context_t* context) {
  const float x[5] = {0};
  const int64_t shape[2] = {1, 5};
  rtx_buffer_view_t* input = f32_view(shape, 2, x, 5);
  rtx_async_value_t* arg = rtx_async_value_new_buffer_view(input);
  rtx_async_value_t* result = NULL;
  rtx_error_t* error = NULL;
  if (succeeded("rtx_context_invoke", rtx_context_invoke(context, "dense_relu", &arg, 1, &result, 1)) &&
      succeeded("rtx_async_value_await", rtx_async_value_await(context, &result, 1))) {
    error = rtx_async_value_get_error(result);
  }
  report(rtx_error_code(error) == RTX_STATUS_CODE_INVALID_ARGUMENT &&
             strstr(rtx_error_message(error), "shape dimension 1 mismatch") != NULL,
         "dense_relu(1x5): the result is the program's INVALID_ARGUMENT");
  if (error != NULL) {
    printf("    (%s)\n", rtx_error_message(error));
  }
  rtx_error_delete(error);
  rtx_async_value_release(result);
  rtx_async_value_release(arg);
  rtx_buffer_view_release(input);
}

/* rtx_context_call: dense_relu with buffer views in and out and no async values; the result
 * described by rtx_buffer_view_info; a wrong shape and NULL arguments refused, nothing written. */
static void run_call(rtx_context_t* context) {
  float expected[3];
  dense_relu_expected(expected);
  const int64_t x_shape[2] = {1, 4}, out_shape[2] = {1, 3}, wrong_shape[2] = {1, 5};
  const float zeros[5] = {0};
  rtx_buffer_view_t* input = f32_view(x_shape, 2, dense_relu_x, 4);
  rtx_buffer_view_t* wrong = f32_view(wrong_shape, 2, zeros, 5);
  rtx_buffer_view_t* out = NULL;
  if (input != NULL && succeeded("rtx_context_call", rtx_context_call(context, "dense_relu", &input, 1, &out, 1))) {
    report(f32_view_equals(out, out_shape, 2, expected, 3), "rtx_context_call: dense_relu(x) as computed in C");
    rtx_buffer_view_info_t info;
    info.struct_size = sizeof info;
    report(succeeded("rtx_buffer_view_info", rtx_buffer_view_info(out, &info)) &&
               info.element_type == ELEMENT_TYPE_F32 && info.rank == 2 && info.shape[0] == 1 && info.shape[1] == 3 &&
               info.data == rtx_buffer_view_data(out) && info.byte_length == 3 * sizeof(float),
           "rtx_buffer_view_info: type, shape, data and length in one call");
    rtx_buffer_view_release(out);
  }
  out = NULL;
  rtx_error_t* error = wrong != NULL ? rtx_context_call(context, "dense_relu", &wrong, 1, &out, 1) : NULL;
  report(rtx_error_code(error) == RTX_STATUS_CODE_INVALID_ARGUMENT &&
             strstr(rtx_error_message(error), "shape dimension 1 mismatch") != NULL && out == NULL,
         "rtx_context_call: dense_relu(1x5) fails with the program's INVALID_ARGUMENT");
  rtx_error_delete(error);
  error = rtx_context_call(context, "dense_relu", NULL, 1, &out, 1);
  report(rtx_error_code(error) == RTX_STATUS_CODE_INVALID_ARGUMENT && out == NULL,
         "rtx_context_call: NULL arguments are INVALID_ARGUMENT");
  rtx_error_delete(error);
  rtx_buffer_view_release(wrong);
  rtx_buffer_view_release(input);
}

static void run_module(const char* path) {
  rtx_module_t* module = NULL;
  if (!succeeded("rtx_module_load_file", rtx_module_load_file(path, &module))) {
    return;
  }
  printf("%s: module '%s', %zu exported functions\n", path, rtx_module_name(module), rtx_module_function_count(module));
  const char* queues[] = {"s", "mstd:2,2"};
  for (size_t q = 0; q < sizeof queues / sizeof queues[0]; ++q) {
    printf(" work queue '%s':\n", queues[q]);
    rtx_context_options_t options;
    rtx_context_options_init(&options);
    options.work_queue = queues[q];
    rtx_context_t* context = NULL;
    if (!succeeded("rtx_context_new", rtx_context_new(&options, &context))) {
      continue;
    }
    rtx_error_t* error = rtx_context_add_module(context, module);
    report(rtx_error_code(error) == RTX_STATUS_CODE_FAILED_PRECONDITION &&
               strstr(rtx_error_message(error), "has no device") != NULL,
           "without a device the module is refused (FAILED_PRECONDITION)");
    rtx_error_delete(error);
    error = rtx_context_add_device(context, "gpu-of-dreams");
    report(rtx_error_code(error) == RTX_STATUS_CODE_NOT_FOUND, "an unknown device name is NOT_FOUND");
    rtx_error_delete(error);
    if (succeeded("rtx_context_add_device", rtx_context_add_device(context, "local-sync")) &&
        succeeded("rtx_context_add_module", rtx_context_add_module(context, module))) {
      run_matmul(context);
      run_dense_relu(context);
      run_wrong_shape(context);
      run_call(context);
    }
    rtx_context_release(context);
  }
  rtx_module_release(module);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <programs_embedded.vmfb> [<programs_vmvx.vmfb> ...]\n", argv[0]);
    return 2;
  }
  for (int i = 1; i < argc; ++i) {
    run_module(argv[i]);
  }
  printf("%s\n", failures == 0 ? "all checks passed" : "SOME CHECKS FAILED");
  return failures == 0 ? 0 : 1;
}
