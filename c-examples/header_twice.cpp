// header_twice: <rtx.h> included twice from C++ (the include guard holds, the extern "C" block
// gives C linkage, so these calls link against the C library), linked with header_alone.c, a C
// translation unit that includes nothing but <rtx.h>.
#include <rtx.h>
#include <rtx.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>

extern "C" int rtx_header_alone_check(void);

static_assert(RTX_VERSION_MAJOR >= 0 && RTX_VERSION_MINOR >= 0 && RTX_VERSION_PATCH >= 0, "version macros");
static_assert(RTX_ABI_VERSION >= 0, "ABI version macro");
static_assert(std::is_standard_layout<rtx_context_options_t>::value, "options are a C struct");
static_assert(std::is_standard_layout<rtx_work_queue_callbacks_t>::value, "callbacks are a C struct");
static_assert(std::is_standard_layout<rtx_allocator_callbacks_t>::value, "callbacks are a C struct");
static_assert(RTX_STATUS_CODE_OK == 0 && RTX_STATUS_CODE_CANCELLED == 1 && RTX_STATUS_CODE_INVALID_ARGUMENT == 3 &&
                  RTX_STATUS_CODE_FAILED_PRECONDITION == 9 && RTX_STATUS_CODE_PANIC == 100,
              "status codes are fixed numbers");

int main() {
  const bool same_version = std::strcmp(rtx_version(), RTX_VERSION) == 0 && rtx_abi_version() == RTX_ABI_VERSION;
  rtx_async_value_t* value = rtx_async_value_new_i32(5);
  std::int32_t out = 0;
  rtx_error_t* error = rtx_async_value_get_i32(value, &out);
  rtx_async_value_release(value);
  const bool read = error == nullptr && out == 5;
  rtx_error_delete(error);
  const int from_c = rtx_header_alone_check();
  std::printf("C++ TU (header included twice): version %s, read %d; C TU (header alone): %s\n",
              same_version ? "matches" : "MISMATCH", static_cast<int>(out), from_c == 0 ? "ok" : "FAILED");
  return same_version && read && from_c == 0 ? 0 : 1;
}
