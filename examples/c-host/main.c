/* A C program using the rffi runtime: register a C function by name, call it and the runtime's
 * Rust functions through the function registry, handle an error with its traceback, and load plugins (a
 * Rust one and a C one, given as arguments) whose functions join the same function registry.
 *
 * usage: c-host [rust_plugin.so c_plugin.so] */
#include <stdio.h>
#include <string.h>
#include "rffi/c_api.h"

static RFFIByteArray name_of(const char* s) {
  RFFIByteArray ba;
  ba.data = s;
  ba.size = strlen(s);
  return ba;
}

/* demo.scale(x) = x * factor, where factor is the function's context. */
static int scale(void* self, const RFFIAny* args, int32_t n, RFFIAny* result) {
  if (n != 1 || args[0].type_index != kRFFIInt) {
    RFFIErrorSetRaisedFromCStr("TypeError", "demo.scale expects one int");
    return -1;
  }
  result->type_index = kRFFIInt;
  result->v.v_int64 = args[0].v.v_int64 * *(const int64_t*)self;
  return 0;
}

static RFFIObjectHandle global(const char* name) {
  RFFIByteArray ba = name_of(name);
  RFFIObjectHandle f = NULL;
  if (RFFIFunctionGetGlobal(&ba, &f) != 0 || f == NULL) {
    fprintf(stderr, "missing global %s\n", name);
  }
  return f;
}

static void print_error(void) {
  RFFIObjectHandle err = NULL;
  RFFIByteArray kind, msg, bt;
  RFFIErrorMoveFromRaised(&err);
  RFFIErrorGetKind(err, &kind);
  RFFIErrorGetMessage(err, &msg);
  RFFIErrorGetBacktrace(err, &bt);
  printf("caught %.*s: %.*s\ntraceback (most recent call first):\n%.*s", (int)kind.size, kind.data,
         (int)msg.size, msg.data, (int)bt.size, bt.data);
  RFFIObjectDecRef(err);
}

/* Calls global `name` with int arguments and prints the int result or the error. */
static void call_ints(const char* name, int64_t a, int64_t b, int32_t n) {
  RFFIObjectHandle f = global(name);
  RFFIAny args[2], result;
  if (!f) return;
  memset(args, 0, sizeof(args));
  memset(&result, 0, sizeof(result));
  args[0].type_index = kRFFIInt;
  args[0].v.v_int64 = a;
  args[1].type_index = kRFFIInt;
  args[1].v.v_int64 = b;
  if (RFFIFunctionCall(f, args, n, &result) == 0) {
    printf("%s(%lld%s%lld) = %lld\n", name, (long long)a, n > 1 ? ", " : "",
           n > 1 ? (long long)b : 0LL, (long long)result.v.v_int64);
  } else {
    print_error();
  }
  RFFIObjectDecRef(f);
}

static void load_plugins(const char* rust_plugin, const char* c_plugin) {
  RFFIObjectHandle rust_mod = NULL, c_mod = NULL, square = NULL;
  RFFIByteArray p1 = name_of(rust_plugin), p2 = name_of(c_plugin), sq = name_of("square");
  RFFIAny arg, result;
  if (RFFIModuleLoadFromFile(&p1, &rust_mod) != 0 || RFFIModuleLoadFromFile(&p2, &c_mod) != 0) {
    print_error();
    return;
  }
  printf("loaded %s and %s\n", rust_plugin, c_plugin);
  call_ints("rust_plugin.add", 40, 2, 2);
  call_ints("c_plugin.mul", 6, 7, 2);
  call_ints("rust_plugin.checked_div", 1, 0, 2); /* an error raised in the Rust plugin */
  /* A function the C plugin exports as a symbol, found through its module. */
  RFFIModuleGetFunction(c_mod, &sq, &square);
  memset(&arg, 0, sizeof(arg));
  memset(&result, 0, sizeof(result));
  arg.type_index = kRFFIInt;
  arg.v.v_int64 = 12;
  if (square && RFFIFunctionCall(square, &arg, 1, &result) == 0) {
    printf("c_plugin module function square(12) = %lld\n", (long long)result.v.v_int64);
  }
  RFFIObjectDecRef(square);
  RFFIObjectDecRef(c_mod);
  RFFIObjectDecRef(rust_mod);
}

int main(int argc, char** argv) {
  static const int64_t factor = 3;
  RFFIVersion v;
  RFFIObjectHandle f = NULL, apply, add_one, raise;
  RFFIByteArray name = name_of("demo.scale");
  RFFIAny args[2], result;

  RFFIGetVersion(&v);
  printf("rffi ABI %u.%u.%u\n", v.major, v.minor, v.patch);

  RFFIFunctionCreate((void*)&factor, scale, NULL, &f);
  RFFIFunctionSetGlobal(&name, f, 0);

  /* Rust's testing.apply calls our C function back: apply(demo.scale, 14) */
  apply = global("testing.apply");
  memset(args, 0, sizeof(args));
  args[0].type_index = kRFFIFunction;
  args[0].v.v_obj = (RFFIObject*)f;
  args[1].type_index = kRFFIInt;
  args[1].v.v_int64 = 14;
  memset(&result, 0, sizeof(result));
  if (RFFIFunctionCall(apply, args, 2, &result) == 0) {
    printf("testing.apply(demo.scale, 14) = %lld\n", (long long)result.v.v_int64);
  }

  add_one = global("testing.add_one");
  if (RFFIFunctionCall(add_one, &args[1], 1, &result) == 0) {
    printf("testing.add_one(14) = %lld\n", (long long)result.v.v_int64);
  }

  /* An error raised in Rust, caught in C. */
  raise = global("testing.raise_error");
  memset(args, 0, sizeof(args));
  args[0].type_index = kRFFIRawStr;
  args[0].v.v_c_str = "ValueError";
  args[1].type_index = kRFFIRawStr;
  args[1].v.v_c_str = "something went wrong";
  if (RFFIFunctionCall(raise, args, 2, &result) != 0) print_error();

  RFFIObjectDecRef(raise);
  RFFIObjectDecRef(add_one);
  RFFIObjectDecRef(apply);
  RFFIObjectDecRef(f);

  if (argc == 3) load_plugins(argv[1], argv[2]);
  return 0;
}
