/* vulkan_devices: the Vulkan devices this machine has, as a C host sees them through rtx.
 *
 * Lists every physical device (name, ids, API version, UUID, driver, device-local memory), opens
 * the first by index and again by its UUID, gives it to two contexts (a context takes one device;
 * a second one is refused with ALREADY_EXISTS), runs a program compiled for vulkan-spirv on it
 * (argv[1]: an elementwise `add` of two 4-element f32 vectors, checked against sums computed here),
 * and releases everything. With no Vulkan the list is empty and the program says so in a skip line
 * (`SKIP [vulkan-device] ...`, which the test command collects, and under CI=true fails). The exit
 * status is 0 only if every step behaved as documented. */
#include <rtx.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int failures;

/* IREE's element type code for 32-bit floats. */
#define ELEMENT_TYPE_F32 0x21000020u

/* Consumes `error`: a failure unless it is NULL (or has the `expected` code, when not OK). */
static void expect(rtx_error_t* error, rtx_status_code_t expected, const char* what) {
  rtx_status_code_t code = error ? rtx_error_code(error) : RTX_STATUS_CODE_OK;
  if (code != expected) {
    fprintf(stderr, "%s: %s\n", what, error ? rtx_error_message(error) : "succeeded");
    ++failures;
  }
  rtx_error_delete(error);
}

/* Calls `add` of `path` on the context's Vulkan device and checks the sums. */
static void run_add(rtx_context_t* context, const char* path) {
  rtx_module_t* module = NULL;
  rtx_error_t* error = rtx_module_load_file(path, &module);
  if (error != NULL) {
    expect(error, RTX_STATUS_CODE_OK, "rtx_module_load_file");
    return;
  }
  expect(rtx_context_add_module(context, module), RTX_STATUS_CODE_OK, "rtx_context_add_module");
  const int64_t shape[1] = {4};
  const float lhs[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  const float rhs[4] = {10.0f, 20.0f, 30.0f, 40.5f};
  rtx_buffer_view_t* views[2] = {NULL, NULL};
  expect(rtx_buffer_view_new(ELEMENT_TYPE_F32, shape, 1, lhs, sizeof lhs, &views[0]), RTX_STATUS_CODE_OK, "lhs view");
  expect(rtx_buffer_view_new(ELEMENT_TYPE_F32, shape, 1, rhs, sizeof rhs, &views[1]), RTX_STATUS_CODE_OK, "rhs view");
  rtx_async_value_t* args[2] = {rtx_async_value_new_buffer_view(views[0]), rtx_async_value_new_buffer_view(views[1])};
  rtx_async_value_t* result = NULL;
  rtx_buffer_view_t* sum = NULL;
  float actual[4] = {0};
  expect(rtx_context_invoke(context, "add", args, 2, &result, 1), RTX_STATUS_CODE_OK, "rtx_context_invoke(add)");
  if (result != NULL) {
    expect(rtx_async_value_await(context, &result, 1), RTX_STATUS_CODE_OK, "rtx_async_value_await");
    expect(rtx_async_value_get_buffer_view(result, &sum), RTX_STATUS_CODE_OK, "the result of add");
  }
  if (sum != NULL) {
    expect(rtx_buffer_view_copy_data(sum, actual, sizeof actual), RTX_STATUS_CODE_OK, "rtx_buffer_view_copy_data");
  }
  for (size_t i = 0; i < 4; ++i) {
    if (actual[i] != lhs[i] + rhs[i]) {
      fprintf(stderr, "add on the Vulkan device: element %zu is %g, not %g\n", i, actual[i], lhs[i] + rhs[i]);
      ++failures;
    }
  }
  printf("add on the Vulkan device: %g %g %g %g\n", actual[0], actual[1], actual[2], actual[3]);
  rtx_buffer_view_release(sum);
  rtx_async_value_release(result);
  rtx_async_value_release(args[0]);
  rtx_async_value_release(args[1]);
  rtx_buffer_view_release(views[0]);
  rtx_buffer_view_release(views[1]);
  rtx_module_release(module);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: vulkan_devices ELEMENTWISE.vmfb\n");
    return 2;
  }
  size_t count = 0;
  expect(rtx_vulkan_device_count(&count), RTX_STATUS_CODE_OK, "rtx_vulkan_device_count");
  printf("%zu Vulkan device(s)\n", count);
  for (size_t i = 0; i < count; ++i) {
    rtx_vulkan_device_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    expect(rtx_vulkan_device_info(i, &info), RTX_STATUS_CODE_OK, "rtx_vulkan_device_info");
    printf("  %zu: %s (vendor 0x%04" PRIx32 ", device 0x%04" PRIx32 ", API %" PRIu32 ".%" PRIu32 ", driver %s, "
           "%" PRIu64 " MiB device-local)\n     uuid ",
           i, info.name, info.vendor_id, info.device_id, (info.api_version >> 22) & 0x7f,
           (info.api_version >> 12) & 0x3ff, info.driver, info.device_local_bytes >> 20);
    for (size_t b = 0; b < sizeof info.uuid; ++b) {
      printf("%02x", info.uuid[b]);
    }
    printf("\n");
  }
  rtx_vulkan_device_info_t past;
  past.struct_size = sizeof past;
  expect(rtx_vulkan_device_info(count, &past), RTX_STATUS_CODE_OUT_OF_RANGE, "info past the last device");

  if (count == 0) {
    printf("SKIP [vulkan-device] c-examples vulkan_devices: no Vulkan device, nothing to open\n");
    return failures ? 1 : 0;
  }

  rtx_vulkan_device_info_t first;
  first.struct_size = sizeof first;
  expect(rtx_vulkan_device_info(0, &first), RTX_STATUS_CODE_OK, "rtx_vulkan_device_info(0)");
  rtx_vulkan_device_t* device = NULL;
  rtx_vulkan_device_t* same = NULL;
  expect(rtx_vulkan_device_create(0, &device), RTX_STATUS_CODE_OK, "rtx_vulkan_device_create");
  expect(rtx_vulkan_device_create_by_uuid(first.uuid, &same), RTX_STATUS_CODE_OK, "rtx_vulkan_device_create_by_uuid");

  rtx_context_options_t options;
  rtx_context_options_init(&options);
  options.work_queue = "s";
  rtx_context_t* a = NULL;
  rtx_context_t* b = NULL;
  expect(rtx_context_new(&options, &a), RTX_STATUS_CODE_OK, "rtx_context_new");
  expect(rtx_context_new(&options, &b), RTX_STATUS_CODE_OK, "rtx_context_new");
  expect(rtx_context_add_vulkan_device(a, device), RTX_STATUS_CODE_OK, "add the device to context a");
  expect(rtx_context_add_vulkan_device(b, device), RTX_STATUS_CODE_OK, "add the device to context b");
  expect(rtx_context_add_vulkan_device(a, same), RTX_STATUS_CODE_ALREADY_EXISTS, "a second device for context a");
  printf("opened device 0 by index and by UUID; two contexts share it\n");
  run_add(a, argv[1]);

  rtx_vulkan_device_release(same);
  rtx_vulkan_device_release(device); /* the contexts keep it open */
  rtx_context_release(a);
  rtx_context_release(b);
  printf("%s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
