/* npy.h: NumPy .npy files for the examples that check a model against outputs computed elsewhere
 * (onnx_model.c, onnx_model.cpp): reading an array as an IREE element type, shape and bytes, and
 * comparing a result with one. Little-endian, C order, format versions 1 to 3; the element types
 * f4, f8, i4, i8 and b1. C and C++. */
#ifndef RTX_EXAMPLES_NPY_H
#define RTX_EXAMPLES_NPY_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NPY_MAX_RANK = 8 };

typedef struct npy_array {
  uint32_t element_type; /* an IREE HAL element type code, as rtx_buffer_view_new takes */
  int64_t shape[NPY_MAX_RANK];
  size_t rank;
  void* data;
  size_t byte_length;
} npy_array;

/* The IREE element type of a .npy descr ('<f4', ...), 0 for one these examples do not read. */
static inline uint32_t npy_element_type(const char* descr) {
  static const struct {
    const char* descr;
    uint32_t element_type;
  } types[] = {{"'<f4'", 0x21000020u}, {"'<f8'", 0x21000040u}, {"'<i4'", 0x11000020u},
               {"'<i8'", 0x11000040u}, {"'|b1'", 0x13000008u}};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; ++i) {
    if (strncmp(descr, types[i].descr, strlen(types[i].descr)) == 0) {
      return types[i].element_type;
    }
  }
  return 0;
}

/* Reads `path` into `out` (free it with npy_free); false, with the reason printed, when the file
 * is missing or not an array these examples read. */
static inline bool npy_read(const char* path, npy_array* out) {
  memset(out, 0, sizeof *out);
  FILE* file = fopen(path, "rb");
  if (file == NULL) {
    return false;
  }
  unsigned char prefix[12];
  bool ok = fread(prefix, 1, 10, file) == 10 && memcmp(prefix, "\x93NUMPY", 6) == 0;
  size_t header_length = 0;
  if (ok && prefix[6] == 1) {
    header_length = (size_t)prefix[8] | (size_t)prefix[9] << 8;
  } else if (ok && fread(prefix + 10, 1, 2, file) == 2) {
    header_length = (size_t)prefix[8] | (size_t)prefix[9] << 8 | (size_t)prefix[10] << 16 | (size_t)prefix[11] << 24;
  } else {
    ok = false;
  }
  char* header = ok ? (char*)calloc(header_length + 1, 1) : NULL;
  ok = header != NULL && fread(header, 1, header_length, file) == header_length;
  const char* descr = ok ? strstr(header, "'descr': ") : NULL;
  const char* shape = ok ? strstr(header, "'shape': (") : NULL;
  ok = descr != NULL && shape != NULL && strstr(header, "'fortran_order': False") != NULL;
  if (ok) {
    out->element_type = npy_element_type(descr + strlen("'descr': "));
    size_t count = 1;
    for (const char* p = shape + strlen("'shape': ("); ok && *p != ')';) {
      char* end = NULL;
      long long dim = strtoll(p, &end, 10);
      ok = end != p && dim >= 0 && out->rank < NPY_MAX_RANK;
      if (ok) {
        out->shape[out->rank++] = dim;
        count *= (size_t)dim;
        p = end + strspn(end, ", ");
      }
    }
    const size_t element_bytes = (out->element_type & 0xffu) / 8;
    ok = ok && out->element_type != 0;
    out->byte_length = count * element_bytes;
    out->data = ok ? malloc(out->byte_length > 0 ? out->byte_length : 1) : NULL;
    ok = out->data != NULL && fread(out->data, 1, out->byte_length, file) == out->byte_length;
  }
  free(header);
  fclose(file);
  if (!ok) {
    printf("  %s: not a little-endian C-order .npy array of f4, f8, i4, i8 or b1\n", path);
    free(out->data);
    memset(out, 0, sizeof *out);
  }
  return ok;
}

static inline void npy_free(npy_array* array) {
  free(array->data);
  memset(array, 0, sizeof *array);
}

/* Whether a result (its element type, shape and bytes) is `expected`: the same type and shape,
 * equal integers, floats within `relative` of the expected array's largest magnitude. */
static inline bool npy_close(const npy_array* expected, uint32_t element_type, const int64_t* shape, size_t rank,
                             const void* data, double relative) {
  if (element_type != expected->element_type || rank != expected->rank ||
      memcmp(shape, expected->shape, rank * sizeof *shape) != 0) {
    return false;
  }
  if (element_type == 0x21000020u || element_type == 0x21000040u) {
    const bool wide = element_type == 0x21000040u;
    const size_t count = expected->byte_length / (wide ? 8 : 4);
    double scale = 0;
    for (size_t i = 0; i < count; ++i) {
      const double v = wide ? ((const double*)expected->data)[i] : ((const float*)expected->data)[i];
      scale = fmax(scale, fabs(v));
    }
    for (size_t i = 0; i < count; ++i) {
      const double a = wide ? ((const double*)data)[i] : ((const float*)data)[i];
      const double b = wide ? ((const double*)expected->data)[i] : ((const float*)expected->data)[i];
      if (!(fabs(a - b) <= relative * scale)) {
        return false;
      }
    }
    return true;
  }
  return memcmp(data, expected->data, expected->byte_length) == 0;
}

#endif /* RTX_EXAMPLES_NPY_H */
