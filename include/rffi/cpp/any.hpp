/*
 * rffi C++ API: values. `rffi::Any` owns one value (16 bytes, the layout of RFFIAny), `AnyView`
 * borrows one (function arguments), `rffi::String` is a string value. `TypeTraits<T>` says how a
 * C++ type becomes a value and back; the containers and Function add their own.
 * Part of <rffi/rffi.hpp>.
 */
#ifndef RFFI_CPP_ANY_HPP_
#define RFFI_CPP_ANY_HPP_

#include <limits>
#include <optional>
#include <type_traits>

#include "error.hpp"

#pragma GCC visibility push(hidden)

namespace rffi {

/*!
 * \brief How a C++ type converts. A specialization has
 *   `static std::string name()` (the type in error messages: `int`, `str`, `ffi.Tensor`),
 *   `static void Into(T value, RFFIAny* out)` (writes an owned value into a zeroed slot), and
 *   `static std::optional<T> TryFrom(const RFFIAny& v)` (from a borrowed value; nullopt if the
 *   value has another type). Types without a specialization do not convert (a compile error).
 */
template <typename T, typename = void>
struct TypeTraits;

namespace detail {

template <typename T, typename = void>
struct has_traits : std::false_type {};
template <typename T>
struct has_traits<T, std::void_t<decltype(TypeTraits<T>::name())>> : std::true_type {};

inline RFFIAny none_value() {
  RFFIAny v;
  std::memset(&v, 0, sizeof(v));
  return v;
}

inline RFFIAny pod(int32_t type_index) {
  RFFIAny v = none_value();
  v.type_index = type_index;
  return v;
}

// An error message "expected <T> but got <actual>".
inline std::string mismatch(const std::string& expected, int32_t actual) {
  return "expected " + expected + " but got " + type_name(actual);
}

// The bytes of a string or bytes value (RawStr, ByteArrayPtr, small or heap); false otherwise.
inline bool str_bytes(const RFFIAny& v, bool want_bytes, std::string_view* out) {
  switch (v.type_index) {
    case kRFFIRawStr:
      if (want_bytes || v.v.v_c_str == nullptr) return false;
      *out = std::string_view(v.v.v_c_str);
      return true;
    case kRFFISmallStr:
    case kRFFISmallBytes:
      if ((v.type_index == kRFFISmallBytes) != want_bytes) return false;
      *out = std::string_view(v.v.v_bytes, v.small_str_len);
      return true;
    case kRFFIStr:
    case kRFFIBytes:
      if ((v.type_index == kRFFIBytes) != want_bytes || v.v.v_obj == nullptr) return false;
      *out = view_of(*cell<RFFIByteArray>(v.v.v_obj));
      return true;
    case kRFFIByteArrayPtr: {
      const RFFIByteArray* ba = static_cast<const RFFIByteArray*>(v.v.v_ptr);
      if (!want_bytes || ba == nullptr) return false;
      *out = view_of(*ba);
      return true;
    }
    default:
      return false;
  }
}

inline RFFIAny make_string(std::string_view s, bool bytes) {
  RFFIByteArray ba = bytes_of(s);
  RFFIAny out = none_value();
  int32_t rc = bytes ? api().bytes_from_byte_array(&ba, &out)
                     : api().string_from_byte_array(&ba, &out);
  if (rc != 0) throw Error::FromRaised();
  return out;
}

inline RFFIAny to_owned(const RFFIAny& view);  // containers.hpp

}  // namespace detail

class Any;

/*! \brief A borrowed value (valid as long as what it points into). */
class AnyView {
 public:
  explicit AnyView(const RFFIAny& value) noexcept : value_(&value) {}
  int32_t type_index() const noexcept { return value_->type_index; }
  /*! \brief `int`, `str`, `ffi.Tensor`, ...: the name errors use. */
  std::string type_name() const { return detail::type_name(type_index()); }
  bool is_none() const noexcept { return type_index() == kRFFINone; }
  /*! \brief The value as `T`, or nullopt if it holds another type. */
  template <typename T>
  std::optional<T> as() const {
    return TypeTraits<T>::TryFrom(*value_);
  }
  /*! \brief The value as `T`; a TypeError naming both types otherwise. */
  template <typename T>
  T cast(const char* file = __builtin_FILE(), int line = __builtin_LINE(),
         const char* function = __builtin_FUNCTION()) const {
    std::optional<T> v = as<T>();
    if (!v) {
      throw Error("TypeError", "cannot cast: " + detail::mismatch(TypeTraits<T>::name(), type_index()),
                  file, line, function);
    }
    return std::move(*v);
  }
  const RFFIAny& raw() const noexcept { return *value_; }

 private:
  const RFFIAny* value_;
};

/*!
 * \brief An owned value: None, a number, a string, a dtype, a device, or a reference to an object
 * (String, Function, Tensor, Array, Map, ...). Copying adds a reference; moving leaves None.
 */
class Any {
 public:
  Any() noexcept : value_(detail::none_value()) {}
  /*! \brief Converts any type with TypeTraits: `Any a = 1; Any s = "text"; Any t = tensor;` */
  template <typename T, typename U = std::decay_t<T>,
            typename = std::enable_if_t<!std::is_same_v<U, Any> && !std::is_same_v<U, AnyView> &&
                                        detail::has_traits<U>::value>>
  Any(T&& value) : value_(detail::none_value()) {  // NOLINT: implicit by design
    TypeTraits<U>::Into(std::forward<T>(value), &value_);
  }
  /*! \brief An owned copy of a borrowed value (a raw C string becomes a String, ...). */
  explicit Any(AnyView view) : value_(detail::to_owned(view.raw())) {}
  Any(const Any& other) : value_(other.value_) {
    if (detail::is_object(value_.type_index)) detail::inc_ref(value_.v.v_obj);
  }
  Any(Any&& other) noexcept : value_(std::exchange(other.value_, detail::none_value())) {}
  Any& operator=(const Any& other) {
    Any copy(other);
    std::swap(value_, copy.value_);
    return *this;
  }
  Any& operator=(Any&& other) noexcept {
    Any moved(std::move(other));
    std::swap(value_, moved.value_);
    return *this;
  }
  ~Any() {
    if (detail::is_object(value_.type_index)) detail::dec_ref(value_.v.v_obj);
  }

  /*! \brief Takes over an owned value (a call's result). */
  static Any Adopt(const RFFIAny& owned) noexcept {
    Any a;
    a.value_ = owned;
    return a;
  }
  /*! \brief Gives up the value: the caller now owns it. */
  RFFIAny release() noexcept { return std::exchange(value_, detail::none_value()); }

  int32_t type_index() const noexcept { return value_.type_index; }
  std::string type_name() const { return detail::type_name(type_index()); }
  bool is_none() const noexcept { return type_index() == kRFFINone; }
  template <typename T>
  std::optional<T> as() const {
    return view().as<T>();
  }
  /*! \brief The value as `T`; a TypeError (`expected int but got str`) otherwise. */
  template <typename T>
  T cast(const char* file = __builtin_FILE(), int line = __builtin_LINE(),
         const char* function = __builtin_FUNCTION()) const {
    return view().cast<T>(file, line, function);
  }
  AnyView view() const noexcept { return AnyView(value_); }
  const RFFIAny& raw() const noexcept { return value_; }

 private:
  RFFIAny value_;
};

static_assert(sizeof(Any) == sizeof(RFFIAny), "Any has the layout of RFFIAny");

/*! \brief A string value: inline up to 7 bytes, else a `ffi.String` object. */
class String {
 public:
  String() : String(std::string_view()) {}
  String(std::string_view s) : value_(Any::Adopt(detail::make_string(s, false))) {}  // NOLINT
  String(const char* s) : String(std::string_view(s)) {}                              // NOLINT
  String(const std::string& s) : String(std::string_view(s)) {}                       // NOLINT
  /*! \brief Wraps a value already known to be a string. */
  static String FromAny(Any value) {
    String s;
    s.value_ = std::move(value);
    return s;
  }

  std::string_view view() const {
    std::string_view out;
    detail::str_bytes(value_.raw(), false, &out);
    return out;
  }
  const char* data() const { return view().data(); }
  size_t size() const { return view().size(); }
  std::string str() const { return std::string(view()); }
  operator std::string_view() const { return view(); }  // NOLINT
  bool operator==(std::string_view other) const { return view() == other; }
  bool operator!=(std::string_view other) const { return view() != other; }
  const Any& value() const noexcept { return value_; }

 private:
  Any value_;
};

// --- conversions of plain C++ types --------------------------------------------------------

template <>
struct TypeTraits<bool> {
  static std::string name() { return "bool"; }
  static void Into(bool v, RFFIAny* out) {
    *out = detail::pod(kRFFIBool);
    out->v.v_int64 = v ? 1 : 0;
  }
  static std::optional<bool> TryFrom(const RFFIAny& v) {
    if (v.type_index == kRFFIBool || v.type_index == kRFFIInt) return v.v.v_int64 != 0;
    return std::nullopt;
  }
};

template <typename T>
struct TypeTraits<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
  static std::string name() {
    if (std::is_same_v<T, int64_t> || std::is_same_v<T, long long>) return "int";
    return std::string(std::is_signed_v<T> ? "int" : "uint") + std::to_string(sizeof(T) * 8);
  }
  static void Into(T v, RFFIAny* out) {
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(int64_t)) {
      if (v > static_cast<T>(std::numeric_limits<int64_t>::max())) {
        throw Error("OverflowError", "integer " + std::to_string(v) + " does not fit in int64");
      }
    }
    *out = detail::pod(kRFFIInt);
    out->v.v_int64 = static_cast<int64_t>(v);
  }
  static std::optional<T> TryFrom(const RFFIAny& v) {
    if (v.type_index != kRFFIInt && v.type_index != kRFFIBool) return std::nullopt;
    int64_t i = v.v.v_int64;
    if constexpr (std::is_signed_v<T>) {
      if (i < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
          i > static_cast<int64_t>(std::numeric_limits<T>::max())) {
        return std::nullopt;
      }
    } else {
      if (i < 0 || static_cast<uint64_t>(i) > std::numeric_limits<T>::max()) return std::nullopt;
    }
    return static_cast<T>(i);
  }
};

template <typename T>
struct TypeTraits<T, std::enable_if_t<std::is_floating_point_v<T>>> {
  static std::string name() { return "float"; }
  static void Into(T v, RFFIAny* out) {
    *out = detail::pod(kRFFIFloat);
    out->v.v_float64 = static_cast<double>(v);
  }
  static std::optional<T> TryFrom(const RFFIAny& v) {
    if (v.type_index == kRFFIFloat) return static_cast<T>(v.v.v_float64);
    if (v.type_index == kRFFIInt || v.type_index == kRFFIBool) return static_cast<T>(v.v.v_int64);
    return std::nullopt;
  }
};

template <>
struct TypeTraits<std::nullptr_t> {
  static std::string name() { return "None"; }
  static void Into(std::nullptr_t, RFFIAny* out) { *out = detail::none_value(); }
  static std::optional<std::nullptr_t> TryFrom(const RFFIAny& v) {
    if (v.type_index == kRFFINone) return nullptr;
    return std::nullopt;
  }
};

template <>
struct TypeTraits<std::string> {
  static std::string name() { return "str"; }
  static void Into(std::string_view v, RFFIAny* out) { *out = detail::make_string(v, false); }
  static std::optional<std::string> TryFrom(const RFFIAny& v) {
    std::string_view s;
    if (!detail::str_bytes(v, false, &s)) return std::nullopt;
    return std::string(s);
  }
};

/*! As an argument type: borrows the caller's string for the duration of the call. */
template <>
struct TypeTraits<std::string_view> {
  static std::string name() { return "str"; }
  static void Into(std::string_view v, RFFIAny* out) { *out = detail::make_string(v, false); }
  static std::optional<std::string_view> TryFrom(const RFFIAny& v) {
    std::string_view s;
    if (!detail::str_bytes(v, false, &s)) return std::nullopt;
    return s;
  }
};

template <>
struct TypeTraits<const char*> {
  static std::string name() { return "str"; }
  static void Into(const char* v, RFFIAny* out) {
    if (v == nullptr) throw Error("ValueError", "a NULL const char* is not a string");
    *out = detail::make_string(v, false);
  }
};
template <>
struct TypeTraits<char*> : TypeTraits<const char*> {};

template <>
struct TypeTraits<String> {
  static std::string name() { return "str"; }
  static void Into(const String& v, RFFIAny* out) { *out = Any(v.value()).release(); }
  static std::optional<String> TryFrom(const RFFIAny& v) {
    std::string_view s;
    if (!detail::str_bytes(v, false, &s)) return std::nullopt;
    if (v.type_index == kRFFIRawStr) return String(s);
    return String::FromAny(Any(AnyView(v)));
  }
};

template <>
struct TypeTraits<DLDataType> {
  static std::string name() { return "DataType"; }
  static void Into(DLDataType v, RFFIAny* out) {
    *out = detail::pod(kRFFIDataType);
    out->v.v_dtype = v;
  }
  static std::optional<DLDataType> TryFrom(const RFFIAny& v) {
    if (v.type_index == kRFFIDataType) return v.v.v_dtype;
    std::string_view s;
    if (detail::str_bytes(v, false, &s)) {  // "float32" converts, as in Python
      RFFIByteArray ba = detail::bytes_of(s);
      DLDataType dt;
      if (detail::api().data_type_from_string(&ba, &dt) == 0) return dt;
      detail::api().error_move_from_raised(nullptr);
    }
    return std::nullopt;
  }
};

template <>
struct TypeTraits<DLDevice> {
  static std::string name() { return "Device"; }
  static void Into(DLDevice v, RFFIAny* out) {
    *out = detail::pod(kRFFIDevice);
    out->v.v_device = v;
  }
  static std::optional<DLDevice> TryFrom(const RFFIAny& v) {
    if (v.type_index == kRFFIDevice) return v.v.v_device;
    return std::nullopt;
  }
};

/*! `void*` is an opaque pointer (`kRFFIOpaquePtr`); None reads as NULL. */
template <>
struct TypeTraits<void*> {
  static std::string name() { return "void*"; }
  static void Into(void* v, RFFIAny* out) {
    *out = detail::pod(v == nullptr ? kRFFINone : kRFFIOpaquePtr);
    out->v.v_ptr = v;
  }
  static std::optional<void*> TryFrom(const RFFIAny& v) {
    if (v.type_index == kRFFIOpaquePtr) return v.v.v_ptr;
    if (v.type_index == kRFFINone) return static_cast<void*>(nullptr);
    return std::nullopt;
  }
};

template <>
struct TypeTraits<Any> {
  static std::string name() { return "Any"; }
  static std::optional<Any> TryFrom(const RFFIAny& v) { return Any(AnyView(v)); }
};

template <typename T>
struct TypeTraits<std::optional<T>> {
  static std::string name() { return "Optional[" + TypeTraits<T>::name() + "]"; }
  static void Into(std::optional<T> v, RFFIAny* out) {
    if (v) {
      TypeTraits<T>::Into(std::move(*v), out);
    } else {
      *out = detail::none_value();
    }
  }
  static std::optional<std::optional<T>> TryFrom(const RFFIAny& v) {
    if (v.type_index == kRFFINone) return std::optional<T>();
    std::optional<T> inner = TypeTraits<T>::TryFrom(v);
    if (!inner) return std::nullopt;
    return inner;
  }
};

}  // namespace rffi

#pragma GCC visibility pop

#endif  // RFFI_CPP_ANY_HPP_
