/*
 * rffi C++ API: errors. `rffi::Error` is the C++ exception for an rffi Error object (kind,
 * message, traceback). A failed call throws it; a C++ function called through rffi that throws
 * hands its exception back as an rffi error, with its frame added to the traceback.
 * Part of <rffi/rffi.hpp>.
 */
#ifndef RFFI_CPP_ERROR_HPP_
#define RFFI_CPP_ERROR_HPP_

#include <exception>
#include <new>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "object.hpp"

#pragma GCC visibility push(hidden)

namespace rffi {
namespace detail {

// One traceback line, as every layer of rffi writes it (most recent call first).
inline std::string frame(std::string_view file, int line, std::string_view function) {
  std::string out = "  File \"";
  out.append(file).append("\", line ").append(std::to_string(line)).append(", in ");
  out.append(function).append("\n");
  return out;
}

inline RFFIErrorCell* error_cell(RFFIObjectHandle h) { return cell<RFFIErrorCell>(h); }

}  // namespace detail

/*!
 * \brief An rffi error as a C++ exception. `what()` is `"<kind>: <message>"`; the traceback (most
 * recent call first, as rffi stores it) holds the frames of every language the error crossed.
 */
class Error : public std::exception {
 public:
  /*!
   * \brief A new error raised here: its traceback starts with the caller's file, line and
   * function (filled in by the compiler).
   */
  Error(std::string_view kind, std::string_view message, const char* file = __builtin_FILE(),
        int line = __builtin_LINE(), const char* function = __builtin_FUNCTION())
      : Error(Create(kind, message, detail::frame(file, line, function))) {}

  /*! \brief A new error with this traceback text (most recent call first; may be empty). */
  static Error WithBacktrace(std::string_view kind, std::string_view message,
                             std::string_view backtrace) {
    return Error(Create(kind, message, backtrace));
  }

  /*! \brief Wraps an Error object. */
  explicit Error(ObjectRef error) : object_(std::move(error)) { describe(); }

  /*! \brief Takes the error raised on this thread by a C call that returned -1. */
  static Error FromRaised(const char* file = __builtin_FILE(), int line = __builtin_LINE(),
                          const char* function = __builtin_FUNCTION()) {
    RFFIObjectHandle h = nullptr;
    detail::api().error_move_from_raised(&h);
    if (h == nullptr) {
      return Error("RuntimeError", "an rffi call failed without raising an error", file, line,
                   function);
    }
    return Error(ObjectRef::Adopt(h));
  }

  /*! \brief `ValueError`, `TypeError`, ..., or a custom kind. */
  std::string kind() const { return field(&RFFIErrorCell::kind); }
  std::string message() const { return field(&RFFIErrorCell::message); }

  /*! \brief The traceback, most recent call first, one `  File "f", line n, in fn` per line. */
  std::string backtrace() const {
    RFFIErrorCell* c = cell();
    if (c == nullptr) return std::string();
    if (c->update_backtrace != nullptr) {
      // Symbolizes native frames the runtime captured but has not rendered yet.
      RFFIByteArray empty{"", 0};
      c->update_backtrace(object_.get(), &empty, kRFFIBacktraceUpdateModeRender);
    }
    return std::string(detail::view_of(c->backtrace));
  }

  /*! \brief The error as Python prints it: frames oldest first, then `kind: message`. */
  std::string TracebackMostRecentCallLast() const {
    std::string bt = backtrace();
    std::vector<std::string_view> lines;
    std::string_view rest(bt);
    while (!rest.empty()) {
      size_t nl = rest.find('\n');
      std::string_view line = rest.substr(0, nl);
      if (!line.empty()) lines.push_back(line);
      rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    }
    std::string out = "Traceback (most recent call last):\n";
    for (auto it = lines.rbegin(); it != lines.rend(); ++it) out.append(*it).append("\n");
    return out + what_;
  }

  /*! \brief Adds an outer frame (the error is unwinding through `function`). */
  void AppendFrame(const std::string& frame_line) {
    RFFIErrorCell* c = cell();
    if (c == nullptr || c->update_backtrace == nullptr) return;
    RFFIByteArray text = detail::bytes_of(frame_line);
    c->update_backtrace(object_.get(), &text, kRFFIBacktraceUpdateModeAppend);
  }

  const char* what() const noexcept override { return what_.c_str(); }
  /*! \brief The Error object (type index `kRFFIError`). */
  const ObjectRef& object() const noexcept { return object_; }

 private:
  static ObjectRef Create(std::string_view kind, std::string_view message,
                          std::string_view backtrace) {
    RFFIByteArray k = detail::bytes_of(kind), m = detail::bytes_of(message),
                  t = detail::bytes_of(backtrace);
    RFFIObjectHandle h = nullptr;
    if (detail::api().error_create(&k, &m, &t, &h) != 0) {
      // A malformed kind (empty, NUL inside): report that error instead.
      detail::api().error_move_from_raised(&h);
    }
    return ObjectRef::Adopt(h);
  }
  RFFIErrorCell* cell() const {
    return object_.type_index() == kRFFIError ? detail::error_cell(object_.get()) : nullptr;
  }
  std::string field(RFFIByteArray RFFIErrorCell::*member) const {
    RFFIErrorCell* c = cell();
    return c == nullptr ? std::string() : std::string(detail::view_of(c->*member));
  }
  void describe() {
    if (cell() == nullptr) {
      what_ = "RuntimeError: not an rffi Error object";
      return;
    }
    what_ = kind() + ": " + message();
  }

  ObjectRef object_;
  std::string what_;
};

namespace detail {

inline void raise_new(const char* kind, const char* message, const std::string& frame_line) {
  RFFIByteArray k = bytes_of(kind), m = bytes_of(message), t = bytes_of(frame_line);
  RFFIObjectHandle h = nullptr;
  if (api().error_create(&k, &m, &t, &h) == 0) {
    api().error_set_raised(h);  // takes its own reference
    api().object_dec_ref(h);
  } else {
    api().error_set_raised_from_cstr(kind, message);
  }
}

/*!
 * Called inside `catch (...)` at a C boundary: raises the exception in flight as an rffi error
 * with the frame of `function` (defined at file:line) appended, and returns -1. An rffi::Error
 * keeps its object (so its identity and traceback survive the round trip); standard exceptions
 * map to the Python kinds their meaning matches.
 */
inline int32_t raise_current_exception(std::string_view function, const char* file,
                                       int line) noexcept {
  try {
    std::string frame_line = frame(file, line, function);
    try {
      throw;
    } catch (Error& e) {
      e.AppendFrame(frame_line);
      api().error_set_raised(e.object().get());
    } catch (const std::bad_alloc& e) {
      raise_new("MemoryError", e.what(), frame_line);
    } catch (const std::invalid_argument& e) {
      raise_new("ValueError", e.what(), frame_line);
    } catch (const std::domain_error& e) {
      raise_new("ValueError", e.what(), frame_line);
    } catch (const std::length_error& e) {
      raise_new("ValueError", e.what(), frame_line);
    } catch (const std::out_of_range& e) {
      raise_new("IndexError", e.what(), frame_line);
    } catch (const std::exception& e) {
      raise_new("RuntimeError", e.what(), frame_line);
    } catch (...) {
      raise_new("RuntimeError", "unknown C++ exception (not derived from std::exception)",
                frame_line);
    }
  } catch (...) {
    // Building the error itself failed (out of memory): the one message that needs nothing.
    try {
      api().error_set_raised_from_cstr("MemoryError", "out of memory while raising an error");
    } catch (...) {
    }
  }
  return -1;
}

// `RFFI_THROW(Kind) << ...;` collects the message, then throws when the statement ends.
class ErrorBuilder {
 public:
  ErrorBuilder(const char* kind, const char* file, int line, const char* function)
      : kind_(kind), file_(file), line_(line), function_(function) {}
  std::ostringstream& stream() { return stream_; }
  [[noreturn]] ~ErrorBuilder() noexcept(false) {
    throw Error(kind_, stream_.str(), file_, line_, function_);
  }

 private:
  const char* kind_;
  const char* file_;
  int line_;
  const char* function_;
  std::ostringstream stream_;
};

}  // namespace detail
}  // namespace rffi

#pragma GCC visibility pop

/*! \brief `RFFI_THROW(ValueError) << "bad size " << n;` throws an rffi::Error of that kind. */
#define RFFI_THROW(Kind) ::rffi::detail::ErrorBuilder(#Kind, __FILE__, __LINE__, __func__).stream()

/*! \brief `RFFI_CHECK(n > 0) << "n = " << n;` throws an AssertionError when the check fails. */
#define RFFI_CHECK(cond) \
  if (cond) {            \
  } else                 \
    RFFI_THROW(AssertionError) << "Check failed: (" #cond ") is false: "

#endif  // RFFI_CPP_ERROR_HPP_
