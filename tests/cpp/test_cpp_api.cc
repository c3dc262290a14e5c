// The C++ API (include/rffi/rffi.hpp) in a host program that links librffi.so: values,
// ownership, typed calls both ways, errors and tracebacks both ways, containers, tensors, and a
// C++ plugin (plugin.cc) loaded through the runtime.
// usage: test_cpp_api <cpp_plugin.so> <copy of it, for the failing-init test>
#include <rffi/rffi.hpp>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "check.hpp"

using rffi::Any;
using rffi::Array;
using rffi::Error;
using rffi::Function;
using rffi::Map;
using rffi::Tensor;

static const DLDataType kF32{kDLFloat, 32, 1};

static void values() {
  Any none;
  CHECK(none.is_none() && none.type_index() == kRFFINone);
  Any i = 42, b = true, f = 1.5, s = "short", l = std::string("a longer string");
  CHECK(i.type_index() == kRFFIInt && i.cast<int64_t>() == 42 && i.cast<int>() == 42);
  CHECK(b.type_index() == kRFFIBool && b.cast<bool>());
  CHECK(f.type_index() == kRFFIFloat && f.cast<double>() == 1.5);
  CHECK(i.cast<double>() == 42.0);  // int widens to float, as in Python
  CHECK(s.type_index() == kRFFISmallStr && s.cast<std::string>() == "short");
  CHECK(l.type_index() == kRFFIStr && l.cast<std::string>() == "a longer string");
  // The small/heap boundary is 7 bytes; embedded NULs are kept.
  CHECK(Any(std::string(7, 'x')).type_index() == kRFFISmallStr);
  CHECK(Any(std::string(8, 'x')).type_index() == kRFFIStr);
  std::string nul("a\0b", 3);
  CHECK(Any(nul).cast<std::string>() == nul);
  // Conversions that do not fit are nullopt for as<T>() and a TypeError for cast<T>().
  CHECK(!Any(300).as<int8_t>() && !Any(-1).as<uint32_t>() && Any(255).as<uint8_t>() == 255);
  CHECK(!i.as<std::string>() && !s.as<int64_t>());
  EXPECT_ERROR("TypeError", "cannot cast: expected str but got int", i.cast<std::string>());
  EXPECT_ERROR("TypeError", "expected ffi.Tensor but got str", s.cast<Tensor>());
  EXPECT_ERROR("OverflowError", "does not fit", Any(uint64_t(1) << 63));
  CHECK(Any(std::optional<int>()).is_none() && Any(std::optional<int>(3)).cast<int>() == 3);
  CHECK(!none.cast<std::optional<int>>().has_value());
  DLDevice dev{kDLCUDA, 1};
  CHECK(Any(dev).cast<DLDevice>().device_id == 1 && Any(kF32).cast<DLDataType>().bits == 32);
  CHECK(Any("float16").cast<DLDataType>().bits == 16);  // dtype strings parse
  rffi::String str("héllo wörld");
  CHECK(str == "héllo wörld" && str.size() == 13 && Any(str).cast<rffi::String>() == str.view());
}

static void ownership() {
  Array a{1, 2};
  CHECK(a.use_count() == 1);
  {
    Any held = a;
    CHECK(a.use_count() == 2 && held.type_index() == kRFFIArray);
    Any moved = std::move(held);
    CHECK(a.use_count() == 2 && held.is_none());  // NOLINT: reading a moved-from Any is defined
    Array back = moved.cast<Array>();
    CHECK(a.use_count() == 3 && back.same_as(a));
  }
  CHECK(a.use_count() == 1);
  Array b = a;
  Array c = std::move(b);
  CHECK(!b.defined() && c.same_as(a) && a.use_count() == 2);  // NOLINT
  c = Array{3};
  CHECK(a.use_count() == 1 && c.size() == 1);
  RFFIAny raw = Any(a).release();  // a released value owns its reference
  CHECK(a.use_count() == 2);
  Any::Adopt(raw);
  CHECK(a.use_count() == 1);
}

static void typed_calls() {
  Function add_one = Function::GetGlobalRequired("testing.add_one");
  CHECK(add_one(41).cast<int64_t>() == 42);
  Function echo = Function::GetGlobalRequired("testing.echo");
  CHECK(echo("x").cast<std::string>() == "x");
  CHECK(echo(std::string(100, 'y')).cast<std::string>() == std::string(100, 'y'));
  CHECK(echo(2.5).cast<double>() == 2.5 && echo(true).type_index() == kRFFIBool);
  CHECK(echo(nullptr).is_none() && Function::GetGlobalRequired("testing.nop")().is_none());
  Array a{1};
  CHECK(echo(a).cast<Array>().same_as(a));
  CHECK(a.use_count() == 1);
  CHECK(!Function::GetGlobal("no.such.function"));
  EXPECT_ERROR("KeyError", "no.such.function", Function::GetGlobalRequired("no.such.function"));
  EXPECT_ERROR("ValueError", "NULL rffi::Function", Function()(1));
  std::vector<std::string> names = Function::ListGlobalNames();
  CHECK(std::find(names.begin(), names.end(), "testing.echo") != names.end());
}

static void cpp_functions() {
  Function add = Function::FromTyped([](int64_t a, int64_t b) { return a + b; }, "cpp_test.add");
  Function::SetGlobal("cpp_test.add", add);
  Function again = Function::GetGlobalRequired("cpp_test.add");
  CHECK(again.same_as(add) && again(2, 3).cast<int64_t>() == 5);
  EXPECT_ERROR("KeyError", "cpp_test.add", Function::SetGlobal("cpp_test.add", add));
  Error e = EXPECT_ERROR("TypeError",
                         "Mismatched type on argument #1 when calling `cpp_test.add`: expected "
                         "int but got str",
                         add(1, "two"));
  CHECK(contains(e.backtrace(), "test_cpp_api.cc") && contains(e.backtrace(), "cpp_test.add"));
  EXPECT_ERROR("TypeError", "`cpp_test.add` expects 2 arguments but 3 were given", add(1, 2, 3));
  Function::RemoveGlobal("cpp_test.add");
  CHECK(!Function::GetGlobal("cpp_test.add"));

  // void results are None; references and strings as parameters.
  std::string seen;
  Function record = Function::FromTyped([&seen](const std::string& s) { seen = s; }, "record");
  CHECK(record("abc").is_none() && seen == "abc");
  Function count = Function::FromPacked([](rffi::PackedArgs args) -> Any {
    return args.size() > 0 ? args[0].cast<int64_t>() + args.size() : 0;
  });
  CHECK(count(10, "a", 2.0).cast<int>() == 13 && count().cast<int>() == 0);
  Function view = Function::FromTyped([](std::string_view s) { return s.size(); }, "view");
  CHECK(view("four").cast<size_t>() == 4);
}

static void errors_both_ways() {
  // rffi -> C++: a Rust function's error is an rffi::Error with its kind, message and frames.
  Function raise = Function::GetGlobalRequired("testing.raise_error");
  Error e = EXPECT_ERROR("ValueError", "boom", raise("ValueError", "boom"));
  CHECK(std::string(e.what()) == "ValueError: boom");
  CHECK(contains(e.backtrace(), "File \""));
  // No noise: no frame without a location, no duplicate of the raising closure, none of the
  // C++ API's own plumbing.
  CHECK(!contains(e.backtrace(), "line 0") && !contains(e.backtrace(), "{closure") &&
        !contains(e.backtrace(), "rffi/cpp/"));
  CHECK(contains(e.backtrace(), "in errors_both_ways"));  // this C++ caller's frame (built -g)
  // An error raised through the C API has no frame of the runtime's C entry point.
  RFFIErrorSetRaisedFromCStr("RuntimeError", "raised from C");
  Error from_c = Error::FromRaised();
  CHECK(from_c.message() == "raised from C" && !contains(from_c.backtrace(), "capi/"));
  std::string tb = e.TracebackMostRecentCallLast();
  CHECK(tb.rfind("Traceback (most recent call last):\n", 0) == 0 &&
        tb.substr(tb.size() - 16) == "ValueError: boom");

  // C++ -> rffi: standard exceptions map to kinds and get the function's frame.
  Function bad = Function::FromTyped(
      [](int64_t x) -> int64_t { throw std::invalid_argument("bad x " + std::to_string(x)); },
      "cpp_test.bad");
  Error v = EXPECT_ERROR("ValueError", "bad x 7", bad(7));
  CHECK(contains(v.backtrace(), "in cpp_test.bad") && contains(v.backtrace(), "test_cpp_api.cc"));
  Function oom = Function::FromTyped([]() -> int { throw std::bad_alloc(); }, "oom");
  EXPECT_ERROR("MemoryError", "", oom());
  Function weird = Function::FromTyped([]() -> int { throw 42; }, "weird");
  EXPECT_ERROR("RuntimeError", "unknown C++ exception", weird());

  // An rffi::Error thrown in C++, through a Rust function (testing.apply) and back to C++: the
  // same Error object, with the throw site, the C++ function and the Rust layer in its traceback.
  Error original("KeyError", "missing thing");
  Function thrower = Function::FromTyped([&original]() -> int { throw original; }, "cpp_test.thrower");
  Function apply = Function::GetGlobalRequired("testing.apply");
  Error back = EXPECT_ERROR("KeyError", "missing thing", apply(thrower));
  CHECK(back.object().same_as(original.object()));
  std::string bt = back.backtrace();
  CHECK(contains(bt, "in errors_both_ways") && contains(bt, "in cpp_test.thrower"));
  size_t site = bt.find("in errors_both_ways"), fn = bt.find("in cpp_test.thrower");
  CHECK(site < fn);  // most recent call first

  EXPECT_ERROR("AssertionError", "Check failed: (1 > 2) is false: one is 1",
               RFFI_CHECK(1 > 2) << "one is " << 1);
  EXPECT_ERROR("NotImplementedError", "later", RFFI_THROW(NotImplementedError) << "later");
}

static void containers() {
  Array a{1, "two", 3.5};
  CHECK(a.size() == 3 && a.get<int>(0) == 1 && a.get<std::string>(1) == "two");
  CHECK(a[2].cast<double>() == 3.5);
  EXPECT_ERROR("IndexError", "index 3 out of range for size 3", a[3]);
  EXPECT_ERROR("TypeError", "Array item 0: expected str but got int", a.get<std::string>(0));
  int n = 0;
  for (Any item : a) n += item.type_index() != kRFFINone;
  CHECK(n == 3 && Array().empty());
  std::vector<Any> copied(a.begin(), a.end());  // a standard input iterator
  CHECK(copied.size() == 3 && copied[1].cast<std::string>() == "two");
  std::vector<int64_t> v{4, 5, 6};
  Any as_array = v;
  CHECK(as_array.type_index() == kRFFIArray);
  CHECK(Function::GetGlobalRequired("testing.echo")(v).cast<std::vector<int64_t>>() == v);
  CHECK(!as_array.as<std::vector<std::string>>());
  Array nested{Array{1, 2}, Map{{"k", "v"}}};
  CHECK(nested.get<Array>(0).size() == 2 && nested.get<Map>(1).get<std::string>("k") == "v");

  Map m{{"a", 1}, {"b", 2}, {3, "three"}};
  CHECK(m.size() == 3 && m.at("a").cast<int>() == 1 && m.get<std::string>(3) == "three");
  CHECK(m.count("b") == 1 && m.count("zz") == 0 && Map().empty());
  EXPECT_ERROR("KeyError", "zz", m.at("zz"));
  auto items = m.items();
  CHECK(items.size() == 3 && items[0].first.cast<std::string>() == "a" &&
        items[2].second.cast<std::string>() == "three");
}

static void mutable_containers() {
  rffi::List l{1, "two"};
  CHECK(l.size() == 2 && l.get<int>(0) == 1 && l[-1].cast<std::string>() == "two");
  rffi::List alias = l;  // shared by reference
  alias.push_back(3.5);
  CHECK(l.size() == 3 && l.get<double>(2) == 3.5);
  l.insert(0, 0);
  l.Set(1, 10);
  CHECK(l.get<int>(0) == 0 && l.get<int>(1) == 10 && l.size() == 4);
  CHECK(l.pop().cast<double>() == 3.5 && l.size() == 3 && l.items().size() == 3);
  EXPECT_ERROR("IndexError", "", l[10]);
  CHECK(Function::GetGlobalRequired("testing.echo")(l).cast<rffi::List>().same_as(l));
  l.clear();
  CHECK(l.empty() && rffi::List().empty());

  rffi::Dict d{{"a", 1}};
  d.Set("b", 2);
  rffi::Dict alias_d = d;
  alias_d.Set("a", 5);
  CHECK(d.size() == 2 && d.get<int>("a") == 5 && d.count("b") == 1 && d.count("z") == 0);
  EXPECT_ERROR("KeyError", "", d.at("z"));
  CHECK(d.pop("b").cast<int>() == 2 && d.size() == 1);
  auto items = d.items();
  CHECK(items.size() == 1 && items[0].first.cast<std::string>() == "a");
  CHECK(!Any(d).as<Map>() && Any(d).as<rffi::Dict>());  // a Dict is not a Map
  d.clear();
  CHECK(d.empty() && rffi::Dict().empty());
}

static void tensors() {
  Tensor t = Tensor::Empty({2, 3}, kF32);
  CHECK(t.ndim() == 2 && t.shape()[0] == 2 && t.shape()[1] == 3 && t.numel() == 6);
  CHECK(t.strides()[0] == 3 && t.strides()[1] == 1 && t.IsContiguous());
  CHECK(t.dtype().code == kDLFloat && t.device().device_type == kDLCPU && t.data_ptr());
  CHECK(static_cast<float*>(t.data_ptr())[5] == 0.0f);  // zeroed
  Any shape = Function::GetGlobalRequired("testing.tensor_shape")(t);
  CHECK(shape.cast<rffi::ObjectRef>().type_key() == "ffi.Shape");
  Function ndim = Function::FromTyped([](const DLTensor* d) { return d->ndim; }, "ndim");
  CHECK(ndim(t).cast<int>() == 2);
  DLTensor borrowed = *t.dltensor();
  CHECK(ndim(&borrowed).cast<int>() == 2);  // a borrowed DLTensor* argument
  Function keep = Function::FromTyped([](Any x) { return x; }, "keep");
  CHECK(keep(t).cast<Tensor>().same_as(t));
  EXPECT_ERROR("TypeError", "a borrowed DLTensor* cannot be kept", keep(&borrowed));
  DLManagedTensorVersioned* exported = t.ToDLPack();
  CHECK(exported->dl_tensor.data == t->data);
  Tensor imported = Tensor::FromDLPack(exported);
  CHECK(imported.data_ptr() == t.data_ptr() && !imported.same_as(t));
  EXPECT_ERROR("ValueError", "", Tensor::Empty({-1}, kF32));
}

static void plugin(const char* path, const char* failing_copy) {
  // Loaded first, with its init block failing: the load fails with the block's error and every
  // global it had registered is undone, so the same names register cleanly below.
  setenv("RFFI_TEST_FAIL_INIT", "1", 1);
  EXPECT_ERROR("RuntimeError", "init refused on request", rffi::Module::LoadFromFile(failing_copy));
  unsetenv("RFFI_TEST_FAIL_INIT");
  CHECK(!Function::GetGlobal("cpp_plugin.greet"));

  rffi::Module mod = rffi::Module::LoadFromFile(path);
  Function scale = mod.GetFunctionRequired("scale");
  CHECK(scale(3, 2.5).cast<int>() == 7);
  EXPECT_ERROR("TypeError", "Mismatched type on argument #0 when calling `scale`", scale("3", 1.0));
  Error e = EXPECT_ERROR("IndexError", "index 5 is out of range",
                         mod.GetFunctionRequired("always_throws")(5));
  CHECK(contains(e.backtrace(), "plugin.cc") && contains(e.backtrace(), "in always_throws"));
  CHECK(!mod.GetFunction("nope"));
  EXPECT_ERROR("AttributeError", "nope", mod.GetFunctionRequired("nope"));

  CHECK(Function::GetGlobalRequired("cpp_plugin.greet")("rffi").cast<std::string>() ==
        "hello, rffi");
  Tensor iota = Function::GetGlobalRequired("cpp_plugin.iota")(4).cast<Tensor>();
  CHECK(iota.numel() == 4 && static_cast<float*>(iota.data_ptr())[3] == 3.0f);
  Function sum = mod.GetFunctionRequired("tensor_sum");
  CHECK(sum(iota).cast<double>() == 6.0);
  EXPECT_ERROR("ValueError", "tensor_sum expects float32",
               sum(Tensor::Empty({2}, DLDataType{kDLInt, 32, 1})));
  Function inc = Function::FromTyped([](int64_t x) { return x + 1; }, "inc");
  CHECK(Function::GetGlobalRequired("cpp_plugin.apply_twice")(inc, 5).cast<int>() == 7);
}

int main(int argc, char** argv) {
  values();
  ownership();
  typed_calls();
  cpp_functions();
  errors_both_ways();
  containers();
  mutable_containers();
  tensors();
  if (argc >= 3) {
    plugin(argv[1], argv[2]);
  } else {
    ++g_failed;
    std::fprintf(stderr, "usage: %s <cpp_plugin.so> <copy of it>\n", argv[0]);
  }
  return report("test_cpp_api");
}
