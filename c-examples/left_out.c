/* left_out: what a build of rtx without some Cargo features answers.
 *
 *   left_out <path to bef_kernel.bef> <path to an .onnx model> <feature>...
 *
 * For each feature named (those the installed library was built without: rtx_FEATURES in its
 * CMake package), the C functions of that part must fail with RTX_STATUS_CODE_UNIMPLEMENTED and
 * a message naming the feature: `vulkan` (listing and opening Vulkan devices, a context on
 * `vulkan://0`), `tfrt` (registering a kernel, loading a BEF module, running an eager op),
 * `onnx` (loading an ONNX model). The exit status is 0 only if every answer is so. */
#include <rtx.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int failures;

/* Checks that `error` is UNIMPLEMENTED and names `feature` (as "`feature`"), then frees it. */
static void expect_left_out(const char* what, rtx_error_t* error, const char* feature) {
  char quoted[64];
  snprintf(quoted, sizeof quoted, "`%s`", feature);
  bool ok = error != NULL && rtx_error_code(error) == RTX_STATUS_CODE_UNIMPLEMENTED &&
            strstr(rtx_error_message(error), quoted) != NULL;
  printf("  %-48s %s\n", what, ok ? "ok" : "FAILED");
  if (error != NULL) {
    printf("    %s: %s\n", rtx_status_code_name(rtx_error_code(error)), rtx_error_message(error));
  }
  if (!ok) {
    ++failures;
  }
  rtx_error_delete(error);
}

static void never_called(rtx_kernel_frame_t* frame, void* user_data) {
  (void)frame;
  (void)user_data;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s BEF_FILE ONNX_FILE FEATURE...\n", argv[0]);
    return 2;
  }
  rtx_context_t* context = NULL;
  rtx_error_t* error = rtx_context_new(NULL, &context);
  if (error != NULL) {
    printf("rtx_context_new failed: %s\n", rtx_error_message(error));
    rtx_error_delete(error);
    return 1;
  }
  for (int i = 3; i < argc; ++i) {
    const char* feature = argv[i];
    printf("without `%s`:\n", feature);
    if (strcmp(feature, "vulkan") == 0) {
      size_t count = 0;
      expect_left_out("rtx_vulkan_device_count", rtx_vulkan_device_count(&count), feature);
      rtx_vulkan_device_t* device = NULL;
      expect_left_out("rtx_vulkan_device_create", rtx_vulkan_device_create(0, &device), feature);
      expect_left_out("rtx_context_add_device(\"vulkan://0\")", rtx_context_add_device(context, "vulkan://0"),
                      feature);
    } else if (strcmp(feature, "tfrt") == 0) {
      expect_left_out("rtx_context_register_kernel",
                      rtx_context_register_kernel(context, "c.never", never_called, NULL), feature);
      rtx_module_t* module = NULL;
      expect_left_out("rtx_module_load_file(BEF)", rtx_module_load_file(argv[1], &module), feature);
      rtx_async_value_t* result = NULL;
      expect_left_out("rtx_context_execute_op", rtx_context_execute_op(context, NULL, "tfrt_test.add", NULL, 0, NULL,
                                                                       &result, 1),
                      feature);
    } else if (strcmp(feature, "onnx") == 0) {
      rtx_module_t* module = NULL;
      expect_left_out("rtx_module_load_file(ONNX)", rtx_module_load_file(argv[2], &module), feature);
    } else {
      printf("  unknown feature `%s`\n", feature);
      ++failures;
    }
  }
  rtx_context_release(context);
  printf("%s\n", failures == 0 ? "every part left out says so" : "FAILED");
  return failures == 0 ? 0 : 1;
}
