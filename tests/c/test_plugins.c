/* A C host (linked to librffi.so) loading real plugins through the C API: the example Rust
 * plugin, the example C plugin, a C plugin that links librffi.so itself, and bad libraries.
 *
 * usage: test_plugins <rust plugin> <c plugin> <linked c plugin> <bad-version plugin> <not a library> */
#include <stdint.h>
#include "rffi/c_api.h"
#include "check.h"

static RFFIObjectHandle load(const char* path) {
  RFFIByteArray p = ba_of(path);
  RFFIObjectHandle m = NULL;
  if (RFFIModuleLoadFromFile(&p, &m) != 0) return NULL;
  return m;
}

static int g_callback_calls = 0;

/* Host callback handed to the plugin: doubles its argument. */
static int twice(void* self, const RFFIAny* args, int32_t n, RFFIAny* result) {
  (void)self;
  ++g_callback_calls;
  if (n != 1 || args[0].type_index != kRFFIInt) return -1;
  result->type_index = kRFFIInt;
  result->v.v_int64 = 2 * args[0].v.v_int64;
  return 0;
}

static void test_rust_plugin(const char* path) {
  RFFIObjectHandle m = load(path), again, add, div, map, make_array, cb, arr, names, err;
  RFFIAny args[3], result;
  RFFIByteArray bt;
  CHECK(m != NULL);
  /* Loading again gives the same module and registers nothing twice. */
  again = load(path);
  CHECK(again == m);
  RFFIObjectDecRef(again);

  add = get_global("rust_plugin.add");
  CHECK(add != NULL);
  args[0] = int_any(40);
  args[1] = int_any(2);
  memset(&result, 0, sizeof(result));
  CHECK(RFFIFunctionCall(add, args, 2, &result) == 0 && result.v.v_int64 == 42);

  /* An error raised in the plugin reaches this host with its traceback. */
  div = get_global("rust_plugin.checked_div");
  args[1] = int_any(0);
  CHECK(RFFIFunctionCall(div, args, 2, &result) == -1);
  err = take_error("ValueError", "cannot divide 40 by 0");
  CHECK(RFFIErrorGetBacktrace(err, &bt) == 0);
  CHECK(ba_contains(bt, "examples/rust-plugin/src/lib.rs"));
  CHECK(ba_contains(bt, "in rust_plugin.checked_div"));
  RFFIObjectDecRef(err);

  /* An object of a type the plugin declared: fields and methods by name from C. */
  {
    RFFIObjectHandle make = get_global("rust_plugin.make_counter"), counter;
    RFFIByteArray count = ba_of("count"), name = ba_of("name"), inc = ba_of("increment");
    RFFIAny v;
    int32_t index = -1;
    RFFIByteArray key = ba_of("rust_plugin.Counter");
    const RFFITypeInfo* info;
    memset(args, 0, sizeof(args));
    args[0].type_index = kRFFIRawStr;
    args[0].v.v_c_str = "clicks";
    args[1] = int_any(3);
    memset(&result, 0, sizeof(result));
    CHECK(RFFIFunctionCall(make, args, 2, &result) == 0);
    counter = result.v.v_obj;
    CHECK(RFFITypeKeyToIndex(&key, &index) == 0 && result.type_index == index);
    info = RFFIGetTypeInfo(index);
    CHECK(info != NULL && info->num_fields == 2 && info->num_methods == 1);
    CHECK(info != NULL && ba_equals(info->fields[1].name, "count"));
    CHECK(info != NULL && ba_equals(info->methods[0].doc, "Adds `by` to the count and returns the new count."));
    memset(&v, 0, sizeof(v));
    CHECK(RFFIObjectGetField(counter, &count, &v) == 0 && v.type_index == kRFFIInt && v.v.v_int64 == 3);
    v = int_any(40);
    CHECK(RFFIObjectSetField(counter, &count, &v) == 0);
    args[0] = int_any(2);
    memset(&result, 0, sizeof(result));
    CHECK(RFFIObjectCallMethod(counter, &inc, args, 1, &result) == 0 && result.v.v_int64 == 42);
    CHECK(RFFIObjectSetField(counter, &name, &v) == -1);
    expect_error("AttributeError", "frozen");
    CHECK(RFFIObjectIsInstance(counter, index) == 1 && RFFIObjectIsInstance(counter, kRFFIObject) == 1);
    CHECK(RFFIObjectIsInstance(counter, kRFFIArray) == 0);
    RFFIObjectDecRef(counter);
    RFFIObjectDecRef(make);
  }

  /* The plugin calls a callback of this host. */
  map = get_global("rust_plugin.map");
  make_array = get_global("ffi.Array");
  CHECK(RFFIFunctionCreate(NULL, twice, NULL, &cb) == 0);
  args[0] = int_any(1);
  args[1] = int_any(2);
  args[2] = int_any(3);
  CHECK(RFFIFunctionCall(make_array, args, 3, &result) == 0 && result.type_index == kRFFIArray);
  arr = result.v.v_obj;
  memset(args, 0, sizeof(args));
  args[0].type_index = kRFFIFunction;
  args[0].v.v_obj = (RFFIObject*)cb;
  args[1].type_index = kRFFIArray;
  args[1].v.v_obj = (RFFIObject*)arr;
  memset(&result, 0, sizeof(result));
  CHECK(RFFIFunctionCall(map, args, 2, &result) == 0 && result.type_index == kRFFIArray);
  CHECK(g_callback_calls == 3);
  if (result.type_index == kRFFIArray) {
    RFFISeqCell* cell = (RFFISeqCell*)((char*)result.v.v_obj + sizeof(RFFIObject));
    CHECK(cell->size == 3 && cell->data[2].v.v_int64 == 6);
    RFFIObjectDecRef(result.v.v_obj);
  }

  CHECK(RFFIModuleListFunctions(m, &names) == 0);
  {
    RFFISeqCell* cell = (RFFISeqCell*)((char*)names + sizeof(RFFIObject));
    CHECK(cell->size >= 5);
  }
  RFFIObjectDecRef(names);
  RFFIObjectDecRef(arr);
  RFFIObjectDecRef(cb);
  RFFIObjectDecRef(make_array);
  RFFIObjectDecRef(map);
  RFFIObjectDecRef(div);
  RFFIObjectDecRef(add);
  RFFIObjectDecRef(m);
}

static void test_c_plugins(const char* plugin, const char* linked) {
  RFFIObjectHandle m = load(plugin), l = load(linked), f = NULL;
  RFFIByteArray square = ba_of("square"), missing = ba_of("no_such_function");
  RFFIAny args[2], result;
  CHECK(m != NULL && l != NULL);
  f = get_global("c_plugin.mul");
  args[0] = int_any(6);
  args[1] = int_any(7);
  memset(&result, 0, sizeof(result));
  CHECK(f && RFFIFunctionCall(f, args, 2, &result) == 0 && result.v.v_int64 == 42);
  RFFIObjectDecRef(f);
  f = get_global("c_plugin.fail");
  CHECK(f && RFFIFunctionCall(f, args, 0, &result) == -1);
  expect_error("RuntimeError", "c_plugin.fail was called");
  RFFIObjectDecRef(f);
  /* Exported __rffi_<name> symbols are found on demand. */
  CHECK(RFFIModuleGetFunction(m, &square, &f) == 0 && f != NULL);
  CHECK(RFFIFunctionCall(f, args, 1, &result) == 0 && result.v.v_int64 == 36);
  RFFIObjectDecRef(f);
  CHECK(RFFIModuleGetFunction(m, &missing, &f) == 0 && f == NULL);
  /* The plugin that links librffi.so registered through the same runtime. */
  f = get_global("linked.triple");
  CHECK(f && RFFIFunctionCall(f, args, 1, &result) == 0 && result.v.v_int64 == 18);
  RFFIObjectDecRef(f);
  RFFIObjectDecRef(m);
  RFFIObjectDecRef(l);
}

/* The loader's symbols (rffi_plugin_version, rffi_plugin_init, rffi_plugin_host_api) are in a name
 * space get_function cannot reach: every spelling of them is "not found", nothing is called. The
 * example C plugin exports all three. */
static void test_loader_symbols_unreachable(const char* plugin) {
  static const char* const names[] = {
      "_version", "_init", "_host_api", "version", "init", "host_api",
      "rffi_plugin_version", "rffi_plugin_init", "rffi_plugin_host_api", "plugin_version",
      "plugin_init", "_plugin_init", "_rffi_plugin_init", "__rffi__init", "", "_", "__",
  };
  static const char with_nul[] = {'s', 'q', 'u', 'a', 'r', 'e', '\0', 'x'};
  RFFIObjectHandle m = load(plugin), f;
  RFFIByteArray name;
  size_t i;
  CHECK(m != NULL);
  for (i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
    name = ba_of(names[i]);
    f = (RFFIObjectHandle)1;
    CHECK(RFFIModuleGetFunction(m, &name, &f) == 0 && f == NULL);
    if (f != NULL) fprintf(stderr, "  `%s` resolved to a function\n", names[i]);
  }
  /* A NUL inside the name never truncates it into another symbol's name. */
  name.data = with_nul;
  name.size = sizeof(with_nul);
  f = (RFFIObjectHandle)1;
  CHECK(RFFIModuleGetFunction(m, &name, &f) == 0 && f == NULL);
  RFFIObjectDecRef(m);
}

static void test_bad_libraries(const char* bad_version, const char* not_a_library) {
  RFFIObjectHandle m;
  RFFIVersion v;
  char expected[64];
  RFFIGetVersion(&v);
  snprintf(expected, sizeof(expected), "provides ABI %u.%u.%u", v.major, v.minor, v.patch);
  m = load(bad_version);
  CHECK(m == NULL);
  expect_error("RuntimeError", "built for rffi ABI 99.0.0");
  CHECK(load(bad_version) == NULL);
  expect_error("RuntimeError", expected);
  CHECK(get_global("bad_version.never") == NULL);
  CHECK(load(not_a_library) == NULL);
  expect_error("ValueError", "cannot load module");
  CHECK(load("/no/such/dir/plugin.so") == NULL);
  expect_error("ValueError", "/no/such/dir/plugin.so");
  {
    RFFIObjectHandle out = NULL;
    CHECK(RFFIModuleLoadFromFile(NULL, &out) == -1);
    expect_error("ValueError", "`path` is NULL");
    CHECK(RFFIModuleGetFunction(NULL, NULL, &out) == -1);
    expect_error("ValueError", "`module` is NULL");
  }
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s rust_plugin c_plugin linked_plugin bad_version not_a_library\n",
            argv[0]);
    return 2;
  }
  test_rust_plugin(argv[1]);
  test_c_plugins(argv[2], argv[3]);
  test_loader_symbols_unreachable(argv[2]);
  test_bad_libraries(argv[4], argv[5]);
  return finish("test_plugins");
}
