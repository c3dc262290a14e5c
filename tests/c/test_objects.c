/* Object types from C: a type registered with field and method tables, made by the runtime,
 * read and written by name with type checks, extended by a derived type; and a type declared in
 * Rust (testing.TestPoint) used from C. */
#include <stddef.h>
#include <stdlib.h>
#include "rffi/c_api.h"
#include "check.h"

typedef struct {
  RFFIObject header;
  int64_t id;
  double mass;
  RFFIAny tag;
  RFFIObjectHandle owner; /* an ffi.Array or NULL */
} Particle;

typedef struct {
  Particle base;
  int32_t charge;
} Charged;

static RFFIFieldInfo field(const char* name, const char* doc, int64_t offset, int64_t size,
                           int32_t static_index, int64_t flags) {
  RFFIFieldInfo f;
  memset(&f, 0, sizeof(f));
  f.name = ba_of(name);
  f.doc = ba_of(doc);
  f.flags = flags;
  f.size = size;
  f.alignment = size < 8 ? size : 8;
  f.offset = offset;
  f.field_static_type_index = static_index;
  return f;
}

/* A computed, read-only field: twice the mass. */
static int32_t double_mass(void* field, RFFIAny* result) {
  result->type_index = kRFFIFloat;
  result->v.v_float64 = 2 * *(double*)field;
  return 0;
}

/* Instance method `scale(self, k)`: multiplies the mass, returns the new mass. */
static int32_t scale(void* self, const RFFIAny* args, int32_t n, RFFIAny* result) {
  Particle* p;
  (void)self;
  if (n != 2 || args[1].type_index != kRFFIFloat) {
    RFFIErrorSetRaisedFromCStr("TypeError", "scale(self, k: float)");
    return -1;
  }
  p = (Particle*)args[0].v.v_obj;
  p->mass *= args[1].v.v_float64;
  result->type_index = kRFFIFloat;
  result->v.v_float64 = p->mass;
  return 0;
}

static int32_t g_particle = -1, g_charged = -1;

static void register_types(void) {
  RFFIByteArray key = ba_of("c_test.Particle"), key2 = ba_of("c_test.Charged");
  RFFIFieldInfo f;
  RFFIMethodInfo m;
  RFFITypeMetadata meta;
  RFFIObjectHandle fn = NULL;
  CHECK(RFFITypeGetOrAllocIndex(&key, -1, -1, 0, 1, -2) == -2); /* query only: absent */
  g_particle = RFFITypeGetOrAllocIndex(&key, -1, -1, 0, 1, -1);
  CHECK(g_particle >= kRFFIDynObjectBegin);
  CHECK(RFFITypeGetOrAllocIndex(&key, -1, -1, 0, 1, -2) == g_particle);

  f = field("id", "The id.", offsetof(Particle, id), 8, kRFFIInt, kRFFIFieldFlagBitMaskWritable);
  CHECK(RFFITypeRegisterField(g_particle, &f) == 0);
  f = field("mass", "The mass.", offsetof(Particle, mass), 8, kRFFIFloat,
            kRFFIFieldFlagBitMaskWritable | kRFFIFieldFlagBitMaskHasDefault);
  f.default_value_or_factory.type_index = kRFFIFloat;
  f.default_value_or_factory.v.v_float64 = 1.0;
  CHECK(RFFITypeRegisterField(g_particle, &f) == 0);
  f = field("tag", "Anything.", offsetof(Particle, tag), 16, kRFFIAny, kRFFIFieldFlagBitMaskWritable);
  CHECK(RFFITypeRegisterField(g_particle, &f) == 0);
  f = field("owner", "", offsetof(Particle, owner), 8, kRFFIArray, kRFFIFieldFlagBitMaskWritable);
  CHECK(RFFITypeRegisterField(g_particle, &f) == 0);
  f = field("double_mass", "", offsetof(Particle, mass), 8, kRFFIFloat, 0);
  f.getter = double_mass;
  CHECK(RFFITypeRegisterField(g_particle, &f) == 0);
  /* A duplicate name, a size without accessor, an unknown type: refused. */
  CHECK(RFFITypeRegisterField(g_particle, &f) == -1);
  expect_error("ValueError", "already registered");
  f = field("odd", "", 24, 3, kRFFIInt, 0);
  CHECK(RFFITypeRegisterField(g_particle, &f) == -1);
  expect_error("ValueError", "no built-in accessor");
  CHECK(RFFITypeRegisterField(99999, &f) == -1);
  expect_error("KeyError", "99999");
  CHECK(RFFITypeRegisterField(g_particle, NULL) == -1);
  expect_error("ValueError", "`info` is NULL");

  CHECK(RFFIFunctionCreate(NULL, scale, NULL, &fn) == 0);
  memset(&m, 0, sizeof(m));
  m.name = ba_of("scale");
  m.doc = ba_of("Multiplies the mass by k.");
  m.method.type_index = kRFFIFunction;
  m.method.v.v_obj = (RFFIObject*)fn;
  CHECK(RFFITypeRegisterMethod(g_particle, &m) == 0);
  RFFIObjectDecRef(fn); /* the function registry keeps its own reference */
  m.name = ba_of("not_a_function");
  m.method = int_any(1);
  CHECK(RFFITypeRegisterMethod(g_particle, &m) == -1);
  expect_error("TypeError", "must be a Function");

  memset(&meta, 0, sizeof(meta));
  meta.doc = ba_of("A particle, registered from C.");
  meta.total_size = sizeof(Particle);
  CHECK(RFFITypeRegisterMetadata(g_particle, &meta) == 0);

  g_charged = RFFITypeGetOrAllocIndex(&key2, -1, -1, 0, 1, g_particle);
  CHECK(g_charged > g_particle);
  f = field("charge", "", offsetof(Charged, charge), 4, kRFFIInt, kRFFIFieldFlagBitMaskWritable);
  CHECK(RFFITypeRegisterField(g_charged, &f) == 0);
  meta.doc = ba_of("A charged particle.");
  meta.total_size = sizeof(Charged);
  CHECK(RFFITypeRegisterMetadata(g_charged, &meta) == 0);
  /* The same key under another parent is refused. */
  CHECK(RFFITypeGetOrAllocIndex(&key2, -1, -1, 0, 1, -1) == -1);
  expect_error("ValueError", "another parent");
}

static void test_type_info(void) {
  const RFFITypeInfo* info = RFFIGetTypeInfo(g_charged);
  CHECK(info != NULL);
  if (info == NULL) return;
  CHECK(ba_equals(info->type_key, "c_test.Charged"));
  CHECK(info->type_depth == 2);
  CHECK(info->type_ancestors[0]->type_index == kRFFIObject);
  CHECK(info->type_ancestors[1]->type_index == g_particle);
  CHECK(info->num_fields == 1 && ba_equals(info->fields[0].name, "charge"));
  info = info->type_ancestors[1];
  CHECK(info->num_fields == 5 && info->num_methods == 1);
  CHECK(ba_equals(info->fields[1].name, "mass") && ba_equals(info->fields[1].doc, "The mass."));
  CHECK(ba_equals(info->metadata->doc, "A particle, registered from C."));
  CHECK(RFFIGetTypeInfo(123456) == NULL);
  CHECK(RFFIGetTypeInfo(kRFFIArray)->type_depth == 1);
}

static void test_objects(void) {
  RFFIObjectHandle obj = NULL, arr = NULL, make_array = get_global("ffi.Array");
  RFFIByteArray mass = ba_of("mass"), id = ba_of("id"), tag = ba_of("tag"), owner = ba_of("owner"),
                charge = ba_of("charge"), dbl = ba_of("double_mass"), sc = ba_of("scale"),
                nope = ba_of("nope");
  RFFIAny v, args[2], r;
  Charged* c;
  CHECK(RFFIObjectCreate(g_charged, &obj) == 0 && obj != NULL);
  if (obj == NULL) return;
  c = (Charged*)obj;
  CHECK(c->base.mass == 1.0 && c->base.id == 0 && c->charge == 0); /* default, zero */
  CHECK(RFFIObjectIsInstance(obj, g_particle) == 1 && RFFIObjectIsInstance(obj, g_charged) == 1);

  v = int_any(2); /* an int widens to the float field */
  CHECK(RFFIObjectSetField(obj, &mass, &v) == 0 && c->base.mass == 2.0);
  v = int_any(-7);
  CHECK(RFFIObjectSetField(obj, &charge, &v) == 0 && c->charge == -7);
  v = int_any((int64_t)1 << 40);
  CHECK(RFFIObjectSetField(obj, &charge, &v) == -1);
  expect_error("TypeError", "out of range for 32 bits");
  memset(&v, 0, sizeof(v));
  v.type_index = kRFFIRawStr;
  v.v.v_c_str = "heavy";
  CHECK(RFFIObjectSetField(obj, &mass, &v) == -1);
  expect_error("TypeError", "cannot set field `mass` of `c_test.Charged`: expected float, got str");
  CHECK(RFFIObjectSetField(obj, &id, &v) == -1);
  expect_error("TypeError", "expected int, got str");
  CHECK(RFFIObjectSetField(obj, &tag, &v) == 0); /* any value: a str object is stored */
  CHECK(c->base.tag.type_index == kRFFISmallStr || c->base.tag.type_index == kRFFIStr);
  CHECK(RFFIObjectSetField(obj, &owner, &v) == -1);
  expect_error("TypeError", "expected ffi.Array or None, got str");
  CHECK(RFFIObjectSetField(obj, &dbl, &v) == -1);
  expect_error("AttributeError", "frozen");
  CHECK(RFFIObjectGetField(obj, &nope, &r) == -1);
  expect_error("AttributeError", "`c_test.Charged` has no field `nope`");

  args[0] = int_any(5);
  memset(&r, 0, sizeof(r));
  CHECK(RFFIFunctionCall(make_array, args, 1, &r) == 0);
  arr = r.v.v_obj;
  v = object_arg(arr);
  CHECK(RFFIObjectSetField(obj, &owner, &v) == 0 && c->base.owner == arr);
  memset(&r, 0, sizeof(r));
  CHECK(RFFIObjectGetField(obj, &owner, &r) == 0 && r.v.v_obj == (RFFIObject*)arr);
  RFFIObjectDecRef(r.v.v_obj);
  RFFIObjectDecRef(arr); /* the field holds its own reference */
  memset(&r, 0, sizeof(r));
  CHECK(RFFIObjectGetField(obj, &dbl, &r) == 0 && r.v.v_float64 == 4.0);

  memset(args, 0, sizeof(args));
  args[0].type_index = kRFFIFloat;
  args[0].v.v_float64 = 1.5;
  memset(&r, 0, sizeof(r));
  CHECK(RFFIObjectCallMethod(obj, &sc, args, 1, &r) == 0 && r.v.v_float64 == 3.0);
  CHECK(RFFIObjectCallMethod(obj, &nope, args, 1, &r) == -1);
  expect_error("AttributeError", "has no method `nope`");
  CHECK(RFFIObjectCallMethod(NULL, &sc, args, 1, &r) == -1);
  expect_error("ValueError", "`obj` is NULL");
  CHECK(RFFIObjectCreate(kRFFIArray, &arr) == -1); /* no creator, no total size */
  expect_error("TypeError", "cannot be created generically");

  RFFIObjectDecRef(obj); /* releases the owner array and the tag */
  RFFIObjectDecRef(make_array);
}

/* testing.TestPoint is declared in Rust with object_type!. */
static void test_rust_type(void) {
  RFFIObjectHandle make = get_global("testing.make_point"), p;
  RFFIByteArray x = ba_of("x"), y = ba_of("y"), label = ba_of("label"), sum = ba_of("sum");
  RFFIAny args[2], r, v;
  args[0] = int_any(3);
  args[1] = int_any(4);
  memset(&r, 0, sizeof(r));
  CHECK(RFFIFunctionCall(make, args, 2, &r) == 0);
  p = r.v.v_obj;
  memset(&v, 0, sizeof(v));
  CHECK(RFFIObjectGetField(p, &x, &v) == 0 && v.v.v_int64 == 3);
  v = int_any(10);
  CHECK(RFFIObjectSetField(p, &y, &v) == 0);
  CHECK(RFFIObjectSetField(p, &x, &v) == -1);
  expect_error("AttributeError", "cannot assign to field `x` of `testing.TestPoint`: it is frozen");
  CHECK(RFFIObjectSetField(p, &label, &v) == -1);
  expect_error("TypeError", "expected str, got int");
  memset(&r, 0, sizeof(r));
  CHECK(RFFIObjectCallMethod(p, &sum, NULL, 0, &r) == 0 && r.v.v_int64 == 13);
  RFFIObjectDecRef(p);
  RFFIObjectDecRef(make);
}

/* A type with a frozen field, as Python's py_class(frozen=True) registers one: its value is given
 * when the object is made, and no setter (C's included) changes it afterwards. A Rust type reports
 * its real size, and the runtime refuses to make one generically. */
static void test_frozen_value_type(void) {
  RFFIObjectHandle reg = get_global("ffi.TypeRegisterValueType"),
                   init = get_global("ffi.ObjectCreateInit"), obj;
  RFFIByteArray id = ba_of("id"), note = ba_of("note"), point_key;
  RFFIAny args[8], r, v;
  int32_t ti, point;
  const RFFITypeInfo* info;
  args[0] = str_arg("c_test.FrozenId");
  memset(&args[1], 0, sizeof(args[1])); /* None: no parent */
  args[2] = str_arg(
      "[{\"name\":\"id\",\"type_schema\":\"{\\\"type\\\":\\\"int\\\"}\","
      "\"frozen\":true},{\"name\":\"note\"}]");
  memset(&r, 0, sizeof(r));
  CHECK(RFFIFunctionCall(reg, args, 3, &r) == 0 && r.type_index == kRFFIInt);
  ti = (int32_t)r.v.v_int64;
  args[0] = int_any(ti);
  args[1] = str_arg("FrozenId()");
  args[2] = str_arg("id");
  args[3] = int_any(0);
  args[4] = int_any(41);
  memset(&r, 0, sizeof(r));
  CHECK(RFFIFunctionCall(init, args, 5, &r) == 0 && r.type_index == ti);
  obj = r.v.v_obj;
  memset(&v, 0, sizeof(v));
  CHECK(RFFIObjectGetField(obj, &id, &v) == 0 && v.v.v_int64 == 41);
  v = int_any(42);
  CHECK(RFFIObjectSetField(obj, &id, &v) == -1);
  expect_error("AttributeError", "cannot assign to field `id` of `c_test.FrozenId`: it is frozen");
  CHECK(RFFIObjectSetField(obj, &note, &v) == 0);
  RFFIObjectDecRef(obj);
  /* A value that does not fit names the caller's argument. */
  args[4] = str_arg("forty-one");
  CHECK(RFFIFunctionCall(init, args, 5, &r) == -1);
  expect_error("TypeError", "FrozenId() argument #0 (`id`): expected int, got str");

  point_key = ba_of("testing.TestPoint");
  CHECK(RFFITypeKeyToIndex(&point_key, &point) == 0);
  info = RFFIGetTypeInfo(point);
  CHECK(info != NULL && info->metadata != NULL && info->metadata->total_size > 24);
  CHECK(RFFIObjectCreate(point, &obj) == -1);
  expect_error("TypeError", "declared in Rust cannot be created generically");
  RFFIObjectDecRef(reg);
  RFFIObjectDecRef(init);
}

/* A C function registered with its schema and docstring; its metadata and typed-call errors. */
static int32_t c_scale(void* self, const RFFIAny* args, int32_t n, RFFIAny* result) {
  (void)self;
  (void)n;
  result->type_index = kRFFIFloat;
  result->v.v_float64 = args[0].v.v_float64 * 2;
  return 0;
}

static void test_function_metadata(void) {
  RFFIMethodInfo m;
  RFFIObjectHandle fn = NULL, get_meta = get_global("ffi.GetGlobalFuncMetadata"),
                   rust_meta_fn;
  RFFIAny arg, r;
  RFFIByteArray text;
  CHECK(RFFIFunctionCreate(NULL, c_scale, NULL, &fn) == 0);
  memset(&m, 0, sizeof(m));
  m.name = ba_of("c_test.double_it");
  m.doc = ba_of("Doubles a float.");
  m.metadata = ba_of(
      "{\"type_schema\":\"{\\\"type\\\":\\\"ffi.Function\\\",\\\"args\\\":"
      "[{\\\"type\\\":\\\"float\\\"},{\\\"type\\\":\\\"float\\\"}]}\","
      "\"arg_names\":[\"x\"]}");
  m.method.type_index = kRFFIFunction;
  m.method.v.v_obj = (RFFIObject*)fn;
  CHECK(RFFIFunctionSetGlobalFromMethodInfo(&m, 0) == 0);
  memset(&arg, 0, sizeof(arg));
  arg.type_index = kRFFIRawStr;
  arg.v.v_c_str = "c_test.double_it";
  memset(&r, 0, sizeof(r));
  CHECK(RFFIFunctionCall(get_meta, &arg, 1, &r) == 0);
  CHECK(r.type_index == kRFFIStr);
  if (r.type_index == kRFFIStr) {
    text = *(RFFIByteArray*)((char*)r.v.v_obj + sizeof(RFFIObject));
    CHECK(ba_contains(text, "\"arg_names\":[\"x\"]"));
    CHECK(ba_contains(text, "\"doc\":\"Doubles a float.\""));
    RFFIObjectDecRef(r.v.v_obj);
  }
  /* Bad metadata registers nothing. */
  m.name = ba_of("c_test.bad_meta");
  m.metadata = ba_of("{\"type_schema\": 3}");
  CHECK(RFFIFunctionSetGlobalFromMethodInfo(&m, 0) == -1);
  expect_error("ValueError", "must be a JSON string");
  CHECK(RFFIFunctionSetGlobalFromMethodInfo(NULL, 0) == -1);
  expect_error("ValueError", "`info` is NULL");
  RFFIObjectDecRef(fn);
  /* A Rust typed function's schema is recorded by itself. */
  arg.v.v_c_str = "testing.add_one";
  memset(&r, 0, sizeof(r));
  CHECK(RFFIFunctionCall(get_meta, &arg, 1, &r) == 0 && r.type_index == kRFFIStr);
  if (r.type_index == kRFFIStr) {
    text = *(RFFIByteArray*)((char*)r.v.v_obj + sizeof(RFFIObject));
    CHECK(ba_contains(text, "ffi.Function"));
    RFFIObjectDecRef(r.v.v_obj);
  }
  rust_meta_fn = get_meta;
  RFFIObjectDecRef(rust_meta_fn);
}

/* A List shared with Rust: appended to through the function registry, read through the cell. */
static void test_list(void) {
  RFFIObjectHandle make = get_global("ffi.List"), append = get_global("ffi.ListAppend"), l;
  RFFIAny args[2], r;
  RFFISeqCell* cell;
  args[0] = int_any(1);
  memset(&r, 0, sizeof(r));
  CHECK(RFFIFunctionCall(make, args, 1, &r) == 0 && r.type_index == kRFFIList);
  l = r.v.v_obj;
  args[0] = object_arg(l);
  args[1] = int_any(2);
  memset(&r, 0, sizeof(r));
  CHECK(RFFIFunctionCall(append, args, 2, &r) == 0);
  cell = (RFFISeqCell*)((char*)l + sizeof(RFFIObject));
  CHECK(cell->size == 2 && cell->data[1].v.v_int64 == 2);
  RFFIObjectDecRef(l);
  RFFIObjectDecRef(make);
  RFFIObjectDecRef(append);
}

int main(void) {
  test_function_metadata();
  test_list();
  register_types();
  test_type_info();
  test_objects();
  test_rust_type();
  test_frozen_value_type();
  return finish("test_objects");
}
