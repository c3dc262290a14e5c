/* Type attributes (RFFITypeRegisterAttr / RFFIGetTypeAttrColumn), and run-time types (what
 * Python's py_class registers) extending a C type that has a creator and a deleter, and a type
 * declared in Rust: the native part is built and destroyed by its own code, exactly once. */
#include <stddef.h>
#include <stdlib.h>
#include "rffi/c_api.h"
#include "check.h"

/* ---- a C type with its own creator and deleter ---- */

typedef struct {
  RFFIObject header;
  int64_t serial;
  double level;
  char* name; /* owned: freed by the deleter's strong part */
} Gauge;

static int g_destroyed = 0, g_freed = 0;
static int64_t g_next_serial = 100;

static void gauge_deleter(void* obj, int32_t flags) {
  Gauge* g = (Gauge*)obj;
  if (flags & kRFFIObjectDeleterFlagBitMaskStrong) {
    free(g->name);
    g->name = NULL;
    ++g_destroyed;
  }
  if (flags & kRFFIObjectDeleterFlagBitMaskWeak) {
    free(g);
    ++g_freed;
  }
}

static int32_t g_gauge = -1;

static int32_t gauge_create(RFFIObjectHandle* out) {
  Gauge* g = (Gauge*)calloc(1, sizeof(Gauge));
  g->header.combined_ref_count = 1 | ((uint64_t)1 << 32);
  g->header.type_index = g_gauge;
  g->header.deleter = gauge_deleter;
  g->serial = g_next_serial++;
  g->level = 0.25;
  g->name = (char*)malloc(8);
  strcpy(g->name, "gauge");
  *out = g;
  return 0;
}

static RFFIFieldInfo field(const char* name, int64_t offset, int32_t static_index, int64_t flags) {
  RFFIFieldInfo f;
  memset(&f, 0, sizeof(f));
  f.name = ba_of(name);
  f.flags = flags;
  f.size = 8;
  f.alignment = 8;
  f.offset = offset;
  f.field_static_type_index = static_index;
  return f;
}

static void register_gauge(void) {
  RFFIByteArray key = ba_of("c_ext.Gauge");
  RFFIFieldInfo f;
  RFFITypeMetadata meta;
  g_gauge = RFFITypeGetOrAllocIndex(&key, -1, -1, 0, 1, -1);
  CHECK(g_gauge >= kRFFIDynObjectBegin);
  f = field("serial", offsetof(Gauge, serial), kRFFIInt, 0);
  CHECK(RFFITypeRegisterField(g_gauge, &f) == 0);
  f = field("level", offsetof(Gauge, level), kRFFIFloat, kRFFIFieldFlagBitMaskWritable);
  CHECK(RFFITypeRegisterField(g_gauge, &f) == 0);
  memset(&meta, 0, sizeof(meta));
  meta.doc = ba_of("A gauge made by its C creator.");
  meta.creator = gauge_create;
  meta.total_size = sizeof(Gauge);
  CHECK(RFFITypeRegisterMetadata(g_gauge, &meta) == 0);
}

/* Registers a run-time type under `parent` with the given fields JSON; returns its index. */
static int32_t register_value_type(const char* key, int32_t parent, const char* fields) {
  RFFIObjectHandle reg = get_global("ffi.TypeRegisterValueType");
  RFFIAny args[3], r;
  args[0] = str_arg(key);
  args[1] = int_any(parent);
  args[2] = str_arg(fields);
  memset(&r, 0, sizeof(r));
  CHECK(RFFIFunctionCall(reg, args, 3, &r) == 0 && r.type_index == kRFFIInt);
  RFFIObjectDecRef(reg);
  return (int32_t)r.v.v_int64;
}

static void test_extend_c_type(void) {
  RFFIObjectHandle init = get_global("ffi.ObjectCreateInit"), obj;
  RFFIByteArray serial = ba_of("serial"), level = ba_of("level"), note = ba_of("note");
  RFFIAny args[8], r, v;
  int32_t ti;
  register_gauge();
  ti = register_value_type("c_ext.NamedGauge", g_gauge,
                           "[{\"name\":\"note\",\"type_schema\":\"{\\\"type\\\":\\\"ffi.String\\\"}\"}]");
  CHECK(ti > g_gauge);
  CHECK(RFFIGetTypeInfo(ti)->metadata->total_size == (int32_t)(sizeof(Gauge) + 8 + 16));

  /* Made with the native field `level` and the run-time field `note`. */
  args[0] = int_any(ti);
  args[1] = str_arg("NamedGauge()");
  args[2] = str_arg("level");
  args[3] = int_any(0);
  args[4] = int_any(3); /* an int for a float field: widened */
  args[5] = str_arg("note");
  args[6] = int_any(1);
  args[7] = str_arg("a note longer than a small string");
  memset(&r, 0, sizeof(r));
  CHECK(RFFIFunctionCall(init, args, 8, &r) == 0 && r.type_index == ti);
  obj = r.v.v_obj;
  CHECK(RFFIObjectIsInstance(obj, g_gauge) == 1);
  /* The C code sees its own struct, made by its creator. */
  CHECK(((Gauge*)obj)->serial == 100 && strcmp(((Gauge*)obj)->name, "gauge") == 0);
  CHECK(((Gauge*)obj)->level == 3.0);
  CHECK(g_destroyed == 0 && g_freed == 1); /* the creator's block was freed, not destroyed */
  memset(&v, 0, sizeof(v));
  CHECK(RFFIObjectGetField(obj, &serial, &v) == 0 && v.v.v_int64 == 100);
  CHECK(RFFIObjectGetField(obj, &note, &v) == 0 && v.type_index == kRFFIStr);
  RFFIObjectDecRef(v.v.v_obj);
  v = int_any(5);
  CHECK(RFFIObjectSetField(obj, &level, &v) == 0 && ((Gauge*)obj)->level == 5.0);
  CHECK(RFFIObjectSetField(obj, &note, &v) == -1);
  expect_error("TypeError", "expected str, got int");
  CHECK(RFFIObjectDecRef(obj) == 0);
  CHECK(g_destroyed == 1 && g_freed == 1); /* destroyed by its deleter; our block freed by us */

  /* Generic creation goes through the creator too: every native field has a value. */
  CHECK(RFFIObjectCreate(ti, &obj) == 0);
  CHECK(((Gauge*)obj)->serial == 101);
  CHECK(RFFIObjectDecRef(obj) == 0);
  CHECK(g_destroyed == 2 && g_freed == 2);
  RFFIObjectDecRef(init);
}

/* A run-time type extending testing.TestPoint, declared in Rust, used from C. */
static void test_extend_rust_type(void) {
  RFFIObjectHandle init = get_global("ffi.ObjectCreateInit"), obj;
  RFFIByteArray point_key = ba_of("testing.TestPoint"), sum = ba_of("sum"), tag = ba_of("tag");
  RFFIAny args[8], r, v;
  int32_t point, ti;
  CHECK(RFFITypeKeyToIndex(&point_key, &point) == 0);
  ti = register_value_type("c_ext.TaggedPoint", point, "[{\"name\":\"tag\"}]");
  args[0] = int_any(ti);
  args[1] = str_arg("TaggedPoint()");
  args[2] = str_arg("x");
  args[3] = int_any(0);
  args[4] = int_any(4);
  args[5] = str_arg("tag");
  args[6] = int_any(1);
  args[7] = int_any(9);
  memset(&r, 0, sizeof(r));
  CHECK(RFFIFunctionCall(init, args, 8, &r) == 0 && r.type_index == ti);
  obj = r.v.v_obj;
  memset(&r, 0, sizeof(r));
  CHECK(RFFIObjectCallMethod(obj, &sum, NULL, 0, &r) == 0 && r.v.v_int64 == 4); /* x + y(0) */
  memset(&v, 0, sizeof(v));
  CHECK(RFFIObjectGetField(obj, &tag, &v) == 0 && v.v.v_int64 == 9);
  /* The Rust field's own setter refuses a float for an int, naming the field. */
  {
    RFFIByteArray y = ba_of("y");
    memset(&v, 0, sizeof(v));
    v.type_index = kRFFIFloat;
    v.v.v_float64 = 1.5;
    CHECK(RFFIObjectSetField(obj, &y, &v) == -1);
    expect_error("TypeError", "cannot set field `y` of `c_ext.TaggedPoint`: expected int, got float");
  }
  CHECK(RFFIObjectDecRef(obj) == 0);
  /* Without a value for `x` (no default) the Rust constructor cannot run. */
  CHECK(RFFIObjectCreate(ti, &obj) == -1);
  expect_error("TypeError", "needs a value for field `x` of `testing.TestPoint`");
  RFFIObjectDecRef(init);
}

static RFFIAny entry(const RFFITypeAttrColumn* c, int32_t type_index) {
  RFFIAny none;
  memset(&none, 0, sizeof(none));
  if (c == NULL || type_index < c->begin_index || type_index >= c->begin_index + c->size) {
    return none;
  }
  return c->data[type_index - c->begin_index];
}

/* Names and values no registration takes: each is an error naming the entry point and the
 * argument, nothing is registered, and the column lookup finds nothing (raising nothing). */
static void test_type_attr_bad_input(const RFFIAny* ok) {
  static const char nul_name[] = {'c', '\0', 'x'};
  static const char not_utf8[] = {'c', (char)0xff};
  RFFIByteArray name = ba_of("c_ext.__weight__"), empty = ba_of("");
  RFFIByteArray nul = {nul_name, 3}, bad = {not_utf8, 2}, null_data = {NULL, 5};
  RFFIAny v;
  int32_t i;
  const int32_t indices[] = {-1, -7, INT32_MIN, INT32_MAX, 1 << 20};
  for (i = 0; i < (int32_t)(sizeof(indices) / sizeof(indices[0])); ++i) {
    char msg[64];
    snprintf(msg, sizeof(msg), "unknown type index %d", (int)indices[i]);
    CHECK(RFFITypeRegisterAttr(indices[i], &name, ok) == -1);
    expect_error("KeyError", msg);
  }
  CHECK(RFFITypeRegisterAttr(g_gauge, &empty, ok) == -1);
  expect_error("ValueError", "a type attribute name must not be empty");
  CHECK(RFFITypeRegisterAttr(g_gauge, &nul, ok) == -1);
  expect_error("ValueError", "NUL");
  CHECK(RFFITypeRegisterAttr(g_gauge, &bad, ok) == -1);
  expect_error("ValueError", "RFFITypeRegisterAttr: `attr_name`");
  CHECK(RFFITypeRegisterAttr(g_gauge, &null_data, ok) == -1);
  expect_error("ValueError", "RFFITypeRegisterAttr: `attr_name`");
  /* Values that are not values: a NULL C string, a NULL Array, an index no type has. */
  memset(&v, 0, sizeof(v));
  v.type_index = kRFFIRawStr;
  CHECK(RFFITypeRegisterAttr(g_gauge, &name, &v) == -1);
  expect_error("ValueError", "NULL");
  v.type_index = kRFFIArray;
  CHECK(RFFITypeRegisterAttr(g_gauge, &name, &v) == -1);
  expect_error("ValueError", "NULL");
  v.type_index = 5000;
  v.v.v_int64 = 0x10;
  CHECK(RFFITypeRegisterAttr(g_gauge, &name, &v) == -1);
  expect_error("ValueError", "unknown type index 5000");
  /* The lookups of names no column has raise nothing. */
  CHECK(RFFIGetTypeAttrColumn(&empty) == NULL);
  CHECK(RFFIGetTypeAttrColumn(&nul) == NULL);
  CHECK(RFFIGetTypeAttrColumn(&bad) == NULL);
  CHECK(RFFIGetTypeAttrColumn(&null_data) == NULL);
  {
    RFFIObjectHandle none = (RFFIObjectHandle)1;
    RFFIErrorMoveFromRaised(&none);
    CHECK(none == NULL);
  }
}

static void test_type_attrs(void) {
  RFFIByteArray name = ba_of("c_ext.__weight__"), other = ba_of("c_ext.__never__");
  RFFIByteArray point_key = ba_of("testing.TestPoint");
  const RFFITypeAttrColumn* col;
  RFFIAny v, none;
  int32_t point;
  memset(&none, 0, sizeof(none));
  CHECK(RFFITypeKeyToIndex(&point_key, &point) == 0);
  CHECK(RFFIGetTypeAttrColumn(&other) == NULL);
  v = int_any(7);
  CHECK(RFFITypeRegisterAttr(g_gauge, &name, &v) == 0);
  col = RFFIGetTypeAttrColumn(&name);
  CHECK(col != NULL && entry(col, g_gauge).v.v_int64 == 7);
  CHECK(entry(col, point).type_index == kRFFINone);
  /* Another type grows the column; the column pointer stays the same. */
  v = str_arg("a string attribute, copied");
  CHECK(RFFITypeRegisterAttr(point, &name, &v) == 0);
  CHECK(RFFIGetTypeAttrColumn(&name) == col);
  CHECK(entry(col, g_gauge).v.v_int64 == 7 && entry(col, point).type_index == kRFFIStr);
  /* Replaced by a later call; not inherited by derived types. */
  v = int_any(8);
  CHECK(RFFITypeRegisterAttr(g_gauge, &name, &v) == 0);
  CHECK(entry(col, g_gauge).v.v_int64 == 8);
  {
    RFFIByteArray derived = ba_of("c_ext.NamedGauge");
    int32_t d;
    CHECK(RFFITypeKeyToIndex(&derived, &d) == 0);
    CHECK(entry(col, d).type_index == kRFFINone);
  }
  /* The global functions read the same table. */
  {
    RFFIObjectHandle get = get_global("ffi.TypeGetAttr");
    RFFIAny args[2], r;
    args[0] = int_any(g_gauge);
    args[1] = str_arg("c_ext.__weight__");
    memset(&r, 0, sizeof(r));
    CHECK(RFFIFunctionCall(get, args, 2, &r) == 0 && r.v.v_int64 == 8);
    RFFIObjectDecRef(get);
  }
  /* Index 0 (None) makes sure a column exists without an entry for any type. */
  CHECK(RFFITypeRegisterAttr(kRFFINone, &other, &none) == 0);
  col = RFFIGetTypeAttrColumn(&other);
  CHECK(col != NULL && entry(col, g_gauge).type_index == kRFFINone);
  /* Bad input. */
  CHECK(RFFITypeRegisterAttr(99999, &name, &v) == -1);
  expect_error("KeyError", "unknown type index 99999");
  CHECK(RFFITypeRegisterAttr(g_gauge, &name, NULL) == -1);
  expect_error("ValueError", "`attr_value` is NULL");
  CHECK(RFFITypeRegisterAttr(g_gauge, NULL, &v) == -1);
  expect_error("ValueError", "`attr_name` is NULL");
  CHECK(RFFIGetTypeAttrColumn(NULL) == NULL);
  test_type_attr_bad_input(&v);
}

int main(void) {
  test_extend_c_type();
  test_extend_rust_type();
  test_type_attrs();
  return finish("test_type_ext");
}
