/*
 * rffi C++ API: references to the built-in object types Array, Map and Tensor, and their
 * conversions (also `std::vector<T>` <-> Array and `DLTensor*` arguments).
 * Part of <rffi/rffi.hpp>.
 */
#ifndef RFFI_CPP_CONTAINERS_HPP_
#define RFFI_CPP_CONTAINERS_HPP_

#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <vector>

#include "any.hpp"

#pragma GCC visibility push(hidden)

namespace rffi {
namespace detail {

// A global function the C++ API relies on (`ffi.Array`, ...), looked up once. The handle is
// kept for the life of the process, like the runtime's own builtins.
inline RFFIObjectHandle lookup_builtin(const char* name) {
  RFFIByteArray ba = bytes_of(name);
  RFFIObjectHandle f = nullptr;
  if (api().function_get_global(&ba, &f) != 0) throw Error::FromRaised();
  if (f == nullptr) {
    throw Error("RuntimeError", std::string("the runtime has no builtin `") + name + "`");
  }
  return f;
}

inline Any call_raw(RFFIObjectHandle f, const RFFIAny* args, int32_t n) {
  RFFIAny result = none_value();
  if (api().function_call(f, const_cast<RFFIAny*>(args), n, &result) != 0) {
    throw Error::FromRaised();
  }
  return Any::Adopt(result);
}

#define RFFI_DETAIL_BUILTIN(name)                                        \
  ([]() -> RFFIObjectHandle {                                            \
    static const RFFIObjectHandle f = ::rffi::detail::lookup_builtin(name); \
    return f;                                                            \
  }())

inline RFFIAny to_owned(const RFFIAny& view) {
  switch (view.type_index) {
    case kRFFIRawStr:
    case kRFFIByteArrayPtr: {
      std::string_view s;
      bool bytes = view.type_index == kRFFIByteArrayPtr;
      if (!str_bytes(view, bytes, &s)) throw Error("ValueError", "NULL pointer in a string value");
      return make_string(s, bytes);
    }
    case kRFFIObjectRValueRef: {
      RFFIObjectHandle* slot = static_cast<RFFIObjectHandle*>(view.v.v_ptr);
      if (slot == nullptr || *slot == nullptr) {
        throw Error("ValueError", "the object of this rvalue reference was already moved out");
      }
      RFFIAny out = pod(header(*slot)->type_index);
      out.v.v_obj = header(std::exchange(*slot, nullptr));
      return out;
    }
    case kRFFIDLTensorPtr:
      // As in the runtime: the caller's DLTensor may die after the call, so it cannot be owned.
      throw Error::WithBacktrace("TypeError",
                                 "a borrowed DLTensor* cannot be kept: take the parameter as "
                                 "DLTensor* (valid during the call) or pass a Tensor",
                                 "");
    default: {
      RFFIAny out = view;
      if (is_object(out.type_index)) inc_ref(out.v.v_obj);
      return out;
    }
  }
}

// The value of an object reference: None when it is NULL.
inline void object_into(const ObjectRef& ref, RFFIAny* out) {
  if (!ref.defined()) {
    *out = none_value();
    return;
  }
  *out = pod(ref.type_index());
  out->v.v_obj = header(ObjectRef(ref).release());
}

}  // namespace detail

/*! \brief An immutable sequence of values (`ffi.Array`). */
class Array : public ObjectRef {
 public:
  static constexpr int32_t kTypeIndex = kRFFIArray;
  /*! \brief An empty array. */
  Array() : Array(std::vector<Any>()) {}
  Array(std::initializer_list<Any> items) : Array(std::vector<Any>(items)) {}
  explicit Array(const std::vector<Any>& items) {
    static_assert(sizeof(Any) == sizeof(RFFIAny), "");
    Any made = detail::call_raw(RFFI_DETAIL_BUILTIN("ffi.Array"),
                                reinterpret_cast<const RFFIAny*>(items.data()),
                                static_cast<int32_t>(items.size()));
    handle_ = made.release().v.v_obj;
  }
  /*! \brief Wraps a reference already known to be an Array. */
  static Array Unchecked(ObjectRef ref) { return Array(std::move(ref), 0); }

  size_t size() const { return static_cast<size_t>(seq()->size); }
  bool empty() const { return size() == 0; }
  /*! \brief Item `i` (an IndexError when out of range). */
  Any operator[](size_t i) const {
    if (i >= size()) {
      throw Error("IndexError", "Array index " + std::to_string(i) + " out of range for size " +
                                    std::to_string(size()));
    }
    return Any(AnyView(seq()->data[i]));
  }
  /*! \brief Item `i` as `T` (a TypeError naming the index otherwise). */
  template <typename T>
  T get(size_t i) const {
    Any item = (*this)[i];
    std::optional<T> v = item.as<T>();
    if (!v) {
      throw Error("TypeError", "Array item " + std::to_string(i) + ": " +
                                   detail::mismatch(TypeTraits<T>::name(), item.type_index()));
    }
    return std::move(*v);
  }

  /*! \brief An input iterator yielding items by value (works with std algorithms). */
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Any;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = Any;
    iterator(const Array* array, size_t i) : array_(array), i_(i) {}
    Any operator*() const { return (*array_)[i_]; }
    iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator!=(const iterator& other) const { return i_ != other.i_; }
    bool operator==(const iterator& other) const { return i_ == other.i_; }

   private:
    const Array* array_;
    size_t i_;
  };
  iterator begin() const { return iterator(this, 0); }
  iterator end() const { return iterator(this, size()); }

 private:
  Array(ObjectRef ref, int) : ObjectRef(std::move(ref)) {}
  RFFISeqCell* seq() const { return detail::cell<RFFISeqCell>(handle_); }
};

/*! \brief A hash map from values to values, in insertion order (`ffi.Map`). */
class Map : public ObjectRef {
 public:
  static constexpr int32_t kTypeIndex = kRFFIMap;
  /*! \brief An empty map. */
  Map() : Map(std::initializer_list<std::pair<Any, Any>>()) {}
  Map(std::initializer_list<std::pair<Any, Any>> items)
      : Map(std::vector<std::pair<Any, Any>>(items)) {}
  explicit Map(const std::vector<std::pair<Any, Any>>& items) {
    std::vector<RFFIAny> flat;
    flat.reserve(items.size() * 2);
    for (const auto& kv : items) {
      flat.push_back(kv.first.raw());
      flat.push_back(kv.second.raw());
    }
    Any made = detail::call_raw(RFFI_DETAIL_BUILTIN("ffi.Map"), flat.data(),
                                static_cast<int32_t>(flat.size()));
    handle_ = made.release().v.v_obj;
  }
  static Map Unchecked(ObjectRef ref) { return Map(std::move(ref), 0); }

  size_t size() const {
    return static_cast<size_t>(call("ffi.MapSize", RFFI_DETAIL_BUILTIN("ffi.MapSize"), nullptr)
                                   .cast<int64_t>());
  }
  bool empty() const { return size() == 0; }
  /*! \brief The value of `key` (a KeyError when absent). */
  Any at(const Any& key) const {
    return call("ffi.MapGetItem", RFFI_DETAIL_BUILTIN("ffi.MapGetItem"), &key);
  }
  template <typename V>
  V get(const Any& key) const {
    return at(key).cast<V>();
  }
  size_t count(const Any& key) const {
    return static_cast<size_t>(
        call("ffi.MapCount", RFFI_DETAIL_BUILTIN("ffi.MapCount"), &key).cast<int64_t>());
  }
  /*! \brief The (key, value) pairs in insertion order. */
  std::vector<std::pair<Any, Any>> items() const {
    Array flat = call("ffi.MapItems", RFFI_DETAIL_BUILTIN("ffi.MapItems"), nullptr).cast<Array>();
    std::vector<std::pair<Any, Any>> out;
    out.reserve(flat.size() / 2);
    for (size_t i = 0; i + 1 < flat.size(); i += 2) out.emplace_back(flat[i], flat[i + 1]);
    return out;
  }

 private:
  Map(ObjectRef ref, int) : ObjectRef(std::move(ref)) {}
  Any call(const char*, RFFIObjectHandle f, const Any* key) const {
    RFFIAny args[2] = {detail::pod(kRFFIMap), key != nullptr ? key->raw() : detail::none_value()};
    args[0].v.v_obj = detail::header(handle_);
    return detail::call_raw(f, args, key != nullptr ? 2 : 1);
  }
};

/*! \brief A view of `n` int64 values (shape, strides) that lives as long as its tensor. */
struct ShapeView {
  const int64_t* data;
  size_t size;
  const int64_t* begin() const { return data; }
  const int64_t* end() const { return data + size; }
  int64_t operator[](size_t i) const { return data[i]; }
  std::vector<int64_t> to_vector() const { return std::vector<int64_t>(begin(), end()); }
};

/*! \brief A tensor (`ffi.Tensor`): a DLTensor with a reference count, shared through DLPack. */
class Tensor : public ObjectRef {
 public:
  static constexpr int32_t kTypeIndex = kRFFITensor;
  /*! \brief A NULL reference. */
  Tensor() = default;
  static Tensor Unchecked(ObjectRef ref) { return Tensor(std::move(ref), 0); }

  /*!
   * \brief A new tensor with compact strides, from the environment allocator when the host set
   * one, else (CPU) from the runtime's allocator (64-byte aligned, zeroed).
   */
  static Tensor Empty(const std::vector<int64_t>& shape, DLDataType dtype,
                      DLDevice device = DLDevice{kDLCPU, 0}) {
    std::vector<RFFIAny> dims;
    for (int64_t d : shape) {
      dims.push_back(detail::pod(kRFFIInt));
      dims.back().v.v_int64 = d;
    }
    Any shape_obj = detail::call_raw(RFFI_DETAIL_BUILTIN("ffi.Shape"), dims.data(),
                                     static_cast<int32_t>(dims.size()));
    RFFIAny args[3] = {shape_obj.raw(), Any(dtype).raw(), Any(device).raw()};
    return detail::call_raw(RFFI_DETAIL_BUILTIN("ffi.TensorEmpty"), args, 3).cast<Tensor>();
  }

#ifndef RFFI_PLUGIN
  /*! \brief Imports a DLPack tensor without copying (rffi owns `managed` from here on). */
  static Tensor FromDLPack(DLManagedTensorVersioned* managed, int32_t require_alignment = 0,
                           bool require_contiguous = false) {
    RFFIObjectHandle h = nullptr;
    if (RFFITensorFromDLPackVersioned(managed, require_alignment, require_contiguous ? 1 : 0,
                                      &h) != 0) {
      throw Error::FromRaised();
    }
    return Unchecked(ObjectRef::Adopt(h));
  }
  /*! \brief Exports as DLPack sharing the data; the caller calls the result's deleter once. */
  DLManagedTensorVersioned* ToDLPack() const {
    DLManagedTensorVersioned* out = nullptr;
    if (RFFITensorToDLPackVersioned(handle_, &out) != 0) throw Error::FromRaised();
    return out;
  }
#endif

  const DLTensor* operator->() const { return dltensor(); }
  const DLTensor* dltensor() const {
    return handle_ == nullptr ? nullptr : &detail::cell<DLTensor>(handle_)[0];
  }
  /*! \brief `data + byte_offset`. */
  void* data_ptr() const { return static_cast<char*>(dltensor()->data) + dltensor()->byte_offset; }
  int32_t ndim() const { return dltensor()->ndim; }
  ShapeView shape() const { return ShapeView{dltensor()->shape, static_cast<size_t>(ndim())}; }
  /*! \brief Always filled by rffi (compact strides when the producer gave none). */
  ShapeView strides() const {
    return ShapeView{dltensor()->strides, static_cast<size_t>(ndim())};
  }
  DLDataType dtype() const { return dltensor()->dtype; }
  DLDevice device() const { return dltensor()->device; }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape()) n *= d;
    return n;
  }
  bool IsContiguous() const {
    int64_t expected = 1;
    for (int32_t i = ndim() - 1; i >= 0; --i) {
      if (shape()[i] != 1 && strides()[i] != expected) return false;
      expected *= shape()[i];
    }
    return true;
  }

 private:
  Tensor(ObjectRef ref, int) : ObjectRef(std::move(ref)) {}
};

namespace detail {

// Conversions of object references of one type index (Ref::kTypeIndex).
template <typename Ref>
struct ObjectRefTraits {
  static void Into(const Ref& ref, RFFIAny* out) { object_into(ref, out); }
  static std::optional<Ref> TryFrom(const RFFIAny& v) {
    if (v.type_index != Ref::kTypeIndex) return std::nullopt;
    return Ref::Unchecked(ObjectRef::Borrow(v.v.v_obj));
  }
};

}  // namespace detail

template <>
struct TypeTraits<ObjectRef> {
  static std::string name() { return "ffi.Object"; }
  static void Into(const ObjectRef& ref, RFFIAny* out) { detail::object_into(ref, out); }
  static std::optional<ObjectRef> TryFrom(const RFFIAny& v) {
    if (!detail::is_object(v.type_index)) return std::nullopt;
    return ObjectRef::Borrow(v.v.v_obj);
  }
};

template <>
struct TypeTraits<Array> : detail::ObjectRefTraits<Array> {
  static std::string name() { return "ffi.Array"; }
};
template <>
struct TypeTraits<Map> : detail::ObjectRefTraits<Map> {
  static std::string name() { return "ffi.Map"; }
};
template <>
struct TypeTraits<Tensor> : detail::ObjectRefTraits<Tensor> {
  static std::string name() { return "ffi.Tensor"; }
};

/*!
 * `DLTensor*` arguments: a borrowed `DLTensor*` or a Tensor object's DLTensor, valid for the
 * call. As a value it is a borrowed `kRFFIDLTensorPtr` (an argument, never a result).
 */
template <>
struct TypeTraits<DLTensor*> {
  static std::string name() { return "DLTensor*"; }
  static void Into(DLTensor* t, RFFIAny* out) {
    *out = detail::pod(kRFFIDLTensorPtr);
    out->v.v_ptr = t;
  }
  static std::optional<DLTensor*> TryFrom(const RFFIAny& v) {
    if (v.type_index == kRFFIDLTensorPtr && v.v.v_ptr != nullptr) {
      return static_cast<DLTensor*>(v.v.v_ptr);
    }
    if (v.type_index == kRFFITensor) return detail::cell<DLTensor>(v.v.v_obj);
    return std::nullopt;
  }
};
template <>
struct TypeTraits<const DLTensor*> {
  static std::string name() { return "DLTensor*"; }
  static void Into(const DLTensor* t, RFFIAny* out) {
    TypeTraits<DLTensor*>::Into(const_cast<DLTensor*>(t), out);
  }
  static std::optional<const DLTensor*> TryFrom(const RFFIAny& v) {
    std::optional<DLTensor*> t = TypeTraits<DLTensor*>::TryFrom(v);
    if (!t) return std::nullopt;
    return *t;
  }
};

/*! `std::vector<T>` is an Array of `T` both ways. */
template <typename T>
struct TypeTraits<std::vector<T>> {
  static std::string name() { return "ffi.Array[" + TypeTraits<T>::name() + "]"; }
  static void Into(const std::vector<T>& items, RFFIAny* out) {
    std::vector<Any> values;
    values.reserve(items.size());
    for (const T& item : items) values.emplace_back(item);
    detail::object_into(Array(values), out);
  }
  static std::optional<std::vector<T>> TryFrom(const RFFIAny& v) {
    std::optional<Array> array = TypeTraits<Array>::TryFrom(v);
    if (!array) return std::nullopt;
    std::vector<T> out;
    out.reserve(array->size());
    for (Any item : *array) {
      std::optional<T> x = item.as<T>();
      if (!x) return std::nullopt;
      out.push_back(std::move(*x));
    }
    return out;
  }
};

}  // namespace rffi

#pragma GCC visibility pop

#endif  // RFFI_CPP_CONTAINERS_HPP_
