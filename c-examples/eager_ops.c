/* eager_ops: ops run one at a time by name through a context's Core Runtime op handler.
 *
 *   eager_ops COMPOSITE_OP.bef
 *
 * Adds two 2x2 f32 tensors with TFRT's `tfrt_test.add`, transposes the sum with ONNX's
 * `onnx.Transpose` (its `perm` attribute set through rtx_op_attrs_t) before the sum is awaited,
 * multiplies with `onnx.Gemm` (`alpha` and `transB`), runs `onnx.Neg` through the synchronous
 * rtx_context_call_op on buffer views, registers the BEF function `scale_and_shift` of
 * COMPOSITE_OP.bef (tests/fixtures/bef/composite_op.bef: 2x + x*x) as the op `my.scale_and_shift`
 * and runs it, then checks the errors: an unknown op, a mismatched shape (an error result naming
 * the op), a composite op registered twice or from a function of another signature, NULL
 * arguments. The exit status is 0 only if every result matches the values computed here by
 * hand. */
#include <rtx.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define F32 0x21000020u

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

/* An async value holding a new f32 tensor of `rank` dimensions (NULL on failure, reported). */
static rtx_async_value_t* tensor(const int64_t* shape, size_t rank, const float* data, size_t count) {
  rtx_buffer_view_t* view = NULL;
  if (!succeeded("rtx_buffer_view_new", rtx_buffer_view_new(F32, shape, rank, data, count * sizeof(float), &view))) {
    return NULL;
  }
  rtx_async_value_t* value = rtx_async_value_new_buffer_view(view);
  rtx_buffer_view_release(view);
  return value;
}

/* Whether `value` (awaited) holds an f32 tensor of `shape` whose elements are `expected`. */
static bool holds(rtx_async_value_t* value, const int64_t* shape, size_t rank, const float* expected, size_t count) {
  rtx_buffer_view_t* view = NULL;
  if (!succeeded("rtx_async_value_get_buffer_view", rtx_async_value_get_buffer_view(value, &view))) {
    return false;
  }
  bool ok = rtx_buffer_view_element_type(view) == F32 && rtx_buffer_view_rank(view) == rank &&
            rtx_buffer_view_byte_length(view) == count * sizeof(float);
  for (size_t i = 0; ok && i < rank; ++i) {
    ok = rtx_buffer_view_dim(view, i) == shape[i];
  }
  float data[16];
  if (ok && count <= 16 && succeeded("rtx_buffer_view_copy_data", rtx_buffer_view_copy_data(view, data, sizeof data))) {
    ok = memcmp(data, expected, count * sizeof(float)) == 0;
  }
  rtx_buffer_view_release(view);
  return ok;
}

/* Whether `error` has `code` and a message containing `text`; frees it. */
static bool fails_with(rtx_error_t* error, rtx_status_code_t code, const char* text) {
  if (error == NULL) {
    return false;
  }
  bool ok = rtx_error_code(error) == code && strstr(rtx_error_message(error), text) != NULL;
  if (!ok) {
    printf("  unexpected error: %s\n", rtx_error_message(error));
  }
  rtx_error_delete(error);
  return ok;
}

/* Registers `scale_and_shift` of the BEF file at `path` as `my.scale_and_shift` and runs it on
 * `x` (the tensor [1 2; 3 4]); then the registration's errors. */
static void composite_op(rtx_context_t* context, const char* path, rtx_async_value_t* x) {
  rtx_module_t* module = NULL;
  if (!succeeded("rtx_module_load_file", rtx_module_load_file(path, &module))) {
    return;
  }
  succeeded("rtx_context_add_module", rtx_context_add_module(context, module));
  rtx_module_release(module);
  succeeded("rtx_context_register_composite_op",
            rtx_context_register_composite_op(context, "my.scale_and_shift", "scale_and_shift"));
  rtx_async_value_t* y = NULL;
  if (succeeded("rtx_context_execute_op(my.scale_and_shift)",
                rtx_context_execute_op(context, NULL, "my.scale_and_shift", &x, 1, NULL, &y, 1)) &&
      succeeded("rtx_async_value_await", rtx_async_value_await(context, &y, 1))) {
    const int64_t square[] = {2, 2};
    const float expected[] = {3.0f, 8.0f, 15.0f, 24.0f}; /* 2x + x*x */
    report(holds(y, square, 2, expected, 4), "a BEF function registered as an op: my.scale_and_shift");
  }
  rtx_async_value_release(y);
  report(fails_with(rtx_context_register_composite_op(context, "my.scale_and_shift", "scale_and_shift"),
                    RTX_STATUS_CODE_ALREADY_EXISTS, "my.scale_and_shift"),
         "a composite op's name is taken once");
  report(fails_with(rtx_context_register_composite_op(context, "onnx.Relu", "scale_and_shift"),
                    RTX_STATUS_CODE_ALREADY_EXISTS, "onnx.Relu"),
         "a kernel's name is taken");
  report(fails_with(rtx_context_register_composite_op(context, "my.scalar", "scalar"),
                    RTX_STATUS_CODE_INVALID_ARGUMENT, "not a !tfrt.chain"),
         "a function that takes no chain is not a composite op");
  report(fails_with(rtx_context_register_composite_op(context, "my.missing", "no_such_function"),
                    RTX_STATUS_CODE_NOT_FOUND, "no_such_function"),
         "an unknown function is named");
  report(fails_with(rtx_context_register_composite_op(context, NULL, "scale_and_shift"),
                    RTX_STATUS_CODE_INVALID_ARGUMENT, "'op_name' is NULL"),
         "a NULL op name is refused");
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: eager_ops COMPOSITE_OP.bef\n");
    return 2;
  }
  printf("eager_ops: ops by name on tensors, without a program\n");
  rtx_context_t* context = NULL;
  if (!succeeded("rtx_context_new", rtx_context_new(NULL, &context))) {
    return 1;
  }
  const int64_t square[] = {2, 2};
  const float a_data[] = {1.0f, 2.0f, 3.0f, 4.0f};
  const float b_data[] = {0.5f, -2.0f, 0.25f, 8.0f};
  rtx_async_value_t* a = tensor(square, 2, a_data, 4);
  rtx_async_value_t* b = tensor(square, 2, b_data, 4);

  /* The sum, then its transpose, queued before either is there. */
  rtx_async_value_t* args[] = {a, b};
  rtx_async_value_t* sum = NULL;
  succeeded("rtx_context_execute_op(tfrt_test.add)",
            rtx_context_execute_op(context, NULL, "tfrt_test.add", args, 2, NULL, &sum, 1));
  rtx_op_attrs_t* perm = NULL;
  succeeded("rtx_op_attrs_new", rtx_op_attrs_new(&perm));
  const int64_t swap[] = {1, 0};
  succeeded("rtx_op_attrs_set_i64_array", rtx_op_attrs_set_i64_array(perm, "perm", swap, 2));
  rtx_async_value_t* transposed = NULL;
  succeeded("rtx_context_execute_op(onnx.Transpose)",
            rtx_context_execute_op(context, "cpu", "onnx.Transpose", &sum, 1, perm, &transposed, 1));
  rtx_op_attrs_release(perm);
  rtx_async_value_t* both[] = {sum, transposed};
  succeeded("rtx_async_value_await", rtx_async_value_await(context, both, 2));
  const float sum_expected[] = {1.5f, 0.0f, 3.25f, 12.0f};
  report(holds(sum, square, 2, sum_expected, 4), "tfrt_test.add: [1 2; 3 4] + [0.5 -2; 0.25 8]");
  const float transposed_expected[] = {1.5f, 3.25f, 0.0f, 12.0f};
  report(holds(transposed, square, 2, transposed_expected, 4), "onnx.Transpose {perm = [1, 0]} of the sum");

  /* Gemm: alpha * A B' with A 1x2 and B 3x2. */
  const int64_t row[] = {1, 2}, three_by_two[] = {3, 2};
  const float x_data[] = {2.0f, 4.0f}, w_data[] = {1.0f, 0.0f, 0.0f, 1.0f, 1.0f, 1.0f};
  rtx_async_value_t* gemm_args[] = {tensor(row, 2, x_data, 2), tensor(three_by_two, 2, w_data, 6)};
  rtx_op_attrs_t* gemm = NULL;
  succeeded("rtx_op_attrs_new", rtx_op_attrs_new(&gemm));
  succeeded("rtx_op_attrs_set_f32", rtx_op_attrs_set_f32(gemm, "alpha", 0.5f));
  succeeded("rtx_op_attrs_set_i64", rtx_op_attrs_set_i64(gemm, "transB", 1));
  rtx_async_value_t* product = NULL;
  succeeded("rtx_context_execute_op(onnx.Gemm)",
            rtx_context_execute_op(context, NULL, "onnx.Gemm", gemm_args, 2, gemm, &product, 1));
  rtx_op_attrs_release(gemm);
  succeeded("rtx_async_value_await", rtx_async_value_await(context, &product, 1));
  const int64_t product_shape[] = {1, 3};
  const float product_expected[] = {1.0f, 2.0f, 3.0f};
  report(holds(product, product_shape, 2, product_expected, 3), "onnx.Gemm {alpha = 0.5, transB = 1}");

  /* The synchronous form: buffer views in, buffer views out. */
  rtx_buffer_view_t* view = NULL;
  rtx_buffer_view_t* negated = NULL;
  if (succeeded("rtx_async_value_get_buffer_view", rtx_async_value_get_buffer_view(a, &view)) &&
      succeeded("rtx_context_call_op", rtx_context_call_op(context, NULL, "onnx.Neg", &view, 1, NULL, &negated, 1))) {
    float data[4] = {0};
    succeeded("rtx_buffer_view_copy_data", rtx_buffer_view_copy_data(negated, data, sizeof data));
    report(data[0] == -1.0f && data[3] == -4.0f && rtx_buffer_view_rank(negated) == 2,
           "rtx_context_call_op(onnx.Neg) on a buffer view");
    rtx_buffer_view_t* pair[] = {view, view};
    rtx_buffer_view_t* none = NULL;
    report(fails_with(rtx_context_call_op(context, NULL, "onnx.Neg", pair, 2, NULL, &none, 1),
                      RTX_STATUS_CODE_INVALID_ARGUMENT, "onnx.Neg") &&
               none == NULL,
           "rtx_context_call_op: the op's error, naming it, and nothing written");
    rtx_buffer_view_release(negated);
  }
  rtx_buffer_view_release(view);

  composite_op(context, argv[1], a);

  /* Errors name what was wrong. */
  rtx_async_value_t* unused = NULL;
  report(fails_with(rtx_context_execute_op(context, NULL, "my.nothing", args, 2, NULL, &unused, 1),
                    RTX_STATUS_CODE_UNIMPLEMENTED, "my.nothing was not supported"),
         "an unknown op fails at once, naming it");
  report(fails_with(rtx_context_execute_op(context, "gpu", "tfrt_test.add", args, 2, NULL, &unused, 1),
                    RTX_STATUS_CODE_NOT_FOUND, "op_handler not found: gpu"),
         "an unknown handler fails at once, naming it");
  rtx_async_value_t* mismatched_args[] = {a, gemm_args[0]};
  rtx_async_value_t* mismatched = NULL;
  succeeded("rtx_context_execute_op(mismatched)",
            rtx_context_execute_op(context, NULL, "tfrt_test.add", mismatched_args, 2, NULL, &mismatched, 1));
  succeeded("rtx_async_value_await", rtx_async_value_await(context, &mismatched, 1));
  report(fails_with(rtx_async_value_get_error(mismatched), RTX_STATUS_CODE_INVALID_ARGUMENT, "tfrt_test.add"),
         "shapes that differ: the result is an error naming the op");
  report(fails_with(rtx_op_attrs_set_i64(NULL, "x", 1), RTX_STATUS_CODE_INVALID_ARGUMENT, "'attrs' is NULL"),
         "a NULL attribute set is refused");
  report(fails_with(rtx_context_execute_op(context, NULL, NULL, args, 2, NULL, &unused, 1),
                    RTX_STATUS_CODE_INVALID_ARGUMENT, "'op_name' is NULL"),
         "a NULL op name is refused");
  report(unused == NULL, "nothing is written on failure");

  rtx_async_value_release(mismatched);
  rtx_async_value_release(product);
  rtx_async_value_release(gemm_args[0]);
  rtx_async_value_release(gemm_args[1]);
  rtx_async_value_release(transposed);
  rtx_async_value_release(sum);
  rtx_async_value_release(a);
  rtx_async_value_release(b);
  rtx_context_release(context);
  printf("eager_ops: %s\n", failures == 0 ? "all ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
