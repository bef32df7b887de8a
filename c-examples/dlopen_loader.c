/* dlopen_loader: uses librtx without linking it. The path of the shared library is argv[1]; the
 * functions are found with dlsym. rtx.h is included only for its types and version macros, so a
 * loader can check that the library it found is the one it was written for. */
#define _POSIX_C_SOURCE 200809L

#include <rtx.h>

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef const char* (*version_fn)(void);
typedef uint32_t (*abi_version_fn)(void);
typedef rtx_async_value_t* (*new_i32_fn)(int32_t);
typedef rtx_error_t* (*get_i32_fn)(const rtx_async_value_t*, int32_t*);
typedef void (*release_fn)(rtx_async_value_t*);
typedef void (*error_delete_fn)(rtx_error_t*);

/* dlsym returns void*; ISO C has no cast from it to a function pointer, so copy the bits. */
static int load(void* library, const char* name, void* function_pointer, size_t size) {
  void* symbol = dlsym(library, name);
  if (symbol == NULL) {
    fprintf(stderr, "dlsym(%s): %s\n", name, dlerror());
    return 0;
  }
  memcpy(function_pointer, &symbol, size);
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s /path/to/librtx.so\n", argv[0]);
    return 2;
  }
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) {
    fprintf(stderr, "dlopen(%s): %s\n", argv[1], dlerror());
    return 1;
  }
  version_fn version = NULL;
  abi_version_fn abi_version = NULL;
  new_i32_fn new_i32 = NULL;
  get_i32_fn get_i32 = NULL;
  release_fn release = NULL;
  error_delete_fn error_delete = NULL;
  int found = load(library, "rtx_version", &version, sizeof version) &
              load(library, "rtx_abi_version", &abi_version, sizeof abi_version) &
              load(library, "rtx_async_value_new_i32", &new_i32, sizeof new_i32) &
              load(library, "rtx_async_value_get_i32", &get_i32, sizeof get_i32) &
              load(library, "rtx_async_value_release", &release, sizeof release) &
              load(library, "rtx_error_delete", &error_delete, sizeof error_delete);
  if (!found) {
    dlclose(library);
    return 1;
  }

  int ok = 1;
  const char* loaded_version = version();
  printf("dlopen(%s): rtx %s (ABI %u); this loader was built for %s (ABI %d)\n", argv[1], loaded_version,
         abi_version(), RTX_VERSION, RTX_ABI_VERSION);
  ok &= strcmp(loaded_version, RTX_VERSION) == 0 && abi_version() == RTX_ABI_VERSION;

  rtx_async_value_t* value = new_i32(-31337);
  int32_t out = 0;
  rtx_error_t* error = get_i32(value, &out);
  ok &= value != NULL && error == NULL && out == -31337;
  printf("rtx_async_value_new_i32(-31337) -> get_i32 -> %d\n", (int)out);
  error_delete(error);
  release(value);

  if (dlclose(library) != 0) {
    fprintf(stderr, "dlclose: %s\n", dlerror());
    ok = 0;
  }
  printf("%s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
