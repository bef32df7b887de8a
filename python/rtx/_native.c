/* rtx._native: the part of the Python package that runs on every eager op, compiled.
 *
 * Through ctypes, an op on two small arrays cost about 13 us, almost all of it in Python: a
 * ctypes call to make each argument's buffer view, one for the op, one to release each view, and
 * a Python object per result. Here the whole round trip is one Python call: the arguments'
 * memory is read through the buffer protocol, the op runs through rtx_context_call_op, and each
 * result becomes a read-only numpy array over the result's own memory.
 *
 * The module does not link librtx: rtx/_library.py loads the library (the one RTX_LIBRARY names,
 * or the package's), and rtx/_values.py hands this module the addresses of the four C functions
 * it calls, so both reach the same library. Anything the fast path does not take (an
 * object that is not a numpy array, a non-contiguous array, a dtype without a buffer format rtx
 * knows) makes call_op return None before anything runs, and the caller takes the general path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "rtx.h"

/* The most dimensions a result is kept with inline; more go through the general path. */
#define INLINE_RANK 8
/* The most arguments and results one call takes here; more go through the general path. */
#define MAX_VALUES 16

typedef rtx_error_t *(*view_new_fn)(uint32_t, const int64_t *, size_t, const void *, size_t, rtx_buffer_view_t **);
typedef void (*view_release_fn)(rtx_buffer_view_t *);
typedef rtx_error_t *(*view_info_fn)(const rtx_buffer_view_t *, rtx_buffer_view_info_t *);
typedef rtx_error_t *(*call_op_fn)(rtx_context_t *, const char *, const char *, rtx_buffer_view_t *const *, size_t,
                                   const rtx_op_attrs_t *, rtx_buffer_view_t **, size_t);

/* What bind() gave: the library's functions and the Python objects the calls use. */
static struct {
  view_new_fn view_new;
  view_release_fn view_release;
  view_info_fn view_info;
  call_op_fn call_op;
  PyObject *ndarray;       /* numpy.ndarray: only its exact instances take the fast path */
  PyObject *element_types; /* buffer format (str) -> element type code (int) */
  PyObject *formats;       /* element type code (int) -> (buffer format (bytes), item size (int)) */
  PyObject *asarray;       /* numpy.asarray */
  PyObject *general_array; /* rtx._values.array: a result the fast path does not wrap */
} bound;

/* ---- Memory: a result buffer view's bytes, exported through the buffer protocol ---- */

typedef struct {
  PyObject_HEAD
  rtx_buffer_view_t *view; /* owned: released with the object */
  void *data;
  Py_ssize_t len;
  Py_ssize_t itemsize;
  int ndim;
  char format[8];
  Py_ssize_t shape[INLINE_RANK];
  Py_ssize_t strides[INLINE_RANK];
} Memory;

static void memory_dealloc(Memory *self) {
  if (self->view != NULL) {
    bound.view_release(self->view);
  }
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static int memory_getbuffer(Memory *self, Py_buffer *view, int flags) {
  if (flags & PyBUF_WRITABLE) {
    PyErr_SetString(PyExc_BufferError, "an rtx result is read-only");
    view->obj = NULL;
    return -1;
  }
  view->buf = self->data;
  Py_INCREF(self);
  view->obj = (PyObject *)self;
  view->len = self->len;
  view->readonly = 1;
  view->internal = NULL;
  view->suboffsets = NULL;
  if (flags & PyBUF_ND) {
    view->itemsize = self->itemsize;
    view->format = (flags & PyBUF_FORMAT) ? self->format : NULL;
    view->ndim = self->ndim;
    view->shape = self->shape;
    view->strides = (flags & PyBUF_STRIDES) ? self->strides : NULL;
  } else {
    /* A simple request sees the bytes. */
    view->itemsize = 1;
    view->format = NULL;
    view->ndim = 1;
    view->shape = NULL;
    view->strides = NULL;
  }
  return 0;
}

static PyBufferProcs memory_as_buffer = {(getbufferproc)memory_getbuffer, NULL};

static PyTypeObject MemoryType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rtx._native.Memory",
    .tp_basicsize = sizeof(Memory),
    .tp_dealloc = (destructor)memory_dealloc,
    .tp_as_buffer = &memory_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The memory of an rtx result, kept alive while a numpy array reads it.",
};

/* A numpy array over `view` (whose reference it takes), or the general path's result for views
 * the fast path does not wrap. NULL with an exception set on failure (the view released). */
static PyObject *result_array(rtx_buffer_view_t *view) {
  rtx_buffer_view_info_t info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  rtx_error_t *error = bound.view_info(view, &info);
  PyObject *format = NULL;
  if (error == NULL && info.data != NULL && info.rank <= INLINE_RANK) {
    PyObject *code = PyLong_FromUnsignedLong(info.element_type);
    if (code == NULL) {
      bound.view_release(view);
      return NULL;
    }
    format = PyDict_GetItemWithError(bound.formats, code); /* borrowed */
    Py_DECREF(code);
    if (format == NULL && PyErr_Occurred()) {
      bound.view_release(view);
      return NULL;
    }
  }
  PyObject *text = format ? PyTuple_GET_ITEM(format, 0) : NULL;
  if (text == NULL || PyBytes_GET_SIZE(text) >= (Py_ssize_t)sizeof(((Memory *)0)->format)) {
    /* An error here is the general path's to report (it reads the view again). */
    PyObject *address = PyLong_FromVoidPtr(view);
    if (address == NULL) {
      bound.view_release(view);
      return NULL;
    }
    PyObject *array = PyObject_CallOneArg(bound.general_array, address); /* takes the view */
    Py_DECREF(address);
    return array;
  }
  Memory *memory = PyObject_New(Memory, &MemoryType);
  if (memory == NULL) {
    bound.view_release(view);
    return NULL;
  }
  memory->view = view;
  memory->data = (void *)info.data;
  memory->len = (Py_ssize_t)info.byte_length;
  memory->ndim = (int)info.rank;
  memcpy(memory->format, PyBytes_AS_STRING(text), (size_t)PyBytes_GET_SIZE(text) + 1);
  memory->itemsize = PyLong_AsSsize_t(PyTuple_GET_ITEM(format, 1));
  for (size_t i = 0; i < info.rank; i++) {
    memory->shape[i] = (Py_ssize_t)info.shape[i];
  }
  Py_ssize_t stride = memory->itemsize;
  for (size_t i = info.rank; i-- > 0;) {
    memory->strides[i] = stride;
    stride *= memory->shape[i];
  }
  PyObject *array = PyObject_CallOneArg(bound.asarray, (PyObject *)memory);
  Py_DECREF(memory); /* the array holds it while it reads the memory */
  return array;
}

/* ---- the module's functions ---- */

static void *address_of(PyObject *value) { return PyLong_AsVoidPtr(value); }

static PyObject *bind(PyObject *module, PyObject *args) {
  (void)module;
  PyObject *view_new, *view_release, *view_info, *call_op;
  PyObject *ndarray, *element_types, *formats, *asarray, *general_array;
  if (!PyArg_ParseTuple(args, "OOOOOO!O!OO", &view_new, &view_release, &view_info, &call_op, &ndarray, &PyDict_Type,
                        &element_types, &PyDict_Type, &formats, &asarray, &general_array)) {
    return NULL;
  }
  bound.view_new = (view_new_fn)address_of(view_new);
  bound.view_release = (view_release_fn)address_of(view_release);
  bound.view_info = (view_info_fn)address_of(view_info);
  bound.call_op = (call_op_fn)address_of(call_op);
  if (PyErr_Occurred()) {
    return NULL;
  }
  if (!bound.view_new || !bound.view_release || !bound.view_info || !bound.call_op) {
    PyErr_SetString(PyExc_ValueError, "rtx._native.bind: a function address is NULL");
    return NULL;
  }
  Py_INCREF(ndarray);
  Py_INCREF(element_types);
  Py_INCREF(formats);
  Py_INCREF(asarray);
  Py_INCREF(general_array);
  Py_XSETREF(bound.ndarray, ndarray);
  Py_XSETREF(bound.element_types, element_types);
  Py_XSETREF(bound.formats, formats);
  Py_XSETREF(bound.asarray, asarray);
  Py_XSETREF(bound.general_array, general_array);
  Py_RETURN_NONE;
}

static void release_views(rtx_buffer_view_t **views, size_t count) {
  for (size_t i = 0; i < count; i++) {
    bound.view_release(views[i]);
  }
}

/* A new buffer view holding a copy of `array` (an exact numpy array), into *out: 1; 0 when the
 * fast path does not take it; -1 with an exception set. */
static int argument_view(PyObject *array, rtx_buffer_view_t **out, rtx_error_t **error) {
  if ((PyObject *)Py_TYPE(array) != bound.ndarray) {
    return 0;
  }
  Py_buffer buffer;
  if (PyObject_GetBuffer(array, &buffer, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
    PyErr_Clear(); /* not contiguous, or not exported: the general path copes */
    return 0;
  }
  int taken = 0;
  PyObject *code = buffer.format ? PyDict_GetItemString(bound.element_types, buffer.format) : NULL;
  if (code != NULL && buffer.ndim <= INLINE_RANK) {
    int64_t dims[INLINE_RANK];
    for (int i = 0; i < buffer.ndim; i++) {
      dims[i] = (int64_t)buffer.shape[i];
    }
    uint32_t element_type = (uint32_t)PyLong_AsUnsignedLong(code);
    *error = bound.view_new(element_type, buffer.ndim ? dims : NULL, (size_t)buffer.ndim,
                            buffer.len ? buffer.buf : NULL, (size_t)buffer.len, out);
    taken = 1;
  }
  PyBuffer_Release(&buffer);
  return taken;
}

/* call_op(context, handler, op, args, attrs, num_results): the op's results as numpy arrays; the
 * address of the rtx_error_t* when it fails (the caller raises it); None, having run nothing,
 * when an argument needs the general path. */
static PyObject *call_op(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
  (void)module;
  if (nargs != 6 || !PyBytes_Check(args[1]) || !PyBytes_Check(args[2]) || !PyTuple_Check(args[3])) {
    PyErr_SetString(PyExc_TypeError, "call_op(context: int, handler: bytes, op: bytes, args: tuple, attrs: int, "
                                     "num_results: int)");
    return NULL;
  }
  if (bound.call_op == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "rtx._native is not bound to librtx (rtx._native.bind)");
    return NULL;
  }
  rtx_context_t *context = (rtx_context_t *)PyLong_AsVoidPtr(args[0]);
  const rtx_op_attrs_t *attrs = (const rtx_op_attrs_t *)PyLong_AsVoidPtr(args[4]);
  Py_ssize_t num_results = PyLong_AsSsize_t(args[5]);
  if (PyErr_Occurred()) {
    return NULL;
  }
  Py_ssize_t num_args = PyTuple_GET_SIZE(args[3]);
  if (num_args > MAX_VALUES || num_results < 0 || num_results > MAX_VALUES) {
    Py_RETURN_NONE;
  }
  rtx_buffer_view_t *views[MAX_VALUES];
  size_t made = 0;
  rtx_error_t *error = NULL;
  for (Py_ssize_t i = 0; i < num_args; i++) {
    int taken = argument_view(PyTuple_GET_ITEM(args[3], i), &views[made], &error);
    if (taken <= 0 || error != NULL) {
      release_views(views, made);
      if (taken < 0) {
        return NULL;
      }
      if (error != NULL) {
        return PyLong_FromVoidPtr(error);
      }
      Py_RETURN_NONE;
    }
    made++;
  }
  rtx_buffer_view_t *results[MAX_VALUES];
  const char *handler = PyBytes_AS_STRING(args[1]);
  const char *op = PyBytes_AS_STRING(args[2]);
  /* The op may wait for work on the context's queue: other Python threads run meanwhile. */
  Py_BEGIN_ALLOW_THREADS
  error = bound.call_op(context, handler, op, views, made, attrs, results, (size_t)num_results);
  Py_END_ALLOW_THREADS
  release_views(views, made);
  if (error != NULL) {
    return PyLong_FromVoidPtr(error);
  }
  PyObject *list = PyList_New(num_results);
  for (Py_ssize_t i = 0; i < num_results; i++) {
    PyObject *array = list ? result_array(results[i]) : NULL;
    if (array == NULL) {
      if (list == NULL) {
        bound.view_release(results[i]);
      }
      for (Py_ssize_t k = i + 1; k < num_results; k++) {
        bound.view_release(results[k]);
      }
      Py_XDECREF(list);
      return NULL;
    }
    PyList_SET_ITEM(list, i, array);
  }
  return list;
}

static PyMethodDef methods[] = {
    {"bind", bind, METH_VARARGS, "Gives the module librtx's functions and the Python objects its calls use."},
    {"call_op", (PyCFunction)(void (*)(void))call_op, METH_FASTCALL,
     "Runs an eager op on numpy arrays through rtx_context_call_op."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "rtx._native", "The compiled calls of the rtx package (eager ops).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void) {
  if (PyType_Ready(&MemoryType) < 0) {
    return NULL;
  }
  return PyModule_Create(&module_def);
}
