/*
 * rffi C++ API: the mutable containers `rffi::List` (`ffi.List`) and `rffi::Dict` (`ffi.Dict`),
 * shared by reference (a change made through one reference, or in another language, is seen by
 * all). They go through the runtime's `ffi.List*` / `ffi.Dict*` global functions, so they work
 * the same in hosts and plugins. Part of <rffi/rffi.hpp>.
 */
#ifndef RFFI_CPP_LIST_DICT_HPP_
#define RFFI_CPP_LIST_DICT_HPP_

#include "containers.hpp"

#pragma GCC visibility push(hidden)

namespace rffi {
namespace detail {

// Calls a builtin with `self` (borrowed) followed by `args` (borrowed).
inline Any call_on(RFFIObjectHandle f, const ObjectRef& self,
                   std::initializer_list<RFFIAny> args = {}) {
  std::vector<RFFIAny> all;
  all.reserve(args.size() + 1);
  all.push_back(pod(self.type_index()));
  all.back().v.v_obj = header(self.get());
  all.insert(all.end(), args.begin(), args.end());
  return call_raw(f, all.data(), static_cast<int32_t>(all.size()));
}

inline RFFIAny int_value(int64_t i) {
  RFFIAny v = pod(kRFFIInt);
  v.v.v_int64 = i;
  return v;
}

}  // namespace detail

/*! \brief A mutable sequence of values (`ffi.List`), shared by reference. */
class List : public ObjectRef {
 public:
  static constexpr int32_t kTypeIndex = kRFFIList;
  /*! \brief An empty list. */
  List() : List(std::vector<Any>()) {}
  List(std::initializer_list<Any> items) : List(std::vector<Any>(items)) {}
  explicit List(const std::vector<Any>& items) {
    Any made = detail::call_raw(RFFI_DETAIL_BUILTIN("ffi.List"),
                                reinterpret_cast<const RFFIAny*>(items.data()),
                                static_cast<int32_t>(items.size()));
    handle_ = made.release().v.v_obj;
  }
  static List Unchecked(ObjectRef ref) { return List(std::move(ref), 0); }

  size_t size() const {
    return static_cast<size_t>(
        detail::call_on(RFFI_DETAIL_BUILTIN("ffi.ListSize"), *this).cast<int64_t>());
  }
  bool empty() const { return size() == 0; }
  /*! \brief Item `i`; negative counts from the end (an IndexError when out of range). */
  Any operator[](int64_t i) const {
    return detail::call_on(RFFI_DETAIL_BUILTIN("ffi.ListGetItem"), *this, {detail::int_value(i)});
  }
  template <typename T>
  T get(int64_t i) const {
    return (*this)[i].cast<T>();
  }
  void Set(int64_t i, const Any& value) {
    detail::call_on(RFFI_DETAIL_BUILTIN("ffi.ListSetItem"), *this,
                    {detail::int_value(i), value.raw()});
  }
  void push_back(const Any& value) {
    detail::call_on(RFFI_DETAIL_BUILTIN("ffi.ListAppend"), *this, {value.raw()});
  }
  void insert(int64_t i, const Any& value) {
    detail::call_on(RFFI_DETAIL_BUILTIN("ffi.ListInsert"), *this,
                    {detail::int_value(i), value.raw()});
  }
  /*! \brief Removes and returns item `i` (the last by default). */
  Any pop(int64_t i = -1) {
    return detail::call_on(RFFI_DETAIL_BUILTIN("ffi.ListPop"), *this, {detail::int_value(i)});
  }
  void clear() { detail::call_on(RFFI_DETAIL_BUILTIN("ffi.ListClear"), *this); }
  /*! \brief A snapshot of the items. */
  std::vector<Any> items() const {
    Array all =
        detail::call_on(RFFI_DETAIL_BUILTIN("ffi.ListItems"), *this).cast<Array>();
    std::vector<Any> out;
    out.reserve(all.size());
    for (Any item : all) out.push_back(std::move(item));
    return out;
  }

 private:
  List(ObjectRef ref, int) : ObjectRef(std::move(ref)) {}
};

/*! \brief A mutable hash map in insertion order (`ffi.Dict`), shared by reference. */
class Dict : public ObjectRef {
 public:
  static constexpr int32_t kTypeIndex = kRFFIDict;
  /*! \brief An empty dict. */
  Dict() : Dict(std::initializer_list<std::pair<Any, Any>>()) {}
  Dict(std::initializer_list<std::pair<Any, Any>> items) {
    std::vector<RFFIAny> flat;
    for (const auto& kv : items) {
      flat.push_back(kv.first.raw());
      flat.push_back(kv.second.raw());
    }
    Any made = detail::call_raw(RFFI_DETAIL_BUILTIN("ffi.Dict"), flat.data(),
                                static_cast<int32_t>(flat.size()));
    handle_ = made.release().v.v_obj;
  }
  static Dict Unchecked(ObjectRef ref) { return Dict(std::move(ref), 0); }

  size_t size() const {
    return static_cast<size_t>(
        detail::call_on(RFFI_DETAIL_BUILTIN("ffi.DictSize"), *this).cast<int64_t>());
  }
  bool empty() const { return size() == 0; }
  /*! \brief The value of `key` (a KeyError when absent). */
  Any at(const Any& key) const {
    return detail::call_on(RFFI_DETAIL_BUILTIN("ffi.DictGetItem"), *this, {key.raw()});
  }
  template <typename V>
  V get(const Any& key) const {
    return at(key).cast<V>();
  }
  size_t count(const Any& key) const {
    return static_cast<size_t>(
        detail::call_on(RFFI_DETAIL_BUILTIN("ffi.DictCount"), *this, {key.raw()})
            .cast<int64_t>());
  }
  void Set(const Any& key, const Any& value) {
    detail::call_on(RFFI_DETAIL_BUILTIN("ffi.DictSetItem"), *this, {key.raw(), value.raw()});
  }
  /*! \brief Removes `key` and returns its value (a KeyError when absent). */
  Any pop(const Any& key) {
    return detail::call_on(RFFI_DETAIL_BUILTIN("ffi.DictPop"), *this, {key.raw()});
  }
  void clear() { detail::call_on(RFFI_DETAIL_BUILTIN("ffi.DictClear"), *this); }
  /*! \brief A snapshot of the (key, value) pairs in insertion order. */
  std::vector<std::pair<Any, Any>> items() const {
    Array flat = detail::call_on(RFFI_DETAIL_BUILTIN("ffi.DictItems"), *this).cast<Array>();
    std::vector<std::pair<Any, Any>> out;
    for (size_t i = 0; i + 1 < flat.size(); i += 2) out.emplace_back(flat[i], flat[i + 1]);
    return out;
  }

 private:
  Dict(ObjectRef ref, int) : ObjectRef(std::move(ref)) {}
};

template <>
struct TypeTraits<List> : detail::ObjectRefTraits<List> {
  static std::string name() { return "ffi.List"; }
};
template <>
struct TypeTraits<Dict> : detail::ObjectRefTraits<Dict> {
  static std::string name() { return "ffi.Dict"; }
};

}  // namespace rffi

#pragma GCC visibility pop

#endif  // RFFI_CPP_LIST_DICT_HPP_
