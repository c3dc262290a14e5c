/* Sessions from C: the `session.*` global functions of librffi.so drive workers (threads here)
 * with no session-specific C entry point. */
#include "rffi/c_api.h"
#include "check.h"

static RFFIAny float_arg(double x) {
  RFFIAny a;
  memset(&a, 0, sizeof(a));
  a.type_index = kRFFIFloat;
  a.v.v_float64 = x;
  return a;
}

static RFFIAny bool_arg(int b) {
  RFFIAny a;
  memset(&a, 0, sizeof(a));
  a.type_index = kRFFIBool;
  a.v.v_int64 = b;
  return a;
}

/* Calls global `name` with `n` arguments; returns the status, the result in `out`. */
static int call(const char* name, RFFIAny* args, int n, RFFIAny* out) {
  RFFIObjectHandle f = get_global(name);
  int rc;
  memset(out, 0, sizeof(*out));
  if (f == NULL) return -2;
  rc = RFFIFunctionCall(f, args, n, out);
  RFFIObjectDecRef(f);
  return rc;
}

static void release(RFFIAny* v) {
  if (v->type_index >= kRFFIStaticObjectBegin) RFFIObjectDecRef(v->v.v_obj);
}

/* session.Fetch(dref, rank, no timeout) -> [True, value]: the value (an int here). */
static int64_t fetch_int(RFFIObjectHandle dref, int64_t rank) {
  RFFIAny args[3], pair, item, idx[2];
  int64_t v = -1;
  args[0] = object_arg(dref);
  args[1] = int_any(rank);
  args[2] = float_arg(-1.0);
  CHECK(call("session.Fetch", args, 3, &pair) == 0);
  idx[0] = object_arg(pair.v.v_obj);
  idx[1] = int_any(1);
  CHECK(call("ffi.ArrayGetItem", idx, 2, &item) == 0);
  if (item.type_index == kRFFIInt) v = item.v.v_int64;
  release(&pair);
  return v;
}

int main(void) {
  RFFIAny args[4], sess, f, r, r2, done;

  args[0] = int_any(2);
  CHECK(call("session.ThreadSession", args, 1, &sess) == 0);

  args[0] = object_arg(sess.v.v_obj);
  args[1] = str_arg("testing.add_one");
  CHECK(call("session.GetGlobalFunc", args, 2, &f) == 0);

  /* A call returns at once with a DRef; chaining passes each worker's own value. */
  args[0] = object_arg(f.v.v_obj);
  args[1] = int_any(41);
  CHECK(call("session.Call", args, 2, &r) == 0);
  args[1] = object_arg(r.v.v_obj);
  CHECK(call("session.Call", args, 2, &r2) == 0);
  CHECK(fetch_int(r.v.v_obj, 1) == 42);
  CHECK(fetch_int(r2.v.v_obj, 0) == 43);

  /* A missing function: a KeyError naming it at the next sync; then the session goes on. */
  args[0] = object_arg(sess.v.v_obj);
  args[1] = str_arg("no.such.function");
  release(&f);
  CHECK(call("session.GetGlobalFunc", args, 2, &f) == 0);
  args[1] = float_arg(-1.0);
  args[2] = bool_arg(0);
  CHECK(call("session.Sync", args, 3, &done) == -1);
  expect_error("KeyError", "worker 0: get_global_func `no.such.function` failed");
  CHECK(call("session.Sync", args, 3, &done) == 0);
  CHECK(done.type_index == kRFFIBool && done.v.v_int64 == 1);

  /* A wrong argument is a TypeError naming the function. */
  args[0] = int_any(3);
  CHECK(call("session.Sync", args, 3, &done) == -1);
  expect_error("TypeError", "session.Sync");

  args[0] = object_arg(sess.v.v_obj);
  CHECK(call("session.Shutdown", args, 1, &done) == 0);
  CHECK(call("session.Shutdown", args, 1, &done) == 0);
  args[1] = str_arg("testing.nop");
  {
    RFFIAny g;
    CHECK(call("session.GetGlobalFunc", args, 2, &g) == -1);
    expect_error("RuntimeError", "shut down");
  }
  release(&f);
  release(&r);
  release(&r2);
  release(&sess);
  return finish("test_sessions");
}
