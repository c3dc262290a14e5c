/*
 * rffi C++ API: functions. `rffi::Function` calls any rffi function (Rust, C, C++, Python) with
 * C++ arguments and makes C++ callables into rffi functions; the function registry and modules.
 * Part of <rffi/rffi.hpp>.
 */
#ifndef RFFI_CPP_FUNCTION_HPP_
#define RFFI_CPP_FUNCTION_HPP_

#include <array>
#include <memory>
#include <tuple>

#include "containers.hpp"

#pragma GCC visibility push(hidden)

namespace rffi {

/*! \brief The borrowed arguments of a packed function, valid during the call. */
class PackedArgs {
 public:
  PackedArgs(const RFFIAny* data, int32_t size) noexcept : data_(data), size_(size) {}
  int32_t size() const noexcept { return size_; }
  /*! \brief Argument `i` (an IndexError when out of range). */
  AnyView operator[](int32_t i) const {
    if (i < 0 || i >= size_) {
      throw Error("IndexError", "argument " + std::to_string(i) + " out of range: " +
                                    std::to_string(size_) + " given");
    }
    return AnyView(data_[i]);
  }
  const RFFIAny* data() const noexcept { return data_; }

 private:
  const RFFIAny* data_;
  int32_t size_;
};

namespace detail {

// The signature of a callable: function, function pointer, lambda or functor.
template <typename T>
struct fn_traits : fn_traits<decltype(&T::operator())> {};
template <typename R, typename... A>
struct fn_traits<R(A...)> {
  using result = R;
  using args = std::tuple<std::decay_t<A>...>;
};
template <typename R, typename... A>
struct fn_traits<R (*)(A...)> : fn_traits<R(A...)> {};
template <typename R, typename... A>
struct fn_traits<R (*)(A...) noexcept> : fn_traits<R(A...)> {};
template <typename C, typename R, typename... A>
struct fn_traits<R (C::*)(A...)> : fn_traits<R(A...)> {};
template <typename C, typename R, typename... A>
struct fn_traits<R (C::*)(A...) const> : fn_traits<R(A...)> {};
template <typename C, typename R, typename... A>
struct fn_traits<R (C::*)(A...) noexcept> : fn_traits<R(A...)> {};
template <typename C, typename R, typename... A>
struct fn_traits<R (C::*)(A...) const noexcept> : fn_traits<R(A...)> {};

// Argument `i` of a typed call as `T`, or a TypeError naming the function, the position and
// both types. The error has no frame of its own: the function's boundary adds it.
template <typename T>
T arg_cast(const RFFIAny& v, size_t i, std::string_view name) {
  std::optional<T> x = TypeTraits<T>::TryFrom(v);
  if (!x) {
    throw Error::WithBacktrace("TypeError",
                               "Mismatched type on argument #" + std::to_string(i) +
                                   " when calling `" + std::string(name) +
                                   "`: " + mismatch(TypeTraits<T>::name(), v.type_index),
                               "");
  }
  return std::move(*x);
}

template <typename F, typename R, typename... A, size_t... I>
Any invoke_typed(const F& f, std::string_view name, const RFFIAny* args,
                 std::tuple<A...>*, std::index_sequence<I...>) {
  if constexpr (std::is_void_v<R>) {
    f(arg_cast<A>(args[I], I, name)...);
    return Any();
  } else {
    return Any(f(arg_cast<A>(args[I], I, name)...));
  }
}

// Calls `f` with converted arguments, checking the count first.
template <typename F>
Any call_typed(const F& f, std::string_view name, const RFFIAny* args, int32_t num_args) {
  using traits = fn_traits<std::remove_pointer_t<std::decay_t<F>>>;
  using Args = typename traits::args;
  constexpr size_t n = std::tuple_size_v<Args>;
  if (num_args < 0 || static_cast<size_t>(num_args) != n) {
    throw Error::WithBacktrace("TypeError",
                               "`" + std::string(name) + "` expects " + std::to_string(n) +
                                   (n == 1 ? " argument" : " arguments") + " but " +
                                   std::to_string(num_args) + (num_args == 1 ? " was" : " were") +
                                   " given",
                               "");
  }
  return invoke_typed<F, typename traits::result>(f, name, args, static_cast<Args*>(nullptr),
                                                  std::make_index_sequence<n>());
}

/*!
 * The whole C boundary of a typed C++ function: converts the arguments, calls, stores the result,
 * and turns any exception into a raised rffi error with the function's frame. Never throws.
 */
template <typename F>
int32_t call_typed_safe(std::string_view name, const char* file, int line, const F& f,
                        const RFFIAny* args, int32_t num_args, RFFIAny* result) noexcept {
  try {
    Any r = call_typed(f, name, args, num_args);
    if (result != nullptr) *result = r.release();
    return 0;
  } catch (...) {
    return raise_current_exception(name, file, line);
  }
}

// A C++ callable behind an rffi function object (the `self` of RFFIFunctionCreate).
template <typename F, bool Packed>
struct Callback {
  F f;
  std::string name;
  const char* file;
  int line;

  static int32_t SafeCall(void* self, const RFFIAny* args, int32_t num_args,
                          RFFIAny* result) noexcept {
    const Callback* cb = static_cast<const Callback*>(self);
    if constexpr (Packed) {
      try {
        Any r = cb->f(PackedArgs(args, num_args));
        if (result != nullptr) *result = r.release();
        return 0;
      } catch (...) {
        return raise_current_exception(cb->name, cb->file, cb->line);
      }
    } else {
      return call_typed_safe(cb->name, cb->file, cb->line, cb->f, args, num_args, result);
    }
  }
  static void Delete(void* self) { delete static_cast<Callback*>(self); }
};

// How call arguments are passed: strings and tensors as borrowed views (no copy), other values
// converted into owned values that `keep` holds until the call returns.
template <typename T>
void pack_arg(T&& value, RFFIAny* slot, Any* keep) {
  using U = std::decay_t<T>;
  if constexpr (std::is_same_v<U, Any>) {
    *slot = value.raw();
  } else if constexpr (std::is_same_v<U, AnyView>) {
    *slot = value.raw();
  } else if constexpr (std::is_same_v<U, const char*> || std::is_same_v<U, char*>) {
    if constexpr (!std::is_array_v<std::remove_reference_t<T>>) {  // literals are never NULL
      if (value == nullptr) throw Error("ValueError", "a NULL const char* is not a string");
    }
    *slot = pod(kRFFIRawStr);
    slot->v.v_c_str = value;
  } else if constexpr (std::is_base_of_v<ObjectRef, U>) {
    const ObjectRef& ref = value;  // Array::get<T> hides ObjectRef::get
    if (ref.defined()) {
      *slot = pod(ref.type_index());
      slot->v.v_obj = header(ref.get());
    } else {
      *slot = none_value();
    }
  } else {
    *keep = Any(std::forward<T>(value));
    *slot = keep->raw();
  }
}

}  // namespace detail

/*! \brief A function object: calls anything registered in rffi, from any language. */
class Function : public ObjectRef {
 public:
  static constexpr int32_t kTypeIndex = kRFFIFunction;
  /*! \brief A NULL reference. */
  Function() = default;
  static Function Unchecked(ObjectRef ref) { return Function(std::move(ref), 0); }

  /*!
   * \brief Calls with C++ arguments (anything with TypeTraits: numbers, strings, tensors,
   * containers, Any): `Any r = f(1, "x", tensor);`. A failure throws rffi::Error.
   */
  template <typename... Args>
  Any operator()(Args&&... args) const {
    constexpr size_t n = sizeof...(Args);
    std::array<RFFIAny, (n == 0 ? 1 : n)> packed{};
    std::array<Any, (n == 0 ? 1 : n)> keep;
    size_t i = 0;
    ((detail::pack_arg(std::forward<Args>(args), &packed[i], &keep[i]), ++i), ...);
    (void)i;
    return CallPacked(packed.data(), static_cast<int32_t>(n));
  }
  /*! \brief Calls with borrowed argument values. */
  Any CallPacked(const RFFIAny* args, int32_t num_args) const {
    if (handle_ == nullptr) throw Error("ValueError", "calling a NULL rffi::Function");
    return detail::call_raw(handle_, args, num_args);
  }

  /*!
   * \brief A function from a typed C++ callable: arguments are converted to its parameter types
   * (a TypeError naming `name`, the position and both types otherwise), the result to a value,
   * and exceptions to rffi errors whose traceback names `name` at the caller's file and line.
   */
  template <typename F>
  static Function FromTyped(F f, std::string name = "<lambda>", const char* file = __builtin_FILE(),
                            int line = __builtin_LINE()) {
    return Make<F, false>(std::move(f), std::move(name), file, line);
  }
  /*! \brief A function from `Any f(rffi::PackedArgs args)`: any number of arguments. */
  template <typename F>
  static Function FromPacked(F f, std::string name = "<packed>",
                             const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
    return Make<F, true>(std::move(f), std::move(name), file, line);
  }

  /*! \brief The global function `name`, or nullopt when none is registered. */
  static std::optional<Function> GetGlobal(std::string_view name) {
    RFFIByteArray ba = detail::bytes_of(name);
    RFFIObjectHandle h = nullptr;
    if (detail::api().function_get_global(&ba, &h) != 0) throw Error::FromRaised();
    if (h == nullptr) return std::nullopt;
    return Unchecked(ObjectRef::Adopt(h));
  }
  /*! \brief The global function `name`; a KeyError when none is registered. */
  static Function GetGlobalRequired(std::string_view name) {
    std::optional<Function> f = GetGlobal(name);
    if (!f) throw Error("KeyError", "no global function `" + std::string(name) + "` is registered");
    return std::move(*f);
  }
  /*! \brief Registers `f` as `name` (a KeyError if taken, unless `allow_override`). */
  static void SetGlobal(std::string_view name, const Function& f, bool allow_override = false) {
    RFFIByteArray ba = detail::bytes_of(name);
    if (detail::api().function_set_global(&ba, f.get(), allow_override ? 1 : 0) != 0) {
      throw Error::FromRaised();
    }
  }
  static void RemoveGlobal(std::string_view name) {
    RFFIByteArray ba = detail::bytes_of(name);
    if (detail::api().function_remove_global(&ba) != 0) throw Error::FromRaised();
  }
  /*! \brief Every registered name, sorted. */
  static std::vector<std::string> ListGlobalNames() {
    RFFIObjectHandle h = nullptr;
    if (detail::api().function_list_global_names(&h) != 0) throw Error::FromRaised();
    return Any(Array::Unchecked(ObjectRef::Adopt(h))).cast<std::vector<std::string>>();
  }

 private:
  Function(ObjectRef ref, int) : ObjectRef(std::move(ref)) {}

  template <typename F, bool Packed>
  static Function Make(F f, std::string name, const char* file, int line) {
    using CB = detail::Callback<F, Packed>;
    std::unique_ptr<CB> cb(new CB{std::move(f), std::move(name), file, line});
    RFFIObjectHandle h = nullptr;
    if (detail::api().function_create(cb.get(), &CB::SafeCall, &CB::Delete, &h) != 0) {
      throw Error::FromRaised();  // nothing was taken over: `cb` frees the callable
    }
    cb.release();  // owned by the function object now; CB::Delete frees it
    return Unchecked(ObjectRef::Adopt(h));
  }
};

template <>
struct TypeTraits<Function> : detail::ObjectRefTraits<Function> {
  static std::string name() { return "ffi.Function"; }
};

/*! \brief A loaded plugin library (`ffi.Module`); libraries stay loaded for the process. */
class Module : public ObjectRef {
 public:
  static constexpr int32_t kTypeIndex = kRFFIModule;
  Module() = default;
  static Module Unchecked(ObjectRef ref) { return Module(std::move(ref), 0); }

  /*! \brief Loads a plugin (its registered functions join the function registry). */
  static Module LoadFromFile(std::string_view path) {
    RFFIByteArray ba = detail::bytes_of(path);
    RFFIObjectHandle h = nullptr;
    if (detail::api().module_load_from_file(&ba, &h) != 0) throw Error::FromRaised();
    return Unchecked(ObjectRef::Adopt(h));
  }
  /*! \brief A function of the module (registered by it, or exported as `__rffi_<name>`). */
  std::optional<Function> GetFunction(std::string_view name) const {
    Any f = Function::Unchecked(ObjectRef::Borrow(RFFI_DETAIL_BUILTIN("ffi.ModuleGetFunction")))(
        *this, name);
    if (f.is_none()) return std::nullopt;
    return f.cast<Function>();
  }
  /*! \brief As GetFunction; an AttributeError when absent. */
  Function GetFunctionRequired(std::string_view name) const {
    std::optional<Function> f = GetFunction(name);
    if (!f) throw Error("AttributeError", "the module has no function `" + std::string(name) + "`");
    return std::move(*f);
  }

 private:
  Module(ObjectRef ref, int) : ObjectRef(std::move(ref)) {}
};

template <>
struct TypeTraits<Module> : detail::ObjectRefTraits<Module> {
  static std::string name() { return "ffi.Module"; }
};

}  // namespace rffi

#pragma GCC visibility pop

#endif  // RFFI_CPP_FUNCTION_HPP_
