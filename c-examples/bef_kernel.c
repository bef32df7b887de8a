/* bef_kernel: a BEF program whose kernel is written in C.
 *
 *   bef_kernel <path to c-examples/bef_kernel.bef>
 *
 * Registers `my.scale.i32` (an i32 argument times the kernel's i64 attribute `factor`, failing on
 * overflow, and checking its string attribute `label`), loads the BEF file compiled from
 * bef_kernel.mlir, lists its functions, invokes `scale_plus_two` (x * 3 + 2) through
 * rtx_context_invoke, once with an argument set only after the call, and once with an argument
 * that makes the C kernel fail, whose error must reach the result. It also checks that a module
 * naming an unregistered kernel fails rtx_context_add_module with the kernel's name. The exit
 * status is 0 only if every result matches the value computed here by hand. */
#include <rtx.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

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

/* Fails the kernel with `error`'s message, and frees it. */
static void fail_with(rtx_kernel_frame_t* frame, rtx_error_t* error) {
  rtx_kernel_frame_report_error(frame, rtx_error_message(error));
  rtx_error_delete(error);
}

/* my.scale.i32: result 0 = argument 0 * attribute `factor`. Runs on a worker thread; touches
 * nothing but its frame (user_data is unused), so it is safe to run concurrently. */
static void scale_kernel(rtx_kernel_frame_t* frame, void* user_data) {
  (void)user_data;
  if (rtx_kernel_frame_num_args(frame) != 1 || rtx_kernel_frame_num_results(frame) != 1) {
    rtx_kernel_frame_report_error(frame, "my.scale.i32 takes one argument and has one result");
    return;
  }
  int64_t factor = 0;
  rtx_error_t* error = rtx_kernel_frame_attr_i64(frame, "factor", &factor);
  if (error != NULL) {
    fail_with(frame, error);
    return;
  }
  const char* label = NULL;
  size_t label_size = 0;
  error = rtx_kernel_frame_attr_string(frame, "label", &label, &label_size);
  if (error != NULL) {
    fail_with(frame, error);
    return;
  }
  if (label_size != strlen("triple") || memcmp(label, "triple", label_size) != 0) {
    rtx_kernel_frame_report_error(frame, "my.scale.i32: unexpected label");
    return;
  }
  int32_t x = 0;
  error = rtx_async_value_get_i32(rtx_kernel_frame_arg(frame, 0), &x);
  if (error != NULL) {
    fail_with(frame, error);
    return;
  }
  int64_t scaled = (int64_t)x * factor;
  if (scaled > INT32_MAX || scaled < INT32_MIN) {
    rtx_kernel_frame_report_error(frame, "my.scale.i32: the product overflows i32");
    return;
  }
  rtx_kernel_frame_set_result(frame, 0, rtx_async_value_new_i32((int32_t)scaled));
}

/* Invokes scale_plus_two on `argument` and waits; returns the result (the caller releases it)
 * or NULL after reporting why there is none. */
static rtx_async_value_t* invoke(rtx_context_t* context, rtx_async_value_t* argument, rtx_async_value_t* set_later,
                                 int32_t later_value) {
  rtx_async_value_t* result = NULL;
  if (!succeeded("rtx_context_invoke", rtx_context_invoke(context, "bef_kernel.scale_plus_two", &argument, 1, &result, 1))) {
    return NULL;
  }
  if (set_later != NULL) {
    report(!rtx_async_value_is_available(result), "the call waits for an argument set after it");
    succeeded("rtx_async_value_set_i32", rtx_async_value_set_i32(set_later, later_value));
  }
  if (!succeeded("rtx_async_value_await", rtx_async_value_await(context, &result, 1))) {
    rtx_async_value_release(result);
    return NULL;
  }
  return result;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <path to bef_kernel.bef>\n", argv[0]);
    return 2;
  }
  printf("bef_kernel: %s\n", argv[1]);
  rtx_context_t* context = NULL;
  if (!succeeded("rtx_context_new", rtx_context_new(NULL, &context))) {
    return 1;
  }
  rtx_module_t* module = NULL;
  if (!succeeded("rtx_module_load_file", rtx_module_load_file(argv[1], &module))) {
    rtx_context_release(context);
    return 1;
  }
  for (size_t i = 0; i < rtx_module_function_count(module); ++i) {
    rtx_function_signature_t signature = {.struct_size = sizeof(signature)};
    if (succeeded("rtx_module_function_signature", rtx_module_function_signature(module, i, &signature))) {
      printf("  function %s: %s\n", rtx_module_function_name(module, i), signature.declaration);
    }
  }
  report(rtx_module_function_count(module) == 1 && strcmp(rtx_module_function_name(module, 0), "scale_plus_two") == 0,
         "the module exports scale_plus_two");

  /* Before the kernel is registered, the module cannot be added: its kernel is unknown. */
  rtx_error_t* error = rtx_context_add_module(context, module);
  report(error != NULL && rtx_error_code(error) == RTX_STATUS_CODE_NOT_FOUND &&
             strstr(rtx_error_message(error), "my.scale.i32") != NULL,
         "an unregistered kernel fails add_module, naming it");
  if (error != NULL) {
    printf("    (%s)\n", rtx_error_message(error));
    rtx_error_delete(error);
  }

  succeeded("rtx_context_register_kernel", rtx_context_register_kernel(context, "my.scale.i32", scale_kernel, NULL));
  error = rtx_context_register_kernel(context, "my.scale.i32", scale_kernel, NULL);
  report(error != NULL && rtx_error_code(error) == RTX_STATUS_CODE_ALREADY_EXISTS, "a name is registered once");
  rtx_error_delete(error);
  if (succeeded("rtx_context_add_module", rtx_context_add_module(context, module))) {
    /* 14 * 3 + 2, the argument available at once. */
    rtx_async_value_t* argument = rtx_async_value_new_i32(14);
    rtx_async_value_t* result = invoke(context, argument, NULL, 0);
    int32_t value = 0;
    report(result != NULL && rtx_async_value_get_i32(result, &value) == NULL && value == 44,
           "scale_plus_two(14) = 44 through the C kernel");
    rtx_async_value_release(result);
    rtx_async_value_release(argument);

    /* 5 * 3 + 2, the argument set after the call. */
    argument = rtx_async_value_new_unavailable();
    result = invoke(context, argument, argument, 5);
    report(result != NULL && rtx_async_value_get_i32(result, &value) == NULL && value == 17,
           "scale_plus_two(later 5) = 17");
    rtx_async_value_release(result);
    rtx_async_value_release(argument);

    /* The kernel's own error reaches the result, past the add that depends on it. */
    argument = rtx_async_value_new_i32(INT32_MAX);
    result = invoke(context, argument, NULL, 0);
    error = result == NULL ? NULL : rtx_async_value_get_error(result);
    report(error != NULL && rtx_error_code(error) == RTX_STATUS_CODE_INTERNAL &&
               strstr(rtx_error_message(error), "the product overflows i32") != NULL,
           "the C kernel's error reaches the result");
    if (error != NULL) {
      printf("    (%s)\n", rtx_error_message(error));
      rtx_error_delete(error);
    }
    rtx_async_value_release(result);
    rtx_async_value_release(argument);

    /* A wrong argument count is refused before anything runs. */
    rtx_async_value_t* none = NULL;
    error = rtx_context_invoke(context, "scale_plus_two", NULL, 0, &none, 1);
    report(error != NULL && rtx_error_code(error) == RTX_STATUS_CODE_INVALID_ARGUMENT && none == NULL,
           "a wrong argument count is INVALID_ARGUMENT");
    rtx_error_delete(error);
  }
  rtx_module_release(module);
  rtx_context_release(context);
  printf("bef_kernel: %s\n", failures == 0 ? "all results as computed by hand" : "FAILED");
  return failures == 0 ? 0 : 1;
}
