/*
 * rffi C++ API: ObjectRef, an owning reference to any runtime object (the intrusive reference
 * count of the object header, shared with every other language). Part of <rffi/rffi.hpp>.
 */
#ifndef RFFI_CPP_OBJECT_HPP_
#define RFFI_CPP_OBJECT_HPP_

#include "base.hpp"

#pragma GCC visibility push(hidden)

namespace rffi {

/*! \brief An owning reference to an object (NULL when default-constructed or moved from). */
class ObjectRef {
 public:
  ObjectRef() noexcept = default;
  ObjectRef(const ObjectRef& other) : handle_(other.handle_) { detail::inc_ref(handle_); }
  ObjectRef(ObjectRef&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  ObjectRef& operator=(const ObjectRef& other) {
    ObjectRef copy(other);
    swap(copy);
    return *this;
  }
  ObjectRef& operator=(ObjectRef&& other) noexcept {
    ObjectRef moved(std::move(other));
    swap(moved);
    return *this;
  }
  ~ObjectRef() { detail::dec_ref(handle_); }

  /*! \brief Takes over a reference the caller owns (a handle a C function returned). */
  static ObjectRef Adopt(RFFIObjectHandle handle) noexcept {
    ObjectRef r;
    r.handle_ = handle;
    return r;
  }
  /*! \brief Adds a reference to a borrowed handle. */
  static ObjectRef Borrow(RFFIObjectHandle handle) {
    detail::inc_ref(handle);
    return Adopt(handle);
  }

  RFFIObjectHandle get() const noexcept { return handle_; }
  /*! \brief Gives up the reference: the caller now owns it. */
  RFFIObjectHandle release() noexcept { return std::exchange(handle_, nullptr); }
  bool defined() const noexcept { return handle_ != nullptr; }
  explicit operator bool() const noexcept { return defined(); }
  void swap(ObjectRef& other) noexcept { std::swap(handle_, other.handle_); }

  /*! \brief The object's type index (`kRFFINone` for a NULL reference). */
  int32_t type_index() const noexcept {
    return handle_ == nullptr ? kRFFINone : detail::header(handle_)->type_index;
  }
  /*! \brief The type key: `ffi.Array`, `ffi.Tensor`, or a key registered at run time. */
  std::string type_key() const { return detail::type_name(type_index()); }
  /*! \brief The strong reference count (for tests and diagnostics). */
  uint32_t use_count() const noexcept {
    if (handle_ == nullptr) return 0;
    uint64_t combined = __atomic_load_n(&detail::header(handle_)->combined_ref_count,
                                        __ATOMIC_RELAXED);
    return static_cast<uint32_t>(combined & 0xffffffffu);
  }
  /*! \brief Whether both refer to the same object. */
  bool same_as(const ObjectRef& other) const noexcept { return handle_ == other.handle_; }

 protected:
  RFFIObjectHandle handle_ = nullptr;
};

}  // namespace rffi

#pragma GCC visibility pop

#endif  // RFFI_CPP_OBJECT_HPP_
