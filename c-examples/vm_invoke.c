/* vm_invoke: an IREE VM module called from C through async values.
 *
 *   vm_invoke <path to tests/fixtures/vm/control_flow.vmfb>
 *
 * Loads the module, prints every exported function with its calling convention, argument and
 * result kinds and ABI declaration, adds it to a context, invokes sum_to_n and collatz_steps
 * (one of them with an argument that becomes available only after the call was made), checks a
 * wrong argument count, then registers a native module written in C here (`host.mix`,
 * i64 x f64 -> f64 and `host.fail`, i32 -> i32, which always fails) and invokes it directly.
 * The exit status is 0 only if every result matches the value computed here by hand. */
#include <rtx.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

static const char* kind_name(rtx_value_kind_t kind) {
  switch (kind) {
    case RTX_VALUE_KIND_I32:
      return "i32";
    case RTX_VALUE_KIND_I64:
      return "i64";
    case RTX_VALUE_KIND_F32:
      return "f32";
    case RTX_VALUE_KIND_F64:
      return "f64";
    case RTX_VALUE_KIND_REF:
      return "ref";
  }
  return "?";
}

static void print_kinds(const rtx_value_kind_t* kinds, size_t count) {
  printf("(");
  for (size_t i = 0; i < count; ++i) {
    printf("%s%s", i == 0 ? "" : ", ", kind_name(kinds[i]));
  }
  printf(")");
}

static void list_functions(const rtx_module_t* module) {
  size_t count = rtx_module_function_count(module);
  printf("module '%s': %zu exported functions\n", rtx_module_name(module), count);
  for (size_t i = 0; i < count; ++i) {
    rtx_function_signature_t signature;
    memset(&signature, 0, sizeof signature);
    signature.struct_size = sizeof signature;
    if (!succeeded("rtx_module_function_signature", rtx_module_function_signature(module, i, &signature))) {
      continue;
    }
    printf("  [%zu] %s", i, rtx_module_function_name(module, i));
    print_kinds(signature.argument_kinds, signature.num_arguments);
    printf(" -> ");
    print_kinds(signature.result_kinds, signature.num_results);
    printf("  cconv %s\n", signature.calling_convention);
    printf("       %s\n", signature.declaration != NULL ? signature.declaration : "(no ABI declaration)");
  }
  report(rtx_module_function_name(module, count) == NULL, "function name past the end is NULL");
}

/* Invokes `function` with one argument and one i32 result; returns the result or -1. */
static int32_t invoke_i32(rtx_context_t* context, const char* function, rtx_async_value_t* arg) {
  rtx_async_value_t* result = NULL;
  if (!succeeded("rtx_context_invoke", rtx_context_invoke(context, function, &arg, 1, &result, 1))) {
    return -1;
  }
  int32_t value = -1;
  if (succeeded("rtx_async_value_await", rtx_async_value_await(context, &result, 1))) {
    succeeded("rtx_async_value_get_i32", rtx_async_value_get_i32(result, &value));
  }
  rtx_async_value_release(result);
  return value;
}

static void bytecode_calls(rtx_context_t* context) {
  rtx_async_value_t* ten = rtx_async_value_new_i32(10);
  report(invoke_i32(context, "sum_to_n", ten) == 45, "sum_to_n(10) = 45");

  /* The argument is a promise: the call waits for it without blocking anyone. */
  rtx_async_value_t* start = rtx_async_value_new_unavailable();
  rtx_async_value_t* steps = NULL;
  if (succeeded("rtx_context_invoke", rtx_context_invoke(context, "module.collatz_steps", &start, 1, &steps, 1))) {
    rtx_context_quiesce(context);
    report(!rtx_async_value_is_available(steps), "collatz_steps waits for its unavailable argument");
    succeeded("rtx_async_value_set_i64", rtx_async_value_set_i64(start, 27));
    int32_t value = -1;
    if (succeeded("rtx_async_value_await", rtx_async_value_await(context, &steps, 1))) {
      succeeded("rtx_async_value_get_i32", rtx_async_value_get_i32(steps, &value));
    }
    report(value == 111, "collatz_steps(27) = 111, argument set after the call");
    rtx_async_value_release(steps);
  }

  rtx_async_value_t* args[2] = {ten, ten};
  rtx_async_value_t* results[1] = {NULL};
  rtx_error_t* error = rtx_context_invoke(context, "sum_to_n", args, 2, results, 1);
  report(rtx_error_code(error) == RTX_STATUS_CODE_INVALID_ARGUMENT && results[0] == NULL,
         "two arguments to sum_to_n: INVALID_ARGUMENT, no results");
  if (error != NULL) {
    printf("    (%s)\n", rtx_error_message(error));
  }
  rtx_error_delete(error);
  rtx_async_value_release(start);
  rtx_async_value_release(ten);
}

/* --- a native module in C --- */

typedef struct {
  double factor;
  int destroyed;
} host_data_t;

/* host.mix(i64 n, f64 x) -> f64: n * factor + x. */
static rtx_error_t* host_mix(void* user_data, void* state, const rtx_value_t* args, size_t num_args,
                             rtx_value_t* results, size_t num_results) {
  const host_data_t* data = user_data;
  (void)state;
  if (num_args != 2 || num_results != 1 || results[0].kind != RTX_VALUE_KIND_F64) {
    return rtx_error_new(RTX_STATUS_CODE_INTERNAL, "host.mix: unexpected signature");
  }
  results[0].value.f64 = (double)args[0].value.i64 * data->factor + args[1].value.f64;
  return NULL;
}

/* host.fail(i32 code) -> i32: always fails, with `code` as the status. */
static rtx_error_t* host_fail(void* user_data, void* state, const rtx_value_t* args, size_t num_args,
                              rtx_value_t* results, size_t num_results) {
  (void)user_data;
  (void)state;
  (void)num_args;
  (void)results;
  (void)num_results;
  return rtx_error_new((uint32_t)args[0].value.i32, "host.fail failed as asked");
}

static void destroy_host(void* user_data) {
  host_data_t* data = user_data;
  data->destroyed += 1;
}

static void native_calls(rtx_context_t* context, host_data_t* data) {
  const int destroyed_before = data->destroyed;
  const rtx_native_function_t functions[] = {
      {.name = "mix", .cconv = "0IF_F", .function = host_mix},
      {.name = "fail", .cconv = "0i_i", .function = host_fail},
  };
  rtx_native_module_options_t options;
  rtx_native_module_options_init(&options);
  options.name = "host";
  options.version = 1;
  options.functions = functions;
  options.num_functions = sizeof functions / sizeof functions[0];
  options.user_data = data;
  options.destroy = destroy_host;
  rtx_native_module_t* module = NULL;
  if (!succeeded("rtx_native_module_new", rtx_native_module_new(&options, &module))) {
    return;
  }
  bool added = succeeded("rtx_context_add_native_module", rtx_context_add_native_module(context, module));
  rtx_native_module_release(module); /* the context keeps its own reference */
  report(data->destroyed == destroyed_before, "the context keeps the native module alive");
  if (!added) {
    return;
  }

  rtx_async_value_t* args[2] = {rtx_async_value_new_i64(4), rtx_async_value_new_f64(0.25)};
  rtx_async_value_t* mixed = NULL;
  if (succeeded("rtx_context_invoke", rtx_context_invoke(context, "host.mix", args, 2, &mixed, 1))) {
    double value = 0.0;
    if (succeeded("rtx_async_value_await", rtx_async_value_await(context, &mixed, 1))) {
      succeeded("rtx_async_value_get_f64", rtx_async_value_get_f64(mixed, &value));
    }
    report(value == 10.25, "host.mix(4, 0.25) = 10.25 (factor 2.5)");
    rtx_async_value_release(mixed);
  }

  rtx_async_value_t* code = rtx_async_value_new_i32(RTX_STATUS_CODE_OUT_OF_RANGE);
  rtx_async_value_t* failed = NULL;
  if (succeeded("rtx_context_invoke", rtx_context_invoke(context, "host.fail", &code, 1, &failed, 1))) {
    rtx_error_t* error = NULL;
    if (succeeded("rtx_async_value_await", rtx_async_value_await(context, &failed, 1))) {
      error = rtx_async_value_get_error(failed);
    }
    report(rtx_error_code(error) == RTX_STATUS_CODE_OUT_OF_RANGE &&
               strstr(rtx_error_message(error), "host.fail failed as asked") != NULL,
           "host.fail(OUT_OF_RANGE): the result is that error");
    if (error != NULL) {
      printf("    (%s)\n", rtx_error_message(error));
    }
    rtx_error_delete(error);
    rtx_async_value_release(failed);
  }
  rtx_async_value_release(code);
  rtx_async_value_release(args[0]);
  rtx_async_value_release(args[1]);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <control_flow.vmfb>\n", argv[0]);
    return 2;
  }
  rtx_module_t* module = NULL;
  if (!succeeded("rtx_module_load_file", rtx_module_load_file(argv[1], &module))) {
    return 1;
  }
  list_functions(module);

  static const uint8_t garbage[64] = {0};
  rtx_module_t* corrupt = NULL;
  rtx_error_t* error = rtx_module_load_memory(garbage, sizeof garbage, &corrupt);
  report(error != NULL && corrupt == NULL && strstr(rtx_error_message(error), "offset") != NULL,
         "64 zero bytes are not a module (the error names the offset)");
  rtx_error_delete(error);

  host_data_t data = {.factor = 2.5, .destroyed = 0};
  const char* queues[] = {"s", "mstd:2,2"};
  for (size_t q = 0; q < sizeof queues / sizeof queues[0]; ++q) {
    printf("work queue '%s':\n", queues[q]);
    rtx_context_options_t options;
    rtx_context_options_init(&options);
    options.work_queue = queues[q];
    rtx_context_t* context = NULL;
    if (!succeeded("rtx_context_new", rtx_context_new(&options, &context))) {
      continue;
    }
    if (succeeded("rtx_context_add_module", rtx_context_add_module(context, module))) {
      bytecode_calls(context);
    }
    int destroyed_before = data.destroyed;
    native_calls(context, &data);
    rtx_context_release(context);
    report(data.destroyed == destroyed_before + 1, "releasing the context destroys the native module once");
  }
  rtx_module_release(module);

  printf("%s\n", failures == 0 ? "all checks passed" : "SOME CHECKS FAILED");
  return failures == 0 ? 0 : 1;
}
