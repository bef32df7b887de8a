// rtx.hpp: the C++17 interface of rtx, header-only, over the C API of <rtx.h>.
//
//   #include <rtx.hpp>
//   rtx::Context ctx;                                                   // default options
//   ctx.add_device("local-task");
//   rtx::Module mod = rtx::Module::load("model.vmfb");
//   ctx.add_module(mod);
//   std::vector<float> pixels(64, 0.5f);
//   rtx::BufferView x = rtx::BufferView::from(pixels, {1, 64});         // element type deduced
//   std::vector<rtx::AsyncValue> out = ctx.invoke("predict", {rtx::AsyncValue(x)});
//   out[0].and_then([] { /* runs when ready */ });
//   rtx::await(ctx, out);
//   std::vector<float> probs = out[0].get<rtx::BufferView>().to_vector<float>();
//
// Errors. By default a failing call throws rtx::Error (a std::runtime_error with the rtx status
// code and message). With RTX_NO_EXCEPTIONS defined before the include (required with
// -fno-exceptions), every fallible call returns rtx::Result<T> instead (ok(), value(), status()),
// and rtx::Result<void> where it would return nothing; the type is spelled rtx::Outcome<T> in
// this header, which is T (or void) in the default mode. Constructors that can fail (Context())
// abort with the message in that mode; use the static create() functions to get a Result.
//
// Ownership. Every class owns what its C handle owns and follows the C rules: Context,
// AsyncValue, BufferView, Module, NativeModule and VulkanDevice are reference counted, so copies
// share one object (retain) and moves transfer it; Task is move-only (a task runs or is deleted
// exactly once); KernelFrame borrows the frame of one kernel call. A child keeps its parent
// alive, so objects may be destroyed in any order. adopt(handle) takes over one C reference,
// handle() lends the C handle, release() gives the reference back to the caller.
//
// Threads. Context, AsyncValue, BufferView, Module, NativeModule and VulkanDevice may be used
// from many threads at once, as their C handles may (a single object is not to be assigned to
// while another thread reads it, like any C++ value). Callables given to rtx (and_then,
// when_all, enqueue, native module functions, kernels, a custom WorkQueue or Allocator) run on
// any of the context's threads, or at once on the calling thread when a value is already
// available; several may run at once, so what they share must be thread-safe. They must not
// await on a worker thread (it fails with FAILED_PRECONDITION); attach continuations instead.
// Callbacks run inside C frames: an exception escaping and_then/enqueue/when_all callables or a
// WorkQueue/Allocator calls std::terminate. Native functions and kernels may throw: the exception
// becomes the call's error.
#ifndef RTX_HPP
#define RTX_HPP

#include <rtx.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#if !defined(RTX_NO_EXCEPTIONS) && !defined(__cpp_exceptions) && !defined(__EXCEPTIONS)
#error "rtx.hpp: exceptions are disabled; define RTX_NO_EXCEPTIONS to get rtx::Result return values"
#endif
// Whether the compiler has exceptions: then what a native function or kernel throws is caught
// (whichever error mode the API is in) rather than unwinding through C frames.
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#define RTX_HPP_CATCHES 1
#include <exception>
#include <stdexcept>
#endif

namespace rtx {

using StatusCode = rtx_status_code_t;
using ValueType = rtx_value_type_t;
using ValueKind = rtx_value_kind_t;

// A status: OK, or a code and a message ("where: what").
class Status {
 public:
  Status() = default;
  // An error status: RTX_STATUS_CODE_OK is taken as UNKNOWN (OK is the default constructor's).
  Status(StatusCode code, std::string message)
      : code_(code == RTX_STATUS_CODE_OK ? RTX_STATUS_CODE_UNKNOWN : code), message_(std::move(message)) {}

  // Takes ownership of `error` (frees it); NULL is OK.
  static Status adopt(rtx_error_t* error) {
    if (error == nullptr) {
      return Status();
    }
    Status status(rtx_error_code(error), rtx_error_message(error));
    rtx_error_delete(error);
    return status;
  }

  bool ok() const noexcept { return code_ == RTX_STATUS_CODE_OK; }
  StatusCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  // "OK", or "NOT_FOUND: message".
  std::string to_string() const {
    return ok() ? std::string("OK") : std::string(rtx_status_code_name(code_)) + ": " + message_;
  }
  // A new rtx_error_t with this code and message, for a C callback to return (NULL when OK).
  rtx_error_t* to_c() const { return ok() ? nullptr : rtx_error_new(code_, message_.c_str()); }

 private:
  StatusCode code_ = RTX_STATUS_CODE_OK;
  std::string message_;
};

#ifndef RTX_NO_EXCEPTIONS
// A failed rtx call: what() is "CODE: message".
class Error : public std::runtime_error {
 public:
  explicit Error(Status status) : std::runtime_error(status.to_string()), status_(std::move(status)) {}
  Error(StatusCode code, std::string message) : Error(Status(code, std::move(message))) {}

  StatusCode code() const noexcept { return status_.code(); }
  const std::string& message() const noexcept { return status_.message(); }
  const Status& status() const noexcept { return status_; }

 private:
  Status status_;
};
#endif

namespace detail {
// What value() does with a failed Result: throws it, or without exceptions prints it and aborts.
[[noreturn]] inline void fail(const Status& status) {
#ifndef RTX_NO_EXCEPTIONS
  throw Error(status);
#else
  std::fprintf(stderr, "rtx: value() of a failed rtx::Result: %s\n", status.to_string().c_str());
  std::abort();
#endif
}
}  // namespace detail

// A value or the status saying why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // implicit, as std::expected
  // `status` must not be OK (an OK status becomes UNKNOWN: a Result without a value is an error).
  Result(Status status) : status_(status.ok() ? Status(RTX_STATUS_CODE_UNKNOWN, "no value") : std::move(status)) {}

  bool ok() const noexcept { return value_.has_value(); }
  explicit operator bool() const noexcept { return ok(); }
  const Status& status() const noexcept { return status_; }

  // The value; on an error, throws it as rtx::Error (RTX_NO_EXCEPTIONS: prints it and aborts).
  T& value() & {
    check();
    return *value_;
  }
  const T& value() const& {
    check();
    return *value_;
  }
  T&& value() && {
    check();
    return std::move(*value_);
  }
  T value_or(T fallback) const& { return ok() ? *value_ : std::move(fallback); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  void check() const {
    if (!ok()) {
      detail::fail(status_);
    }
  }
  std::optional<T> value_;
  Status status_;
};

// Success or the status of the failure.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Status status) : status_(std::move(status)) {}  // implicit, as std::expected

  bool ok() const noexcept { return status_.ok(); }
  explicit operator bool() const noexcept { return ok(); }
  const Status& status() const noexcept { return status_; }
  // Throws the error (RTX_NO_EXCEPTIONS: prints it and aborts); nothing on success.
  void value() const {
    if (!ok()) {
      detail::fail(status_);
    }
  }

 private:
  Status status_;
};

// What a fallible call returns: T (throwing rtx::Error) by default, Result<T> with
// RTX_NO_EXCEPTIONS.
#ifndef RTX_NO_EXCEPTIONS
template <typename T>
using Outcome = T;
#else
template <typename T>
using Outcome = Result<T>;
#endif

namespace detail {

// `make()` when `error` is NULL, else the error (thrown, or returned as a Result).
template <typename F>
Outcome<std::invoke_result_t<F>> complete(rtx_error_t* error, F&& make) {
  using T = std::invoke_result_t<F>;
  if (error != nullptr) {
#ifndef RTX_NO_EXCEPTIONS
    throw Error(Status::adopt(error));
#else
    return Result<T>(Status::adopt(error));
#endif
  }
  if constexpr (std::is_void_v<T>) {
    make();
#ifdef RTX_NO_EXCEPTIONS
    return Result<void>();
#endif
  } else {
    return make();
  }
}

inline Outcome<void> complete(rtx_error_t* error) {
  return complete(error, [] {});
}

// A Result as this mode returns it: thrown (or its value), or itself.
template <typename T>
Outcome<T> unwrap(Result<T> result) {
#ifndef RTX_NO_EXCEPTIONS
  if constexpr (std::is_void_v<T>) {
    result.value();
  } else {
    return std::move(result).value();
  }
#else
  return result;
#endif
}

// A constructor's failure: thrown, or (without exceptions) printed before aborting.
inline void check_constructed(rtx_error_t* error) {
  if (error != nullptr) {
    fail(Status::adopt(error));
  }
}

// A reference-counted C handle: copies retain, moves steal, the destructor releases.
template <typename Handle, Handle* (*Retain)(Handle*), void (*Release)(Handle*)>
class Shared {
 public:
  Shared() noexcept = default;
  Shared(const Shared& other) noexcept : handle_(Retain(other.handle_)) {}
  Shared(Shared&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Shared& operator=(const Shared& other) noexcept {
    Shared copy(other);
    std::swap(handle_, copy.handle_);
    return *this;
  }
  Shared& operator=(Shared&& other) noexcept {
    Shared moved(std::move(other));
    std::swap(handle_, moved.handle_);
    return *this;
  }
  ~Shared() { Release(handle_); }

  // The C handle, borrowed (NULL for an empty object).
  Handle* handle() const noexcept { return handle_; }
  // Gives up the reference: the caller releases the returned handle.
  Handle* release() noexcept { return std::exchange(handle_, nullptr); }
  explicit operator bool() const noexcept { return handle_ != nullptr; }
  friend bool operator==(const Shared& a, const Shared& b) noexcept { return a.handle_ == b.handle_; }
  friend bool operator!=(const Shared& a, const Shared& b) noexcept { return a.handle_ != b.handle_; }

 protected:
  explicit Shared(Handle* adopted) noexcept : handle_(adopted) {}

 private:
  Handle* handle_ = nullptr;
};

// A callable moved to the heap for a C callback that runs it once and frees it.
template <typename F>
struct Once {
  explicit Once(F&& f) : callable(std::move(f)) {}
  F callable;
  static void run(void* user_data) noexcept {
    std::unique_ptr<Once> self(static_cast<Once*>(user_data));
    self->callable();
  }
};

template <typename F>
Once<std::decay_t<F>>* once(F&& f) {
  static_assert(std::is_invocable_v<std::decay_t<F>&>, "the callable takes no arguments");
  return new Once<std::decay_t<F>>(std::decay_t<F>(std::forward<F>(f)));
}

template <typename T>
inline constexpr bool always_false = false;

// The calling convention letter of a scalar (`rtx_native_function_t::cconv`).
template <typename T>
struct Scalar {
  static_assert(always_false<T>, "native functions take and return int32_t, int64_t, float or double");
};
template <>
struct Scalar<std::int32_t> {
  static constexpr char letter = 'i';
  static std::int32_t read(const rtx_value_t& v) { return v.value.i32; }
  static void write(rtx_value_t& v, std::int32_t x) { v.value.i32 = x; }
};
template <>
struct Scalar<std::int64_t> {
  static constexpr char letter = 'I';
  static std::int64_t read(const rtx_value_t& v) { return v.value.i64; }
  static void write(rtx_value_t& v, std::int64_t x) { v.value.i64 = x; }
};
template <>
struct Scalar<float> {
  static constexpr char letter = 'f';
  static float read(const rtx_value_t& v) { return v.value.f32; }
  static void write(rtx_value_t& v, float x) { v.value.f32 = x; }
};
template <>
struct Scalar<double> {
  static constexpr char letter = 'F';
  static double read(const rtx_value_t& v) { return v.value.f64; }
  static void write(rtx_value_t& v, double x) { v.value.f64 = x; }
};

// The argument and result types of a lambda, function object or function pointer.
template <typename F>
struct Signature : Signature<decltype(&F::operator())> {};
template <typename R, typename... A>
struct Signature<R (*)(A...)> {
  using result = R;
  using parameters = std::tuple<A...>;
};
template <typename R, typename... A>
struct Signature<R(A...)> : Signature<R (*)(A...)> {};
template <typename C, typename R, typename... A>
struct Signature<R (C::*)(A...)> : Signature<R (*)(A...)> {};
template <typename C, typename R, typename... A>
struct Signature<R (C::*)(A...) const> : Signature<R (*)(A...)> {};
template <typename C, typename R, typename... A>
struct Signature<R (C::*)(A...) noexcept> : Signature<R (*)(A...)> {};
template <typename C, typename R, typename... A>
struct Signature<R (C::*)(A...) const noexcept> : Signature<R (*)(A...)> {};
template <typename R, typename... A>
struct Signature<R (*)(A...) noexcept> : Signature<R (*)(A...)> {};

template <typename T>
struct IsResult : std::false_type {};
template <typename T>
struct IsResult<Result<T>> : std::true_type {};

template <typename T>
struct IsTuple : std::false_type {};
template <typename... T>
struct IsTuple<std::tuple<T...>> : std::true_type {};

// A lambda's return type seen as a tuple of results: void -> (), T -> (T), tuple -> itself,
// Result<X> -> what X is.
template <typename R>
struct Results {
  using type = std::tuple<R>;
};
template <>
struct Results<void> {
  using type = std::tuple<>;
};
template <typename... T>
struct Results<std::tuple<T...>> {
  using type = std::tuple<T...>;
};
template <typename T>
struct Results<Result<T>> : Results<T> {};

// The letters of `Tuple`'s scalars, or "v" when it is empty.
template <typename Tuple, std::size_t... I>
std::string letters(std::index_sequence<I...>) {
  std::string out;
  (out.push_back(Scalar<std::tuple_element_t<I, Tuple>>::letter), ...);
  return out.empty() ? std::string("v") : out;
}
template <typename Tuple>
std::string letters() {
  return letters<Tuple>(std::make_index_sequence<std::tuple_size_v<Tuple>>());
}

}  // namespace detail

// IREE HAL element type codes ((numerical type << 24) | bits): signless integers (what MLIR's
// iN tensors are), signed and unsigned ones, booleans and IEEE/brain floats.
enum class ElementType : std::uint32_t {
  i1 = 0x13000008,
  i8 = 0x10000008,
  i16 = 0x10000010,
  i32 = 0x10000020,
  i64 = 0x10000040,
  si8 = 0x11000008,
  si16 = 0x11000010,
  si32 = 0x11000020,
  si64 = 0x11000040,
  ui8 = 0x12000008,
  ui16 = 0x12000010,
  ui32 = 0x12000020,
  ui64 = 0x12000040,
  f16 = 0x21000010,
  f32 = 0x21000020,
  f64 = 0x21000040,
  bf16 = 0x22000010,
};

// The element type a C++ type stands for: bool -> i1, integers -> signless of their width (as
// compiled programs take them), float -> f32, double -> f64.
template <typename T, typename = void>
struct ElementTypeOf {
  static_assert(detail::always_false<T>, "tensor elements are bool, integers, float or double");
};
template <>
struct ElementTypeOf<bool> {
  static constexpr ElementType value = ElementType::i1;
};
template <typename T>
struct ElementTypeOf<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8, "an 8- to 64-bit integer");
  static constexpr ElementType value = static_cast<ElementType>(0x10000000u | (sizeof(T) * 8));
};
template <>
struct ElementTypeOf<float> {
  static constexpr ElementType value = ElementType::f32;
};
template <>
struct ElementTypeOf<double> {
  static constexpr ElementType value = ElementType::f64;
};
template <typename T>
inline constexpr ElementType element_type_of = ElementTypeOf<T>::value;

// Bits per element of `type`.
constexpr std::uint32_t element_bits(ElementType type) { return static_cast<std::uint32_t>(type) & 0xFFu; }

namespace detail {
// Whether elements of `type` read as T: the same code, or for integers any integer kind (signless,
// signed, unsigned) of T's width.
template <typename T>
bool reads_as(std::uint32_t type) {
  if (type == static_cast<std::uint32_t>(element_type_of<T>)) {
    return true;
  }
  const std::uint32_t numerical = type >> 24;
  return std::is_integral_v<T> && !std::is_same_v<T, bool> && numerical >= 0x10 && numerical <= 0x12 &&
         element_bits(static_cast<ElementType>(type)) == sizeof(T) * 8;
}

inline std::string hex(std::uint32_t code) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", static_cast<unsigned>(code));
  return text;
}
}  // namespace detail

class BufferView;
class Context;

namespace detail {
// The C functions that make, set and read an async value holding a scalar T.
template <typename T>
struct Held {
  static_assert(always_false<T>, "an AsyncValue holds bool, int32_t, int64_t, float, double or a BufferView");
};
template <>
struct Held<bool> {
  static constexpr auto make = &rtx_async_value_new_i1;
  static constexpr auto set = &rtx_async_value_set_i1;
  static constexpr auto get = &rtx_async_value_get_i1;
};
template <>
struct Held<std::int32_t> {
  static constexpr auto make = &rtx_async_value_new_i32;
  static constexpr auto set = &rtx_async_value_set_i32;
  static constexpr auto get = &rtx_async_value_get_i32;
};
template <>
struct Held<std::int64_t> {
  static constexpr auto make = &rtx_async_value_new_i64;
  static constexpr auto set = &rtx_async_value_set_i64;
  static constexpr auto get = &rtx_async_value_get_i64;
};
template <>
struct Held<float> {
  static constexpr auto make = &rtx_async_value_new_f32;
  static constexpr auto set = &rtx_async_value_set_f32;
  static constexpr auto get = &rtx_async_value_get_f32;
};
template <>
struct Held<double> {
  static constexpr auto make = &rtx_async_value_new_f64;
  static constexpr auto set = &rtx_async_value_set_f64;
  static constexpr auto get = &rtx_async_value_get_f64;
};
}  // namespace detail

// A tensor: element type, shape and a dense row-major copy of the data. Reference counted;
// immutable, so it may be shared between threads freely.
class BufferView : public detail::Shared<rtx_buffer_view_t, rtx_buffer_view_retain, rtx_buffer_view_release> {
 public:
  BufferView() noexcept = default;
  static BufferView adopt(rtx_buffer_view_t* view) noexcept { return BufferView(view); }
  static BufferView retain(rtx_buffer_view_t* view) noexcept { return BufferView(rtx_buffer_view_retain(view)); }

  // A copy of `byte_length` bytes at `data`, elements of `type`, dimensions `shape`.
  static Outcome<BufferView> create(ElementType type, const std::vector<std::int64_t>& shape, const void* data,
                                    std::size_t byte_length) {
    rtx_buffer_view_t* view = nullptr;
    rtx_error_t* error = rtx_buffer_view_new(static_cast<std::uint32_t>(type), shape.data(), shape.size(), data,
                                             byte_length, &view);
    return detail::complete(error, [&] { return adopt(view); });
  }

  // A copy of the elements shape[0] * shape[1] * ... at `data`, their type deduced from T.
  template <typename T>
  static Outcome<BufferView> from(const T* data, const std::vector<std::int64_t>& shape) {
    std::size_t count = 1;
    for (std::int64_t dim : shape) {
      count *= dim < 0 ? 0 : static_cast<std::size_t>(dim);  // negative: rtx names the dimension
    }
    return create(element_type_of<T>, shape, data, count * sizeof(T));
  }

  // A copy of a contiguous range (std::vector, std::array, C array, span...), its element type
  // deduced; the range must hold exactly the elements `shape` needs.
  template <typename Range, typename T = std::remove_cv_t<std::remove_reference_t<decltype(*std::data(
                                std::declval<const Range&>()))>>>
  static Outcome<BufferView> from(const Range& range, const std::vector<std::int64_t>& shape) {
    return create(element_type_of<T>, shape, std::data(range), std::size(range) * sizeof(T));
  }

  // As from(range, shape), with the element type given (e.g. ElementType::si32 for int32_t data).
  template <typename Range, typename T = std::remove_cv_t<std::remove_reference_t<decltype(*std::data(
                                std::declval<const Range&>()))>>>
  static Outcome<BufferView> from(const Range& range, const std::vector<std::int64_t>& shape, ElementType type) {
    return create(type, shape, std::data(range), std::size(range) * sizeof(T));
  }

  ElementType element_type() const noexcept {
    return static_cast<ElementType>(rtx_buffer_view_element_type(handle()));
  }
  std::size_t rank() const noexcept { return rtx_buffer_view_rank(handle()); }
  // Dimension `index`; -1 past the rank.
  std::int64_t dim(std::size_t index) const noexcept { return rtx_buffer_view_dim(handle(), index); }
  std::vector<std::int64_t> shape() const {
    std::vector<std::int64_t> dims(rank());
    for (std::size_t i = 0; i < dims.size(); ++i) {
      dims[i] = dim(i);
    }
    return dims;
  }
  std::size_t element_count() const noexcept {
    std::size_t count = 1;
    for (std::size_t i = 0; i < rank(); ++i) {
      count *= static_cast<std::size_t>(dim(i));
    }
    return count;
  }
  std::size_t byte_length() const noexcept { return rtx_buffer_view_byte_length(handle()); }
  // The data, borrowed while this view lives; NULL where it is not host-addressable (read it with
  // copy_to or to_vector then). Not while a call given this view as an argument still runs.
  const void* data() const noexcept { return rtx_buffer_view_data(handle()); }

  // Copies the data to `out` (room for `capacity` bytes): OUT_OF_RANGE when it does not fit.
  Outcome<void> copy_to(void* out, std::size_t capacity) const {
    return detail::complete(rtx_buffer_view_copy_data(handle(), out, capacity));
  }

  // The elements, as T: INVALID_ARGUMENT unless the element type reads as T (the same type, or
  // for integers any integer type of T's width).
  template <typename T>
  Outcome<std::vector<T>> to_vector() const {
    static_assert(std::is_trivially_copyable_v<T>, "elements are copied as bytes");
    const std::uint32_t type = rtx_buffer_view_element_type(handle());
    if (handle() == nullptr || !detail::reads_as<T>(type)) {
      return detail::unwrap(Result<std::vector<T>>(Status(
          RTX_STATUS_CODE_INVALID_ARGUMENT,
          handle() == nullptr ? std::string("rtx::BufferView::to_vector: an empty BufferView")
                              : "rtx::BufferView::to_vector: the elements are of type " + detail::hex(type) +
                                    ", not " + detail::hex(static_cast<std::uint32_t>(element_type_of<T>)))));
    }
    std::vector<T> out(byte_length() / sizeof(T));
    rtx_error_t* error = rtx_buffer_view_copy_data(handle(), out.data(), out.size() * sizeof(T));
    return detail::complete(error, [&] { return std::move(out); });
  }

 private:
  explicit BufferView(rtx_buffer_view_t* view) noexcept : Shared(view) {}
};

// An async value: unavailable, a concrete scalar, chain or tensor, or an error. Reference counted,
// thread-safe.
class AsyncValue : public detail::Shared<rtx_async_value_t, rtx_async_value_retain, rtx_async_value_release> {
 public:
  // An empty object (no value); assign one to it.
  AsyncValue() noexcept = default;
  // An available value holding `view` (a tensor argument of Context::invoke).
  explicit AsyncValue(const BufferView& view) : Shared(rtx_async_value_new_buffer_view(view.handle())) {}

  static AsyncValue adopt(rtx_async_value_t* value) noexcept { return AsyncValue(value); }
  static AsyncValue retain(rtx_async_value_t* value) noexcept { return AsyncValue(rtx_async_value_retain(value)); }

  // An available value: bool (i1), int32_t, int64_t, float, double or a BufferView.
  template <typename T>
  static AsyncValue of(const T& value) {
    if constexpr (std::is_same_v<T, BufferView>) {
      return AsyncValue(value);
    } else {
      return adopt(detail::Held<T>::make(value));
    }
  }
  static AsyncValue chain() { return adopt(rtx_async_value_new_chain()); }
  // A promise: set_*() or set_error() makes it available.
  static AsyncValue unavailable() { return adopt(rtx_async_value_new_unavailable()); }
  // A promise completed by forward_to().
  static AsyncValue indirect() { return adopt(rtx_async_value_new_indirect()); }
  static AsyncValue error(StatusCode code, const std::string& message) {
    return adopt(rtx_async_value_new_error(code, message.c_str()));
  }
  static AsyncValue error(const Status& status) { return error(status.code(), status.message()); }

  bool is_available() const noexcept { return rtx_async_value_is_available(handle()); }
  bool is_error() const noexcept { return rtx_async_value_is_error(handle()); }
  ValueType type() const noexcept { return rtx_async_value_type(handle()); }

  // Makes an unavailable value available (FAILED_PRECONDITION if it already is).
  template <typename T>
  Outcome<void> set(const T& value) const {
    if constexpr (std::is_same_v<T, BufferView>) {
      return detail::complete(rtx_async_value_set_buffer_view(handle(), value.handle()));
    } else {
      return detail::complete(detail::Held<T>::set(handle(), value));
    }
  }
  Outcome<void> set_chain() const { return detail::complete(rtx_async_value_set_chain(handle())); }
  Outcome<void> set_error(StatusCode code, const std::string& message) const {
    return detail::complete(rtx_async_value_set_error_code(handle(), code, message.c_str()));
  }
  Outcome<void> set_error(const Status& status) const { return set_error(status.code(), status.message()); }
  // Completes an indirect value as an alias of `target` (now, or when target is available).
  Outcome<void> forward_to(const AsyncValue& target) const {
    return detail::complete(rtx_async_value_forward(handle(), target.handle()));
  }

  // The value as T (bool, int32_t, int64_t, float, double or BufferView): the value's own error,
  // FAILED_PRECONDITION while unavailable, INVALID_ARGUMENT when it holds another type.
  template <typename T>
  Outcome<T> get() const {
    return detail::unwrap(try_get<T>());
  }
  // As get(), as a Result in either mode: for callables that must not throw (and_then).
  template <typename T>
  Result<T> try_get() const {
    T out{};
    rtx_error_t* error = nullptr;
    if constexpr (std::is_same_v<T, BufferView>) {
      rtx_buffer_view_t* view = nullptr;
      error = rtx_async_value_get_buffer_view(handle(), &view);
      out = BufferView::adopt(view);
    } else {
      error = detail::Held<T>::get(handle(), &out);
    }
    if (error != nullptr) {
      return Status::adopt(error);
    }
    return out;
  }

  // The value's error; OK when it is not one (or not available yet).
  Status status() const { return Status::adopt(rtx_async_value_get_error(handle())); }

  // Runs `f()` once the value is available (concrete or error): at once on this thread if it
  // already is, else on the thread that sets it. Nothing for an empty AsyncValue.
  template <typename F>
  void and_then(F&& f) const {
    if (handle() == nullptr) {
      return;  // rtx would never run it
    }
    auto* callable = detail::once(std::forward<F>(f));
    rtx_async_value_and_then(handle(), &std::remove_pointer_t<decltype(callable)>::run, callable);
  }

  // Blocks until the value is available (see rtx::await).
  Outcome<void> await(const Context& context) const;

 private:
  explicit AsyncValue(rtx_async_value_t* value) noexcept : Shared(value) {}
};

// Runs `f()` once every one of `values` is available (at once if they all are). Nothing if one
// of them is an empty AsyncValue.
template <typename F>
void when_all(const std::vector<AsyncValue>& values, F&& f) {
  std::vector<rtx_async_value_t*> handles;
  handles.reserve(values.size());
  for (const AsyncValue& value : values) {
    if (!value) {
      return;  // rtx would never run it
    }
    handles.push_back(value.handle());
  }
  auto* callable = detail::once(std::forward<F>(f));
  rtx_async_value_run_when_ready(handles.data(), handles.size(), &std::remove_pointer_t<decltype(callable)>::run,
                                 callable);
}

// A unit of work rtx hands to a custom WorkQueue: run() it (or destroy it, which deletes it
// unrun) exactly once, on any thread. Move-only.
class Task {
 public:
  Task() noexcept = default;
  static Task adopt(rtx_task_t* task) noexcept { return Task(task); }
  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Task& operator=(Task&& other) noexcept {
    Task moved(std::move(other));
    std::swap(handle_, moved.handle_);
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() { rtx_task_delete(handle_); }

  // Runs the task and frees it; the object is empty afterwards.
  void run() noexcept { rtx_task_run(std::exchange(handle_, nullptr)); }
  rtx_task_t* handle() const noexcept { return handle_; }
  rtx_task_t* release() noexcept { return std::exchange(handle_, nullptr); }
  explicit operator bool() const noexcept { return handle_ != nullptr; }

 private:
  explicit Task(rtx_task_t* task) noexcept : handle_(task) {}
  rtx_task_t* handle_ = nullptr;
};

// A work queue the host provides (ContextOptions::custom_work_queue). Its functions may be called
// from any thread at once and must not block the caller.
class WorkQueue {
 public:
  virtual ~WorkQueue() = default;
  // Takes `task`; run it (or let it go, which deletes it unrun) exactly once.
  virtual void add_task(Task task) = 0;
  // Takes `task` for work that may block: return an empty Task to accept it, or give it back to
  // refuse it. With `allow_queuing` false, accept only if a thread can start it at once.
  virtual Task add_blocking_task(Task task, bool allow_queuing) {
    (void)allow_queuing;
    return task;
  }
  // How many tasks run at once (Context::parallelism), read once when the context is made.
  virtual std::uint32_t parallelism() const { return 1; }
  // The queue's name for messages, read once when the context is made.
  virtual std::string name() const { return "custom"; }
};

// An allocator the host provides (ContextOptions::allocator); called from any thread at once.
class Allocator {
 public:
  virtual ~Allocator() = default;
  // `size` (non-zero) bytes aligned to `align` (a power of two), or nullptr when out of memory.
  virtual void* allocate(std::size_t size, std::size_t align) = 0;
  // Memory from allocate(), with its size and alignment.
  virtual void deallocate(void* ptr, std::size_t size, std::size_t align) = 0;
};

struct ContextOptions {
  // "s" (single-threaded: tasks run inside await/quiesce), "mstd" (one worker per core),
  // "mstd:N" or "mstd:N,M"; empty means "mstd".
  std::string work_queue;
  // When set, used instead of work_queue; kept until the context is freed.
  std::shared_ptr<WorkQueue> custom_work_queue;
  // When set, the context's memory (tensors, device buffers, transients, VM buffers) comes from
  // it; kept until its last memory is returned.
  std::shared_ptr<Allocator> allocator;
  // The most bytes the context may hold from its allocator at once; 0 means no limit. Past it an
  // allocation fails with RESOURCE_EXHAUSTED.
  std::uint64_t memory_limit = 0;
};

// What a context's allocator has handed out for it (Context::memory_stats).
using MemoryStats = rtx_memory_stats_t;

// One exported function of a Module.
struct FunctionSignature {
  std::string name;
  std::string calling_convention;  // "0iI_f"; empty if the module declares none
  std::optional<std::string> declaration;  // iree.abi.declaration, or a BEF function's types
  std::vector<ValueKind> arguments;
  std::vector<ValueKind> results;
};

// A compiled module: IREE VM bytecode (.vmfb) or BEF. Reference counted, immutable.
class Module : public detail::Shared<rtx_module_t, rtx_module_retain, rtx_module_release> {
 public:
  Module() noexcept = default;
  static Module adopt(rtx_module_t* module) noexcept { return Module(module); }
  static Module retain(rtx_module_t* module) noexcept { return Module(rtx_module_retain(module)); }

  // Loads and verifies the file at `path` (mapped: it must not change while the module lives).
  static Outcome<Module> load(const std::string& path) {
    rtx_module_t* module = nullptr;
    rtx_error_t* error = rtx_module_load_file(path.c_str(), &module);
    return detail::complete(error, [&] { return adopt(module); });
  }
  // Loads and verifies a copy of `size` bytes at `data`.
  static Outcome<Module> from_memory(const void* data, std::size_t size) {
    rtx_module_t* module = nullptr;
    rtx_error_t* error = rtx_module_load_memory(static_cast<const std::uint8_t*>(data), size, &module);
    return detail::complete(error, [&] { return adopt(module); });
  }

  std::string name() const { return rtx_module_name(handle()); }
  std::size_t function_count() const noexcept { return rtx_module_function_count(handle()); }
  // The name of function `index`; empty past the end.
  std::string function_name(std::size_t index) const {
    const char* name = rtx_module_function_name(handle(), index);
    return name == nullptr ? std::string() : std::string(name);
  }
  // The index of the function called `name`, if there is one.
  std::optional<std::size_t> find_function(const std::string& name) const {
    for (std::size_t i = 0; i < function_count(); ++i) {
      const char* candidate = rtx_module_function_name(handle(), i);
      if (candidate != nullptr && name == candidate) {
        return i;
      }
    }
    return std::nullopt;
  }
  // Function `index`: OUT_OF_RANGE past the end; UNIMPLEMENTED or INVALID_ARGUMENT when its
  // calling convention cannot be described.
  Outcome<FunctionSignature> signature(std::size_t index) const {
    return detail::unwrap(describe(index));
  }
  // Every function that can be described, in export order.
  std::vector<FunctionSignature> functions() const {
    std::vector<FunctionSignature> out;
    for (std::size_t i = 0; i < function_count(); ++i) {
      if (Result<FunctionSignature> described = describe(i); described.ok()) {
        out.push_back(std::move(described).value());
      }
    }
    return out;
  }

 private:
  explicit Module(rtx_module_t* module) noexcept : Shared(module) {}

  Result<FunctionSignature> describe(std::size_t index) const {
    rtx_function_signature_t c{};
    c.struct_size = sizeof c;
    if (rtx_error_t* error = rtx_module_function_signature(handle(), index, &c)) {
      return Status::adopt(error);
    }
    FunctionSignature s;
    s.name = c.name;
    s.calling_convention = c.calling_convention;
    if (c.declaration != nullptr) {
      s.declaration = c.declaration;
    }
    s.arguments.assign(c.argument_kinds, c.argument_kinds + c.num_arguments);
    s.results.assign(c.result_kinds, c.result_kinds + c.num_results);
    return s;
  }
};

namespace detail {

// One function of a NativeModule built from C++: its name, calling convention and callable.
struct NativeFunction {
  NativeFunction(std::string name_, std::string cconv_, std::size_t num_results_, const void* state_type_)
      : name(std::move(name_)), cconv(std::move(cconv_)), num_results(num_results_), state_type(state_type_) {}
  virtual ~NativeFunction() = default;
  virtual rtx_error_t* call(void* state, const rtx_value_t* args, rtx_value_t* results) = 0;
  std::string name;
  std::string cconv;
  std::size_t num_results;
  const void* state_type;  // type_tag<S> of the S& it takes first, or nullptr
};

// A unique address per type, to tell state types apart without RTTI.
template <typename T>
struct TypeTag {
  static constexpr char id = 0;
};
template <typename T>
constexpr const void* type_tag() {
  return &TypeTag<T>::id;
}

// The parameters of a native function: an optional first `S&` (the per-context state), then
// scalars.
template <typename Parameters>
struct NativeParameters {
  using State = void;
  using Scalars = Parameters;
};
template <typename First, typename... Rest>
struct NativeParameters<std::tuple<First, Rest...>> {
  static constexpr bool stateful = std::is_lvalue_reference_v<First> && std::is_class_v<std::remove_reference_t<First>>;
  using State = std::conditional_t<stateful, std::remove_reference_t<First>, void>;
  using Scalars = std::conditional_t<stateful, std::tuple<std::decay_t<Rest>...>,
                                     std::tuple<std::decay_t<First>, std::decay_t<Rest>...>>;
};

// The error a callback's exception becomes.
#ifdef RTX_HPP_CATCHES
inline Status caught(const char* where) {
  try {
    throw;
#ifndef RTX_NO_EXCEPTIONS
  } catch (const Error& e) {
    return e.status();
#endif
  } catch (const std::exception& e) {
    return Status(RTX_STATUS_CODE_INTERNAL, std::string(where) + ": " + e.what());
  } catch (...) {
    return Status(RTX_STATUS_CODE_UNKNOWN, std::string(where) + ": an exception that is not a std::exception");
  }
}
#endif

template <typename F>
struct NativeLambda final : NativeFunction {
  using Sig = Signature<F>;
  using State = typename NativeParameters<typename Sig::parameters>::State;
  using Arguments = typename NativeParameters<typename Sig::parameters>::Scalars;
  using Returned = typename Sig::result;
  using ResultTuple = typename Results<Returned>::type;

  NativeLambda(std::string name_, F f)
      : NativeFunction(std::move(name_), "0" + letters<Arguments>() + "_" + letters<ResultTuple>(),
                       std::tuple_size_v<ResultTuple>, std::is_void_v<State> ? nullptr : type_tag<State>()),
        callable(std::move(f)) {}

  rtx_error_t* call(void* state, const rtx_value_t* args, rtx_value_t* results) override {
#ifdef RTX_HPP_CATCHES
    try {
      return invoke(state, args, results, std::make_index_sequence<std::tuple_size_v<Arguments>>());
    } catch (...) {
      return caught(name.c_str()).to_c();
    }
#else
    return invoke(state, args, results, std::make_index_sequence<std::tuple_size_v<Arguments>>());
#endif
  }

  template <std::size_t... I>
  rtx_error_t* invoke(void* state, const rtx_value_t* args, rtx_value_t* results, std::index_sequence<I...>) {
    (void)args;
    const auto apply = [&] {
      if constexpr (std::is_void_v<State>) {
        (void)state;
        return callable(Scalar<std::tuple_element_t<I, Arguments>>::read(args[I])...);
      } else {
        return callable(*static_cast<State*>(state), Scalar<std::tuple_element_t<I, Arguments>>::read(args[I])...);
      }
    };
    if constexpr (std::is_void_v<Returned>) {
      apply();
      (void)results;
    } else if constexpr (IsResult<Returned>::value) {
      Returned returned = apply();
      if (!returned.ok()) {
        return returned.status().to_c();
      }
      if constexpr (!std::is_void_v<decltype(returned.value())>) {
        write(results, std::move(returned).value());
      }
    } else {
      write(results, apply());
    }
    return nullptr;
  }

  template <typename V>
  static void write(rtx_value_t* results, V&& value) {
    if constexpr (IsTuple<std::decay_t<V>>::value) {
      write_tuple(results, value, std::make_index_sequence<std::tuple_size_v<std::decay_t<V>>>());
    } else {
      Scalar<std::decay_t<V>>::write(results[0], value);
    }
  }
  template <typename Tuple, std::size_t... I>
  static void write_tuple(rtx_value_t* results, const Tuple& values, std::index_sequence<I...>) {
    (Scalar<std::tuple_element_t<I, Tuple>>::write(results[I], std::get<I>(values)), ...);
  }

  F callable;
};

// What a native module built from C++ owns: its functions (freed by the module's destroy).
struct NativeFunctions {
  std::vector<std::unique_ptr<NativeFunction>> functions;
};

// A module's per-context state of type S: made when the module is added to a context, freed with
// that context.
template <typename S>
struct StateOf {
  static rtx_error_t* create(void* user_data, void** out_state) noexcept {
    (void)user_data;
#ifdef RTX_HPP_CATCHES
    try {
      *out_state = new S();
    } catch (...) {
      return caught("rtx::NativeModule state").to_c();
    }
#else
    *out_state = new S();
#endif
    return nullptr;
  }
  static void destroy(void* user_data, void* state) noexcept {
    (void)user_data;
    delete static_cast<S*>(state);
  }
};

// The C functions a NativeModule's functions are called through: one per ordinal, since C passes
// only the module's user_data.
inline constexpr std::size_t max_native_functions = 128;

template <std::size_t I>
rtx_error_t* native_thunk(void* user_data, void* state, const rtx_value_t* args, std::size_t num_args,
                          rtx_value_t* results, std::size_t num_results) noexcept {
  (void)num_args;
  (void)num_results;  // rtx passes exactly the counts of the calling convention
  return static_cast<NativeFunctions*>(user_data)->functions[I]->call(state, args, results);
}

template <std::size_t... I>
constexpr std::array<rtx_native_function_fn, sizeof...(I)> native_thunks(std::index_sequence<I...>) {
  return {{&native_thunk<I>...}};
}

inline void destroy_native_functions(void* user_data) { delete static_cast<NativeFunctions*>(user_data); }

// What C++ remembers of a native module: its name and its functions' result counts.
struct NativeSignatures {
  std::string name;
  std::vector<std::pair<std::string, std::size_t>> functions;
};

}  // namespace detail

// A module whose functions are C++ callables, for compiled programs to import
// (`name.function`) and for Context::invoke to call. Reference counted, immutable.
class NativeModule : public detail::Shared<rtx_native_module_t, rtx_native_module_retain, rtx_native_module_release> {
 public:
  NativeModule() noexcept = default;
  // Takes over one reference; Context::invoke does not know the result counts of such a module.
  static NativeModule adopt(rtx_native_module_t* module) noexcept { return NativeModule(module); }
  static NativeModule retain(rtx_native_module_t* module) noexcept {
    return NativeModule(rtx_native_module_retain(module));
  }

  // Collects functions, then build()s the module:
  //   NativeModule::Builder("host").function("mix", [](int64_t n, double x) { return n * 2.5 + x; }).build()
  class Builder {
   public:
    // `name`: what imports write before the first '.'; `version`: checked against a bytecode
    // module's minimum version of this dependency.
    explicit Builder(std::string name, std::uint32_t version = 0)
        : name_(std::move(name)), version_(version), functions_(std::make_unique<detail::NativeFunctions>()) {}

    // Gives the module a state of type S (default-constructed) in each context it is added to:
    // functions whose first parameter is S& get the calling context's. Calls for one context
    // never overlap, so the state needs no lock.
    template <typename S>
    Builder& state() {
      static_assert(std::is_default_constructible_v<S>, "the state is default-constructed per context");
      state_type_ = detail::type_tag<S>();
      create_state_ = &detail::StateOf<S>::create;
      destroy_state_ = &detail::StateOf<S>::destroy;
      return *this;
    }

    // Adds function `name`, implemented by `f`: its arguments and results are int32_t, int64_t,
    // float or double (the calling convention is derived from them), after an optional first
    // S& (the state()); it returns nothing, one scalar, a std::tuple of them, or a Result<that>
    // to fail the call with its status (or throws, in the default mode). It is shared by every
    // context the module is added to and may run on several threads at once.
    template <typename F>
    Builder& function(std::string name, F f) {
      functions_->functions.push_back(
          std::make_unique<detail::NativeLambda<std::decay_t<F>>>(std::move(name), std::move(f)));
      return *this;
    }

    // The module; INVALID_ARGUMENT (naming the function) for a bad name or a duplicate function.
    // The builder is empty afterwards.
    Outcome<NativeModule> build() {
      std::unique_ptr<detail::NativeFunctions> functions = std::move(functions_);
      functions_ = std::make_unique<detail::NativeFunctions>();
      if (functions->functions.size() > detail::max_native_functions) {
        return detail::unwrap(Result<NativeModule>(
            Status(RTX_STATUS_CODE_INVALID_ARGUMENT, "rtx::NativeModule: a module built from C++ has at most " +
                                                         std::to_string(detail::max_native_functions) +
                                                         " functions")));
      }
      static constexpr auto thunks = detail::native_thunks(std::make_index_sequence<detail::max_native_functions>());
      std::vector<rtx_native_function_t> table;
      std::vector<std::size_t> result_counts;
      for (std::size_t i = 0; i < functions->functions.size(); ++i) {
        const detail::NativeFunction& f = *functions->functions[i];
        if (f.state_type != nullptr && f.state_type != state_type_) {
          return detail::unwrap(Result<NativeModule>(
              Status(RTX_STATUS_CODE_INVALID_ARGUMENT, "rtx::NativeModule: function `" + name_ + "." + f.name +
                                                           "` takes a state that is not the module's state<S>()")));
        }
        table.push_back(rtx_native_function_t{f.name.c_str(), f.cconv.c_str(), thunks[i]});
      }
      rtx_native_module_options_t options;
      rtx_native_module_options_init(&options);
      options.name = name_.c_str();
      options.version = version_;
      options.functions = table.data();
      options.num_functions = table.size();
      options.user_data = functions.get();
      options.destroy = &detail::destroy_native_functions;
      options.create_state = create_state_;
      options.destroy_state = destroy_state_;
      rtx_native_module_t* module = nullptr;
      rtx_error_t* error = rtx_native_module_new(&options, &module);
      detail::NativeSignatures signatures{name_, {}};
      if (error == nullptr) {
        for (const auto& f : functions->functions) {
          signatures.functions.emplace_back(f->name, f->num_results);
        }
        functions.release();  // the module's now: its destroy frees them
      }
      return detail::complete(error, [&] { return NativeModule(module, std::move(signatures)); });
    }

   private:
    std::string name_;
    std::uint32_t version_;
    std::unique_ptr<detail::NativeFunctions> functions_;
    const void* state_type_ = nullptr;
    rtx_error_t* (*create_state_)(void*, void**) = nullptr;
    void (*destroy_state_)(void*, void*) = nullptr;
  };

  // The module's name; empty for an adopted handle or an empty object.
  const std::string& name() const noexcept { return signatures().name; }
  // Function names and result counts, in ordinal order; empty for an adopted handle.
  const std::vector<std::pair<std::string, std::size_t>>& functions() const noexcept {
    return signatures().functions;
  }

 private:
  explicit NativeModule(rtx_native_module_t* module) noexcept : Shared(module) {}
  NativeModule(rtx_native_module_t* module, detail::NativeSignatures signatures)
      : Shared(module), signatures_(std::make_shared<const detail::NativeSignatures>(std::move(signatures))) {}
  const detail::NativeSignatures& signatures() const noexcept {
    static const detail::NativeSignatures none;
    return signatures_ ? *signatures_ : none;
  }
  std::shared_ptr<const detail::NativeSignatures> signatures_;
};

// What a kernel sees of its call (borrowed: valid during the call only).
class KernelFrame {
 public:
  explicit KernelFrame(rtx_kernel_frame_t* frame) noexcept : frame_(frame) {}
  rtx_kernel_frame_t* handle() const noexcept { return frame_; }

  std::size_t num_args() const noexcept { return rtx_kernel_frame_num_args(frame_); }
  std::size_t num_results() const noexcept { return rtx_kernel_frame_num_results(frame_); }
  // Argument `index`, an available value (an empty AsyncValue past the end).
  AsyncValue arg(std::size_t index) const { return AsyncValue::retain(rtx_kernel_frame_arg(frame_, index)); }
  // Sets result `index` (now or, for an unavailable value, later).
  void set_result(std::size_t index, AsyncValue value) const {
    rtx_kernel_frame_set_result(frame_, index, value.release());
  }
  // Fails the kernel: every result not set yet becomes an INTERNAL error with `message`.
  void report_error(const std::string& message) const { rtx_kernel_frame_report_error(frame_, message.c_str()); }

  // Attribute `name` (they need the BEF file's attribute-names section): NOT_FOUND without one.
  Outcome<std::int64_t> attr_i64(const std::string& name) const {
    std::int64_t out = 0;
    rtx_error_t* error = rtx_kernel_frame_attr_i64(frame_, name.c_str(), &out);
    return detail::complete(error, [&] { return out; });
  }
  Outcome<double> attr_f64(const std::string& name) const {
    double out = 0;
    rtx_error_t* error = rtx_kernel_frame_attr_f64(frame_, name.c_str(), &out);
    return detail::complete(error, [&] { return out; });
  }
  Outcome<std::string> attr_string(const std::string& name) const {
    const char* data = nullptr;
    std::size_t size = 0;
    rtx_error_t* error = rtx_kernel_frame_attr_string(frame_, name.c_str(), &data, &size);
    return detail::complete(error, [&] { return std::string(data, size); });
  }

 private:
  rtx_kernel_frame_t* frame_;
};

// A physical Vulkan device as rtx_vulkan_device_info describes it.
struct VulkanDeviceInfo {
  std::size_t index = 0;
  std::string name;
  std::uint32_t vendor_id = 0;
  std::uint32_t device_id = 0;
  std::uint32_t api_version = 0;  // VK_MAKE_API_VERSION encoding
  std::array<std::uint8_t, 16> uuid{};
  std::string driver;
  std::uint64_t device_local_bytes = 0;
};

// An open Vulkan device (a logical device with a compute queue). Reference counted, thread-safe;
// contexts it is added to keep it open.
class VulkanDevice : public detail::Shared<rtx_vulkan_device_t, rtx_vulkan_device_retain, rtx_vulkan_device_release> {
 public:
  VulkanDevice() noexcept = default;
  static VulkanDevice adopt(rtx_vulkan_device_t* device) noexcept { return VulkanDevice(device); }
  static VulkanDevice retain(rtx_vulkan_device_t* device) noexcept {
    return VulkanDevice(rtx_vulkan_device_retain(device));
  }

  // How many physical devices there are (0 where there is no Vulkan).
  static Outcome<std::size_t> count() {
    std::size_t n = 0;
    rtx_error_t* error = rtx_vulkan_device_count(&n);
    return detail::complete(error, [&] { return n; });
  }
  // Physical device `index`: OUT_OF_RANGE past the last.
  static Outcome<VulkanDeviceInfo> info(std::size_t index) { return detail::unwrap(describe(index)); }
  // Every physical device.
  static Outcome<std::vector<VulkanDeviceInfo>> enumerate() {
    std::size_t n = 0;
    if (rtx_error_t* error = rtx_vulkan_device_count(&n)) {
      return detail::unwrap(Result<std::vector<VulkanDeviceInfo>>(Status::adopt(error)));
    }
    std::vector<VulkanDeviceInfo> devices;
    for (std::size_t i = 0; i < n; ++i) {
      Result<VulkanDeviceInfo> device = describe(i);
      if (!device.ok()) {
        return detail::unwrap(Result<std::vector<VulkanDeviceInfo>>(device.status()));
      }
      devices.push_back(std::move(device).value());
    }
    return detail::unwrap(Result<std::vector<VulkanDeviceInfo>>(std::move(devices)));
  }
  // Opens physical device `index`; NOT_FOUND, UNAVAILABLE (no Vulkan) or FAILED_PRECONDITION (a
  // device rtx cannot run on, saying why).
  static Outcome<VulkanDevice> create(std::size_t index) {
    rtx_vulkan_device_t* device = nullptr;
    rtx_error_t* error = rtx_vulkan_device_create(index, &device);
    return detail::complete(error, [&] { return adopt(device); });
  }
  // Opens the physical device with this deviceUUID (VulkanDeviceInfo::uuid).
  static Outcome<VulkanDevice> create(const std::array<std::uint8_t, 16>& uuid) {
    rtx_vulkan_device_t* device = nullptr;
    rtx_error_t* error = rtx_vulkan_device_create_by_uuid(uuid.data(), &device);
    return detail::complete(error, [&] { return adopt(device); });
  }

 private:
  explicit VulkanDevice(rtx_vulkan_device_t* device) noexcept : Shared(device) {}
  static Result<VulkanDeviceInfo> describe(std::size_t index) {
    rtx_vulkan_device_info_t c{};
    c.struct_size = sizeof c;
    if (rtx_error_t* error = rtx_vulkan_device_info(index, &c)) {
      return Status::adopt(error);
    }
    VulkanDeviceInfo info;
    info.index = index;
    info.name = c.name != nullptr ? c.name : "";
    info.vendor_id = c.vendor_id;
    info.device_id = c.device_id;
    info.api_version = c.api_version;
    std::memcpy(info.uuid.data(), c.uuid, info.uuid.size());
    info.driver = c.driver != nullptr ? c.driver : "";
    info.device_local_bytes = c.device_local_bytes;
    return info;
  }
};

namespace detail {

// A kernel registered from C++: the callable, run with the frame of each call.
struct KernelBase {
  virtual ~KernelBase() = default;
};
template <typename F>
struct Kernel final : KernelBase {
  explicit Kernel(F f, std::string kernel_name) : callable(std::move(f)), name(std::move(kernel_name)) {}
  F callable;
  std::string name;
  static void run(rtx_kernel_frame_t* frame, void* user_data) noexcept {
    auto* self = static_cast<Kernel*>(user_data);
    KernelFrame view(frame);
#ifdef RTX_HPP_CATCHES
    try {
      self->callable(view);
    } catch (...) {
      view.report_error(caught(self->name.c_str()).to_string());
    }
#else
    self->callable(view);
#endif
  }
};

// A kernel written as a function of its arguments (bool, int32_t, int64_t, float, double,
// BufferView or AsyncValue) returning its results (nothing, one, a std::tuple, or a Result of
// those), run as a KernelFrame kernel.
template <typename F>
struct TypedKernel {
  using Parameters = typename Signature<F>::parameters;
  using Returned = typename Signature<F>::result;
  using Outputs = typename Results<Returned>::type;
  static constexpr std::size_t arity = std::tuple_size_v<Parameters>;

  F callable;
  std::string name;

  void operator()(KernelFrame& frame) { run(frame, std::make_index_sequence<arity>()); }

  template <std::size_t... I>
  void run(KernelFrame& frame, std::index_sequence<I...>) {
    if (frame.num_args() != arity || frame.num_results() != std::tuple_size_v<Outputs>) {
      frame.report_error(name + " (a C++ kernel) takes " + std::to_string(arity) + " arguments and has " +
                         std::to_string(std::tuple_size_v<Outputs>) + " results; this call has " +
                         std::to_string(frame.num_args()) + " and " + std::to_string(frame.num_results()));
      return;
    }
    std::tuple<Result<std::decay_t<std::tuple_element_t<I, Parameters>>>...> args{
        read<std::decay_t<std::tuple_element_t<I, Parameters>>>(frame, I)...};
    Status failed;
    ((failed = failed.ok() ? std::get<I>(args).status() : failed), ...);
    if (!failed.ok()) {
      frame.report_error(failed.to_string());
      return;
    }
    if constexpr (std::is_void_v<Returned>) {
      callable(std::move(std::get<I>(args)).value()...);
    } else if constexpr (IsResult<Returned>::value) {
      Returned returned = callable(std::move(std::get<I>(args)).value()...);
      if (!returned.ok()) {
        frame.report_error(returned.status().to_string());
      } else if constexpr (!std::is_void_v<decltype(returned.value())>) {
        set(frame, std::move(returned).value());
      }
    } else {
      set(frame, callable(std::move(std::get<I>(args)).value()...));
    }
  }

  template <typename T>
  static Result<T> read(const KernelFrame& frame, std::size_t index) {
    if constexpr (std::is_same_v<T, AsyncValue>) {
      return frame.arg(index);
    } else {
      return frame.arg(index).try_get<T>();
    }
  }

  template <typename V>
  static void set(const KernelFrame& frame, V&& value) {
    if constexpr (IsTuple<std::decay_t<V>>::value) {
      std::apply(
          [&](auto&&... each) {
            std::size_t index = 0;
            (frame.set_result(index++, wrap(each)), ...);
          },
          value);
    } else {
      frame.set_result(0, wrap(value));
    }
  }

  template <typename V>
  static AsyncValue wrap(const V& value) {
    if constexpr (std::is_same_v<V, AsyncValue>) {
      return value;
    } else {
      return AsyncValue::of(value);
    }
  }
};

// Host callbacks of a custom WorkQueue / Allocator: user_data is a heap shared_ptr.
struct QueueCallbacks {
  static WorkQueue& of(void* user_data) { return **static_cast<std::shared_ptr<WorkQueue>*>(user_data); }
  static void add_task(void* user_data, rtx_task_t* task) noexcept { of(user_data).add_task(Task::adopt(task)); }
  static bool add_blocking_task(void* user_data, rtx_task_t* task, bool allow_queuing) noexcept {
    Task refused = of(user_data).add_blocking_task(Task::adopt(task), allow_queuing);
    return refused.release() == nullptr;  // a refused task stays rtx's
  }
  static void destroy(void* user_data) noexcept { delete static_cast<std::shared_ptr<WorkQueue>*>(user_data); }
};
struct AllocatorCallbacks {
  static Allocator& of(void* user_data) { return **static_cast<std::shared_ptr<Allocator>*>(user_data); }
  static void* allocate(void* user_data, std::size_t size, std::size_t align) noexcept {
    return of(user_data).allocate(size, align);
  }
  static void deallocate(void* user_data, void* ptr, std::size_t size, std::size_t align) noexcept {
    of(user_data).deallocate(ptr, size, align);
  }
  static void destroy(void* user_data) noexcept { delete static_cast<std::shared_ptr<Allocator>*>(user_data); }
};

// Creates a context from C++ options.
inline rtx_error_t* new_context(const ContextOptions& options, rtx_context_t** out) {
  rtx_context_options_t c;
  rtx_context_options_init(&c);
  c.memory_limit = options.memory_limit;
  if (!options.work_queue.empty()) {
    c.work_queue = options.work_queue.c_str();
  }
  std::string queue_name;
  rtx_work_queue_callbacks_t queue{};
  std::unique_ptr<std::shared_ptr<WorkQueue>> queue_holder;
  if (options.custom_work_queue) {
    queue_holder = std::make_unique<std::shared_ptr<WorkQueue>>(options.custom_work_queue);
    queue_name = options.custom_work_queue->name();
    queue.struct_size = sizeof queue;
    queue.user_data = queue_holder.get();
    queue.name = queue_name.c_str();
    queue.parallelism = options.custom_work_queue->parallelism();
    queue.add_task = &QueueCallbacks::add_task;
    queue.add_blocking_task = &QueueCallbacks::add_blocking_task;
    queue.destroy = &QueueCallbacks::destroy;
    c.custom_work_queue = &queue;
  }
  rtx_allocator_callbacks_t allocator{};
  std::unique_ptr<std::shared_ptr<Allocator>> allocator_holder;
  if (options.allocator) {
    allocator_holder = std::make_unique<std::shared_ptr<Allocator>>(options.allocator);
    allocator.struct_size = sizeof allocator;
    allocator.user_data = allocator_holder.get();
    allocator.allocate = &AllocatorCallbacks::allocate;
    allocator.deallocate = &AllocatorCallbacks::deallocate;
    allocator.destroy = &AllocatorCallbacks::destroy;
    c.allocator = &allocator;
  }
  rtx_error_t* error = rtx_context_new(&c, out);
  if (error == nullptr) {  // the context owns them now (a failed call leaves them ours)
    queue_holder.release();
    allocator_holder.release();
  }
  return error;
}

// What every copy of a Context shares: the C handle, the modules added through it (to count a
// function's results) and the kernels registered through it (alive as long as the context).
struct ContextState {
  explicit ContextState(rtx_context_t* context) noexcept : handle(context) {}
  ContextState(const ContextState&) = delete;
  ContextState& operator=(const ContextState&) = delete;
  // Releasing waits for the context's work, so the kernels are freed only after their last call.
  ~ContextState() { rtx_context_release(handle); }

  struct Entry {
    std::string module;
    bool native;
    std::vector<std::pair<std::string, std::size_t>> functions;  // name, result count
  };

  // How many results `name` (`module.function`, or a bare name in the most recently added
  // bytecode or BEF module, as rtx_context_invoke looks it up) has; nullopt when unknown here.
  std::optional<std::size_t> result_count(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex);
    const Entry* entry = nullptr;
    std::string function = name;
    const std::size_t dot = name.find('.');
    if (dot != std::string::npos) {
      for (const Entry& candidate : modules) {
        if (candidate.module == name.substr(0, dot)) {
          entry = &candidate;
          function = name.substr(dot + 1);
        }
      }
    }
    if (entry == nullptr) {
      for (const Entry& candidate : modules) {
        entry = candidate.native ? entry : &candidate;
      }
    }
    if (entry != nullptr) {
      for (const auto& [candidate, results] : entry->functions) {
        if (candidate == function) {
          return results;
        }
      }
    }
    return std::nullopt;
  }

  rtx_context_t* handle;
  mutable std::mutex mutex;
  std::vector<Entry> modules;
  std::vector<std::unique_ptr<KernelBase>> kernels;
};

}  // namespace detail

// The attributes of an eager op (Context::execute_op), by name: integers are 64-bit (ONNX's
// `axis`, `transB`; set_i32 for TFRT's 32-bit ones), floats 32-bit and doubles 64-bit, strings,
// booleans, arrays of int64_t or float, element types and shapes. Setting a name twice keeps the
// first value. A setter's failure is kept and returned by the execute_op call given these
// attributes. Move-only.
class OpAttrs {
 public:
  OpAttrs() { detail::check_constructed(rtx_op_attrs_new(&attrs_)); }
  ~OpAttrs() { rtx_op_attrs_release(attrs_); }
  OpAttrs(OpAttrs&& other) noexcept : attrs_(std::exchange(other.attrs_, nullptr)), status_(std::move(other.status_)) {}
  OpAttrs& operator=(OpAttrs&& other) noexcept {
    std::swap(attrs_, other.attrs_);
    std::swap(status_, other.status_);
    return *this;
  }
  OpAttrs(const OpAttrs&) = delete;
  OpAttrs& operator=(const OpAttrs&) = delete;

  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  OpAttrs& set(const std::string& name, T value) {
    return record(rtx_op_attrs_set_i64(attrs_, name.c_str(), static_cast<std::int64_t>(value)));
  }
  OpAttrs& set(const std::string& name, bool value) { return record(rtx_op_attrs_set_bool(attrs_, name.c_str(), value)); }
  OpAttrs& set(const std::string& name, float value) { return record(rtx_op_attrs_set_f32(attrs_, name.c_str(), value)); }
  OpAttrs& set(const std::string& name, double value) { return record(rtx_op_attrs_set_f64(attrs_, name.c_str(), value)); }
  OpAttrs& set(const std::string& name, const char* value) {
    return record(rtx_op_attrs_set_string(attrs_, name.c_str(), value));
  }
  OpAttrs& set(const std::string& name, const std::string& value) { return set(name, value.c_str()); }
  OpAttrs& set(const std::string& name, const std::vector<std::int64_t>& values) {
    return record(rtx_op_attrs_set_i64_array(attrs_, name.c_str(), values.data(), values.size()));
  }
  OpAttrs& set(const std::string& name, const std::vector<float>& values) {
    return record(rtx_op_attrs_set_f32_array(attrs_, name.c_str(), values.data(), values.size()));
  }
  OpAttrs& set_i32(const std::string& name, std::int32_t value) {
    return record(rtx_op_attrs_set_i32(attrs_, name.c_str(), value));
  }
  OpAttrs& set_i32(const std::string& name, const std::vector<std::int32_t>& values) {
    return record(rtx_op_attrs_set_i32_array(attrs_, name.c_str(), values.data(), values.size()));
  }
  OpAttrs& set_dtype(const std::string& name, ElementType type) {
    return record(rtx_op_attrs_set_dtype(attrs_, name.c_str(), static_cast<std::uint32_t>(type)));
  }
  OpAttrs& set_shape(const std::string& name, const std::vector<std::int64_t>& dims) {
    return record(rtx_op_attrs_set_shape(attrs_, name.c_str(), dims.data(), dims.size()));
  }

  const rtx_op_attrs_t* handle() const noexcept { return attrs_; }
  // The first setter's failure (OK when every set succeeded).
  const Status& status() const noexcept { return status_; }

 private:
  OpAttrs& record(rtx_error_t* error) {
    if (error != nullptr && status_.ok()) {
      status_ = Status::adopt(error);
    } else if (error != nullptr) {
      rtx_error_delete(error);
    }
    return *this;
  }

  rtx_op_attrs_t* attrs_ = nullptr;
  Status status_;
};

// A context: a work queue, an allocator and cancellation, a device and the modules added to it.
// Copies share it; thread-safe.
class Context {
 public:
  // A context with the default options (or `options`); throws on failure (RTX_NO_EXCEPTIONS:
  // aborts with the message; use create() to handle the error).
  Context() : Context(ContextOptions()) {}
  explicit Context(const ContextOptions& options) {
    rtx_context_t* context = nullptr;
    detail::check_constructed(detail::new_context(options, &context));
    state_ = std::make_shared<detail::ContextState>(context);
  }
  static Outcome<Context> create(const ContextOptions& options = ContextOptions()) {
    rtx_context_t* context = nullptr;
    rtx_error_t* error = detail::new_context(options, &context);
    return detail::complete(error, [&] { return adopt(context); });
  }
  // Takes over one reference to `context`. invoke() counts results only for the modules added
  // through this object (and its copies); pass the count for the others.
  static Context adopt(rtx_context_t* context) { return Context(std::make_shared<detail::ContextState>(context)); }
  static Context retain(rtx_context_t* context) { return adopt(rtx_context_retain(context)); }

  rtx_context_t* handle() const noexcept { return state_ ? state_->handle : nullptr; }
  explicit operator bool() const noexcept { return handle() != nullptr; }

  // The device tensor programs run on: "local-sync", "local-task", "vulkan", "vulkan://N" or
  // "vulkan://UUID". Before the modules that import `hal`. One per context.
  Outcome<void> add_device(const std::string& device) const {
    return detail::complete(rtx_context_add_device(handle(), device.c_str()));
  }
  Outcome<void> add_device(const VulkanDevice& device) const {
    return detail::complete(rtx_context_add_vulkan_device(handle(), device.handle()));
  }

  // Bytes the context holds from its allocator now and at most, and the blocks handed out.
  Outcome<MemoryStats> memory_stats() const {
    MemoryStats stats{};
    stats.struct_size = sizeof stats;
    rtx_error_t* error = rtx_context_memory_stats(handle(), &stats);
    return detail::complete(error, [&] { return stats; });
  }

  // Links a bytecode or BEF module (runs its __init; binds a BEF module's kernels, so register
  // them first).
  Outcome<void> add_module(const Module& module) const {
    if (rtx_error_t* error = rtx_context_add_module(handle(), module.handle())) {
      return detail::complete(error);
    }
    detail::ContextState::Entry entry{module.name(), false, {}};
    for (const FunctionSignature& f : module.functions()) {  // the others: rtx says why when called
      entry.functions.emplace_back(f.name, f.results.size());
    }
    remember(std::move(entry));
    return detail::complete(nullptr);
  }
  // Adds a native module: later modules import its functions, invoke("name.function") calls them.
  Outcome<void> add_module(const NativeModule& module) const {
    if (rtx_error_t* error = rtx_context_add_native_module(handle(), module.handle())) {
      return detail::complete(error);
    }
    remember(detail::ContextState::Entry{module.name(), true, module.functions()});
    return detail::complete(nullptr);
  }

  // Registers kernel `name` for the BEF modules added from now on. `f` runs for each call, on any
  // of the context's threads, possibly several at once; it must not block. Either f(KernelFrame&)
  // (it reads the arguments and attributes, sets the results with frame.set_result or fails with
  // frame.report_error), or a function of the arguments (bool, int32_t, int64_t, float, double,
  // BufferView or AsyncValue) returning the results (nothing, one, a std::tuple, or a Result of
  // those): [](int32_t a, int32_t b) { return a + b; }. Throwing fails the kernel too.
  template <typename F>
  Outcome<void> register_kernel(const std::string& name, F f) const {
    if constexpr (std::is_invocable_v<F&, KernelFrame&>) {
      return register_frame_kernel(name, std::move(f));
    } else {
      return register_frame_kernel(name, detail::TypedKernel<F>{std::move(f), name});
    }
  }

  // Runs op `op` eagerly through the op handler `handler` (the context's "cpu" handler: TFRT's cpu
  // ops, then every kernel — `nn.*`, `onnx.*`, the tensor kernels, the host's) on tensors
  // (AsyncValues of BufferViews, or results of earlier execute_op calls, possibly unavailable),
  // without blocking: the results are unavailable values that become the result tensors or their
  // errors, which name the op. An unknown op or handler fails at once.
  Outcome<std::vector<AsyncValue>> execute_op(const std::string& op, const std::vector<AsyncValue>& args,
                                              const OpAttrs& attrs, std::size_t num_results = 1,
                                              const std::string& handler = "cpu") const {
    if (!attrs.status().ok()) {
      return detail::unwrap(Result<std::vector<AsyncValue>>(attrs.status()));
    }
    return detail::unwrap(try_execute_op(op, args, attrs.handle(), num_results, handler));
  }
  // As execute_op(op, args, attrs, num_results), for an op without attributes.
  Outcome<std::vector<AsyncValue>> execute_op(const std::string& op, const std::vector<AsyncValue>& args,
                                              std::size_t num_results = 1) const {
    return detail::unwrap(try_execute_op(op, args, nullptr, num_results, "cpu"));
  }

  // Makes the BEF function `function` (a chain and tensor handles in and out) the op `op` of the
  // context's "cpu" handler, for execute_op and BEF programs' corert.executeop.
  Outcome<void> register_composite_op(const std::string& op, const std::string& function) const {
    return detail::complete(rtx_context_register_composite_op(handle(), op.c_str(), function.c_str()));
  }

  // Calls `function` without blocking: the results are unavailable values that become the
  // function's results or its error. The result count comes from the module's signature.
  Outcome<std::vector<AsyncValue>> invoke(const std::string& function, const std::vector<AsyncValue>& args) const {
    std::optional<std::size_t> count = state_ ? state_->result_count(function) : std::nullopt;
    Result<std::vector<AsyncValue>> results = try_invoke(function, args, count.value_or(0));
    if (!results.ok() && !count && results.status().code() == RTX_STATUS_CODE_INVALID_ARGUMENT) {
      results = Status(RTX_STATUS_CODE_INVALID_ARGUMENT,
                       results.status().message() + " (rtx::Context::invoke knows the result counts of the modules "
                                                    "added through this rtx::Context; pass num_results for others)");
    }
    return detail::unwrap(std::move(results));
  }
  // As invoke(function, args), with the number of results given.
  Outcome<std::vector<AsyncValue>> invoke(const std::string& function, const std::vector<AsyncValue>& args,
                                          std::size_t num_results) const {
    return detail::unwrap(try_invoke(function, args, num_results));
  }
  // invoke, then await: the results, available; the call's error if it failed (a function
  // without results too: the call's `done` value is awaited with them).
  Outcome<std::vector<AsyncValue>> invoke_sync(const std::string& function,
                                               const std::vector<AsyncValue>& args) const {
    std::optional<std::size_t> count = state_ ? state_->result_count(function) : std::nullopt;
    AsyncValue done;
    Result<std::vector<AsyncValue>> results = try_invoke(function, args, count.value_or(0), &done);
    if (results.ok()) {
      std::vector<AsyncValue> waited_for = *results;
      waited_for.push_back(done);
      Status waited = await_status(waited_for);
      if (waited.ok()) {
        waited = done.status();
      }
      for (const AsyncValue& result : *results) {
        if (!waited.ok()) {
          break;
        }
        waited = result.status();
      }
      if (!waited.ok()) {
        results = waited;
      }
    }
    return detail::unwrap(std::move(results));
  }

  // Blocks the calling thread until every value is available (errors count as available); runs
  // the context's work meanwhile on an "s" queue. FAILED_PRECONDITION on a worker thread.
  Outcome<void> await(const std::vector<AsyncValue>& values) const {
    return detail::unwrap(Result<void>(await_status(values)));
  }
  Outcome<void> await(const AsyncValue& value) const {
    rtx_async_value_t* waited = value.handle();
    return detail::complete(rtx_async_value_await(handle(), &waited, 1));
  }

  // Queues `f()` on the non-blocking pool (it must not block): CANCELLED on a cancelled context,
  // and `f` is then destroyed unrun.
  template <typename F>
  Outcome<void> enqueue(F&& f) const {
    return submit(&rtx_context_enqueue, std::forward<F>(f));
  }
  // Queues `f()` on the blocking pool: RESOURCE_EXHAUSTED if the queue takes no blocking work.
  template <typename F>
  Outcome<void> enqueue_blocking(F&& f) const {
    return submit(&rtx_context_enqueue_blocking, std::forward<F>(f));
  }

  // Waits until none of the context's work is queued or running.
  void quiesce() const noexcept { rtx_context_quiesce(handle()); }
  // Refuses new work and turns pending work's results into CANCELLED errors, until restart().
  void cancel() const noexcept { rtx_context_cancel(handle()); }
  void restart() const noexcept { rtx_context_restart(handle()); }
  bool is_cancelled() const noexcept { return rtx_context_is_cancelled(handle()); }
  // Unavailable until the context is cancelled, then a CANCELLED error.
  AsyncValue cancellation_value() const { return AsyncValue::adopt(rtx_context_cancellation_value(handle())); }
  std::uint32_t parallelism() const noexcept { return rtx_context_parallelism(handle()); }
  bool is_in_worker_thread() const noexcept { return rtx_context_is_in_worker_thread(handle()); }

  // Memory from the context's allocator; give it back with deallocate (same size and align).
  Outcome<void*> allocate(std::size_t size, std::size_t align) const {
    void* ptr = nullptr;
    rtx_error_t* error = rtx_context_allocate(handle(), size, align, &ptr);
    return detail::complete(error, [&] { return ptr; });
  }
  void deallocate(void* ptr, std::size_t size, std::size_t align) const noexcept {
    rtx_context_deallocate(handle(), ptr, size, align);
  }

 private:
  explicit Context(std::shared_ptr<detail::ContextState> state) noexcept : state_(std::move(state)) {}

  template <typename F>
  Outcome<void> register_frame_kernel(const std::string& name, F f) const {
    auto kernel = std::make_unique<detail::Kernel<F>>(std::move(f), name);
    rtx_error_t* error =
        rtx_context_register_kernel(handle(), name.c_str(), &detail::Kernel<F>::run, kernel.get());
    if (error == nullptr) {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->kernels.push_back(std::move(kernel));
    }
    return detail::complete(error);
  }

  void remember(detail::ContextState::Entry entry) const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->modules.push_back(std::move(entry));
  }

  // rtx_context_invoke, or rtx_context_invoke_with_done when `done` is given (it receives the
  // call's `done` value).
  Result<std::vector<AsyncValue>> try_invoke(const std::string& function, const std::vector<AsyncValue>& args,
                                             std::size_t num_results, AsyncValue* done = nullptr) const {
    std::vector<rtx_async_value_t*> handles;
    handles.reserve(args.size());
    for (const AsyncValue& arg : args) {
      handles.push_back(arg.handle());
    }
    std::vector<rtx_async_value_t*> out(num_results, nullptr);
    rtx_async_value_t* finished = nullptr;
    rtx_error_t* error =
        done != nullptr
            ? rtx_context_invoke_with_done(handle(), function.c_str(), handles.data(), handles.size(), out.data(),
                                           out.size(), &finished)
            : rtx_context_invoke(handle(), function.c_str(), handles.data(), handles.size(), out.data(), out.size());
    if (error != nullptr) {
      return Status::adopt(error);
    }
    if (done != nullptr) {
      *done = AsyncValue::adopt(finished);
    }
    std::vector<AsyncValue> results;
    results.reserve(out.size());
    for (rtx_async_value_t* result : out) {
      results.push_back(AsyncValue::adopt(result));
    }
    return results;
  }

  Result<std::vector<AsyncValue>> try_execute_op(const std::string& op, const std::vector<AsyncValue>& args,
                                                 const rtx_op_attrs_t* attrs, std::size_t num_results,
                                                 const std::string& handler) const {
    std::vector<rtx_async_value_t*> handles;
    handles.reserve(args.size());
    for (const AsyncValue& arg : args) {
      handles.push_back(arg.handle());
    }
    std::vector<rtx_async_value_t*> out(num_results, nullptr);
    rtx_error_t* error = rtx_context_execute_op(handle(), handler.c_str(), op.c_str(), handles.data(), handles.size(),
                                                attrs, out.data(), out.size());
    if (error != nullptr) {
      return Status::adopt(error);
    }
    std::vector<AsyncValue> results;
    results.reserve(out.size());
    for (rtx_async_value_t* result : out) {
      results.push_back(AsyncValue::adopt(result));
    }
    return results;
  }

  Status await_status(const std::vector<AsyncValue>& values) const {
    std::vector<rtx_async_value_t*> handles;
    handles.reserve(values.size());
    for (const AsyncValue& value : values) {
      handles.push_back(value.handle());
    }
    return Status::adopt(rtx_async_value_await(handle(), handles.data(), handles.size()));
  }

  template <typename Submit, typename F>
  Outcome<void> submit(Submit submit_function, F&& f) const {
    auto* callable = detail::once(std::forward<F>(f));
    using Callable = std::remove_pointer_t<decltype(callable)>;
    rtx_error_t* error = submit_function(handle(), &Callable::run, callable);
    if (error != nullptr) {
      delete callable;  // not queued, so it never runs
    }
    return detail::complete(error);
  }

  std::shared_ptr<detail::ContextState> state_;
};

inline Outcome<void> AsyncValue::await(const Context& context) const { return context.await(*this); }

// Blocks until every value is available (Context::await).
inline Outcome<void> await(const Context& context, const std::vector<AsyncValue>& values) {
  return context.await(values);
}
inline Outcome<void> await(const Context& context, const AsyncValue& value) { return context.await(value); }

// A tracing session for the object's lifetime: spans of BEF kernels, VM calls and dispatches in
// this process, written to `path` as Chrome trace-event JSON (for Perfetto or `rtx profile`) when
// it ends. One session per process at a time: a second fails with FAILED_PRECONDITION, as does a
// path that cannot be written (INVALID_ARGUMENT).
class Tracing {
 public:
  explicit Tracing(const std::string& path) { detail::check_constructed(rtx_tracing_begin(path.c_str())); }
  Tracing(const Tracing&) = delete;
  Tracing& operator=(const Tracing&) = delete;
  // Ends the session and writes the file now, reporting a failure to write it; the destructor
  // then does nothing.
  Outcome<void> end() {
    active_ = false;
    return detail::complete(rtx_tracing_end());
  }
  // Ends the session if end() has not (a failure to write the file is dropped here).
  ~Tracing() {
    if (active_) {
      rtx_error_delete(rtx_tracing_end());
    }
  }

 private:
  bool active_ = true;
};

// The library's version ("MAJOR.MINOR.PATCH") and whether its ABI is the one this header was made for.
inline std::string version() { return rtx_version(); }
inline bool abi_matches() noexcept { return rtx_abi_version() == RTX_ABI_VERSION; }

}  // namespace rtx

#undef RTX_HPP_CATCHES

#endif  // RTX_HPP
