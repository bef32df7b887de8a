// rtx.hpp: a small header-only C++17 wrapper over <rtx.h>.
//
//   rtx::Error       an exception carrying the status code and message of an rtx_error_t
//   rtx::Context     a context (work queue + allocator + cancellation); copies share it (refcounted)
//   rtx::AsyncValue  an async value; copies share it (refcounted), moves steal it
//
// Callables passed to enqueue / and_then / when_all travel through a heap trampoline: they are
// moved into a heap object that the C callback runs exactly once and then frees. They may run on
// any worker thread, and must not throw (an escaping exception calls std::terminate, since it
// would otherwise unwind through C frames).
#ifndef RTX_HPP
#define RTX_HPP

#include <rtx.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace rtx {

// A failed rtx call: the code and message of the rtx_error_t it returned.
class Error : public std::runtime_error {
 public:
  Error(rtx_status_code_t code, const std::string& message)
      : std::runtime_error(std::string(rtx_status_code_name(code)) + ": " + message), code_(code), message_(message) {}

  rtx_status_code_t code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }

  // Takes ownership of `error` (frees it) and returns it as an Error.
  static Error adopt(rtx_error_t* error) {
    Error result(rtx_error_code(error), rtx_error_message(error));
    rtx_error_delete(error);
    return result;
  }

 private:
  rtx_status_code_t code_;
  std::string message_;
};

// Throws if `error` is not NULL (success).
inline void check(rtx_error_t* error) {
  if (error != nullptr) {
    throw Error::adopt(error);
  }
}

namespace detail {

// Moves a callable to the heap; `run` calls it once and frees it.
template <typename F>
struct Trampoline {
  explicit Trampoline(F&& f) : callable(std::move(f)) {}
  F callable;

  static void run(void* user_data) noexcept {
    std::unique_ptr<Trampoline> self(static_cast<Trampoline*>(user_data));
    self->callable();
  }
};

template <typename F>
using TrampolineFor = Trampoline<std::decay_t<F>>;

template <typename F>
TrampolineFor<F>* make_trampoline(F&& f) {
  return new TrampolineFor<F>(std::decay_t<F>(std::forward<F>(f)));
}

}  // namespace detail

template <typename T>
struct ScalarTraits;

#define RTX_HPP_SCALAR(TYPE, SUFFIX)                                                                   \
  template <>                                                                                          \
  struct ScalarTraits<TYPE> {                                                                          \
    static rtx_async_value_t* make(TYPE v) { return rtx_async_value_new_##SUFFIX(v); }                 \
    static rtx_error_t* set(rtx_async_value_t* value, TYPE v) { return rtx_async_value_set_##SUFFIX(value, v); } \
    static rtx_error_t* get(const rtx_async_value_t* value, TYPE* out) { return rtx_async_value_get_##SUFFIX(value, out); } \
  };
RTX_HPP_SCALAR(bool, i1)
RTX_HPP_SCALAR(std::int32_t, i32)
RTX_HPP_SCALAR(std::int64_t, i64)
RTX_HPP_SCALAR(float, f32)
RTX_HPP_SCALAR(double, f64)
#undef RTX_HPP_SCALAR

class AsyncValue {
 public:
  // Takes ownership of one reference.
  static AsyncValue adopt(rtx_async_value_t* handle) {
    if (handle == nullptr) {
      throw Error(RTX_STATUS_CODE_RESOURCE_EXHAUSTED, "rtx could not create an async value");
    }
    return AsyncValue(handle);
  }

  template <typename T>
  static AsyncValue of(T value) {
    return adopt(ScalarTraits<T>::make(value));
  }
  static AsyncValue chain() { return adopt(rtx_async_value_new_chain()); }
  static AsyncValue unavailable() { return adopt(rtx_async_value_new_unavailable()); }
  static AsyncValue indirect() { return adopt(rtx_async_value_new_indirect()); }
  static AsyncValue error(rtx_status_code_t code, const std::string& message) {
    return adopt(rtx_async_value_new_error(code, message.c_str()));
  }

  AsyncValue(const AsyncValue& other) : handle_(rtx_async_value_retain(other.handle_)) {}
  AsyncValue(AsyncValue&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  AsyncValue& operator=(AsyncValue other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  ~AsyncValue() { rtx_async_value_release(handle_); }

  rtx_async_value_t* get() const noexcept { return handle_; }

  bool is_available() const { return rtx_async_value_is_available(handle_); }
  bool is_error() const { return rtx_async_value_is_error(handle_); }

  template <typename T>
  void set(T value) const {
    check(ScalarTraits<T>::set(handle_, value));
  }
  void set_chain() const { check(rtx_async_value_set_chain(handle_)); }
  void set_error(const std::string& message) const { rtx_async_value_set_error(handle_, message.c_str()); }
  void forward_to(const AsyncValue& target) const { check(rtx_async_value_forward(handle_, target.handle_)); }

  // The value; throws its error, or FAILED_PRECONDITION / INVALID_ARGUMENT from rtx.
  template <typename T>
  T value() const {
    T out{};
    check(ScalarTraits<T>::get(handle_, &out));
    return out;
  }

  // Throws the value's error, if it is one.
  void throw_if_error() const {
    if (rtx_error_t* error = rtx_async_value_get_error(handle_)) {
      throw Error::adopt(error);
    }
  }

  // Runs `f()` once the value is available (at once if it is already).
  template <typename F>
  void and_then(F&& f) const {
    auto* trampoline = detail::make_trampoline(std::forward<F>(f));
    rtx_async_value_and_then(handle_, &std::remove_pointer_t<decltype(trampoline)>::run, trampoline);
  }

 private:
  explicit AsyncValue(rtx_async_value_t* handle) : handle_(handle) {}
  rtx_async_value_t* handle_;
};

// Runs `f()` once every value is available.
template <typename F>
void when_all(const std::vector<AsyncValue>& values, F&& f) {
  std::vector<rtx_async_value_t*> handles;
  handles.reserve(values.size());
  for (const AsyncValue& value : values) {
    handles.push_back(value.get());
  }
  auto* trampoline = detail::make_trampoline(std::forward<F>(f));
  rtx_async_value_run_when_ready(handles.data(), handles.size(), &std::remove_pointer_t<decltype(trampoline)>::run,
                                 trampoline);
}

class Context {
 public:
  // work_queue: "s", "mstd", "mstd:N" or "mstd:N,M"; nullptr = "mstd".
  explicit Context(const char* work_queue = nullptr) {
    rtx_context_options_t options;
    rtx_context_options_init(&options);
    options.work_queue = work_queue;
    check(rtx_context_new(&options, &handle_));
  }
  Context(const Context& other) : handle_(rtx_context_retain(other.handle_)) {}
  Context(Context&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Context& operator=(Context other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  ~Context() { rtx_context_release(handle_); }

  rtx_context_t* get() const noexcept { return handle_; }
  std::uint32_t parallelism() const { return rtx_context_parallelism(handle_); }
  bool is_in_worker_thread() const { return rtx_context_is_in_worker_thread(handle_); }
  bool is_cancelled() const { return rtx_context_is_cancelled(handle_); }
  void quiesce() const { rtx_context_quiesce(handle_); }
  void cancel() const { rtx_context_cancel(handle_); }
  void restart() const { rtx_context_restart(handle_); }

  // Queues `f()` on the non-blocking pool; throws (and drops `f`) if the context refuses it.
  template <typename F>
  void enqueue(F&& f) const {
    submit(rtx_context_enqueue, std::forward<F>(f));
  }

  // Queues `f()` on the blocking pool.
  template <typename F>
  void enqueue_blocking(F&& f) const {
    submit(rtx_context_enqueue_blocking, std::forward<F>(f));
  }

  // Blocks until every value is available (errors included). Not from a worker thread.
  void await(const std::vector<AsyncValue>& values) const {
    std::vector<rtx_async_value_t*> handles;
    handles.reserve(values.size());
    for (const AsyncValue& value : values) {
      handles.push_back(value.get());
    }
    check(rtx_async_value_await(handle_, handles.data(), handles.size()));
  }

 private:
  template <typename Submit, typename F>
  void submit(Submit submit_function, F&& f) const {
    auto* trampoline = detail::make_trampoline(std::forward<F>(f));
    using Holder = std::remove_pointer_t<decltype(trampoline)>;
    if (rtx_error_t* error = submit_function(handle_, &Holder::run, trampoline)) {
      delete trampoline;  // not queued, so it will never run
      throw Error::adopt(error);
    }
  }

  rtx_context_t* handle_ = nullptr;
};

}  // namespace rtx

#endif  // RTX_HPP
