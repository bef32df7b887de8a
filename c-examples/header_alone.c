/* header_alone: a C translation unit whose only include is <rtx.h>, so the header must bring in
 * everything it uses (stdbool, stdint, stddef). Called from header_twice.cpp. */
#include <rtx.h>

int rtx_header_alone_check(void);

int rtx_header_alone_check(void) {
  rtx_context_options_t options;
  rtx_context_options_init(&options);
  if (options.struct_size != sizeof options) {
    return 1;
  }
  bool available = false;
  size_t checked = 0;
  rtx_async_value_t* value = rtx_async_value_new_f64(0.5);
  double out = 0;
  rtx_error_t* error = rtx_async_value_get_f64(value, &out);
  available = rtx_async_value_is_available(value);
  rtx_async_value_release(value);
  checked = (error == NULL) + (out == 0.5) + available;
  rtx_error_delete(error);
  uint32_t abi = rtx_abi_version();
  return checked == 3 && abi == RTX_ABI_VERSION ? 0 : 1;
}
