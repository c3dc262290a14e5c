/* Structural operations from C: equality and hashing of object graphs (with the path of the first
 * difference), recursive comparison, deep copy keeping sharing, repr, and JSON graph round trips,
 * over a type registered from C (fields laid out by the runtime) and the built-in containers. */
#include <stddef.h>
#include <stdlib.h>
#include "rffi/c_api.h"
#include "check.h"

typedef struct {
  RFFIObject header;
  int64_t id;
  RFFIAny payload;
} Pair;

static int32_t g_pair = -1;

static void register_pair(void) {
  RFFIByteArray key = ba_of("c_structural.Pair");
  RFFIFieldInfo f;
  RFFITypeMetadata meta;
  g_pair = RFFITypeGetOrAllocIndex(&key, -1, -1, 0, 1, -1);
  CHECK(g_pair >= kRFFIDynObjectBegin);
  memset(&f, 0, sizeof(f));
  f.name = ba_of("id");
  f.flags = kRFFIFieldFlagBitMaskWritable;
  f.size = 8;
  f.alignment = 8;
  f.offset = offsetof(Pair, id);
  f.field_static_type_index = kRFFIInt;
  CHECK(RFFITypeRegisterField(g_pair, &f) == 0);
  f.name = ba_of("payload");
  f.size = 16;
  f.offset = offsetof(Pair, payload);
  f.field_static_type_index = kRFFIAny;
  CHECK(RFFITypeRegisterField(g_pair, &f) == 0);
  memset(&meta, 0, sizeof(meta));
  meta.total_size = sizeof(Pair);
  CHECK(RFFITypeRegisterMetadata(g_pair, &meta) == 0);
}

static RFFIAny str_any(const char* s) {
  RFFIAny a;
  RFFIByteArray ba = ba_of(s);
  memset(&a, 0, sizeof(a));
  CHECK(RFFIStringFromByteArray(&ba, &a) == 0);
  return a;
}

/* The text of a string value (small or heap). */
static RFFIByteArray text_of(const RFFIAny* a) {
  RFFIByteArray ba;
  if (a->type_index == kRFFISmallStr) {
    ba.data = a->v.v_bytes;
    ba.size = a->small_str_len;
  } else if (a->type_index == kRFFIStr) {
    ba = *(RFFIByteArray*)((char*)a->v.v_obj + sizeof(RFFIObject));
  } else {
    ba.data = "";
    ba.size = 0;
  }
  return ba;
}

static void release(RFFIAny* a) {
  if (a->type_index >= kRFFIStaticObjectBegin) RFFIObjectDecRef(a->v.v_obj);
  memset(a, 0, sizeof(*a));
}

/* A Pair(id, payload) as an owned value. */
static RFFIAny make_pair(int64_t id, RFFIAny payload) {
  RFFIObjectHandle p = NULL;
  RFFIByteArray name = ba_of("payload"), idname = ba_of("id");
  RFFIAny v = int_any(id), out;
  CHECK(RFFIObjectCreate(g_pair, &p) == 0);
  CHECK(RFFIObjectSetField(p, &idname, &v) == 0);
  CHECK(RFFIObjectSetField(p, &name, &payload) == 0);
  out = object_arg(p);
  return out;
}

/* ffi.Array(items...) as an owned value. */
static RFFIAny make_array(RFFIAny* items, int32_t n) {
  RFFIObjectHandle f = get_global("ffi.Array");
  RFFIAny r;
  memset(&r, 0, sizeof(r));
  CHECK(RFFIFunctionCall(f, items, n, &r) == 0 && r.type_index == kRFFIArray);
  RFFIObjectDecRef(f);
  return r;
}

static void test_equal_hash_and_mismatch(void) {
  RFFIAny s1 = str_any("a string longer than seven"), s2 = str_any("a string longer than seven");
  RFFIAny s3 = str_any("another");
  RFFIAny items[2], a, b, c, lp, rp, text;
  RFFIObjectHandle to_string = get_global("ffi.AccessPathToString");
  int32_t eq = -1;
  uint64_t ha = 0, hb = 1, hc = 0;
  items[0] = int_any(1);
  items[1] = make_pair(7, s1);
  a = make_array(items, 2);
  release(&items[1]);
  items[1] = make_pair(7, s2);
  b = make_array(items, 2);
  release(&items[1]);
  items[1] = make_pair(7, s3);
  c = make_array(items, 2);
  release(&items[1]);

  CHECK(RFFIStructuralEqual(&a, &b, 0, &eq) == 0 && eq == 1);
  CHECK(RFFIStructuralEqual(&a, &c, 0, &eq) == 0 && eq == 0);
  CHECK(RFFIStructuralHash(&a, 0, &ha) == 0 && RFFIStructuralHash(&b, 0, &hb) == 0);
  CHECK(RFFIStructuralHash(&c, 0, &hc) == 0);
  CHECK(ha == hb && ha != hc);

  memset(&lp, 0, sizeof(lp));
  memset(&rp, 0, sizeof(rp));
  CHECK(RFFIStructuralGetFirstMismatch(&a, &b, 0, &lp, &rp) == 0);
  CHECK(lp.type_index == kRFFINone && rp.type_index == kRFFINone);
  CHECK(RFFIStructuralGetFirstMismatch(&a, &c, 0, &lp, &rp) == 0);
  CHECK(lp.type_index >= kRFFIDynObjectBegin);
  memset(&text, 0, sizeof(text));
  CHECK(RFFIFunctionCall(to_string, &lp, 1, &text) == 0);
  CHECK(ba_equals(text_of(&text), "root[1].payload"));
  release(&text);
  release(&lp);
  release(&rp);

  /* Bad input: NULL values, unknown flags. */
  CHECK(RFFIStructuralEqual(NULL, &b, 0, &eq) == -1);
  expect_error("ValueError", "`lhs` is NULL");
  CHECK(RFFIStructuralEqual(&a, &b, 0, NULL) == -1);
  expect_error("ValueError", "`out` is NULL");
  CHECK(RFFIStructuralHash(&a, 64, &ha) == -1);
  expect_error("ValueError", "unknown flags");

  /* Recursive comparison: ids order the pairs; different types have no order. */
  {
    RFFIAny p1 = make_pair(1, int_any(0)), p2 = make_pair(2, int_any(0));
    int32_t cmp = 9;
    uint64_t h1 = 0, h2 = 0;
    CHECK(RFFIRecursiveCompare(&p1, &p2, 1, &cmp) == 0 && cmp == -1);
    CHECK(RFFIRecursiveCompare(&p2, &p1, 1, &cmp) == 0 && cmp == 1);
    CHECK(RFFIRecursiveCompare(&p1, &p1, 1, &cmp) == 0 && cmp == 0);
    CHECK(RFFIRecursiveCompare(&p1, &s3, 0, &cmp) == 0 && cmp == 2);
    CHECK(RFFIRecursiveCompare(&p1, &s3, 1, &cmp) == -1);
    expect_error("TypeError", "cannot order");
    CHECK(RFFIRecursiveHash(&p1, &h1) == 0 && RFFIRecursiveHash(&p2, &h2) == 0 && h1 != h2);
    release(&p1);
    release(&p2);
  }
  release(&a);
  release(&b);
  release(&c);
  release(&s1);
  release(&s2);
  release(&s3);
  RFFIObjectDecRef(to_string);
}

static void test_copy_repr_json(void) {
  RFFIAny p = make_pair(3, int_any(4)), items[3], root, copy, text, back;
  RFFIObjectHandle fn = NULL;
  int32_t eq = 0;
  RFFIByteArray json;
  items[0] = p;
  items[1] = p;
  items[2] = int_any(5);
  root = make_array(items, 3);

  /* Deep copy: new objects, equal contents, the shared pair still shared. */
  memset(&copy, 0, sizeof(copy));
  CHECK(RFFIDeepCopy(&root, &copy) == 0 && copy.type_index == kRFFIArray);
  {
    RFFISeqCell* cell = (RFFISeqCell*)((char*)copy.v.v_obj + sizeof(RFFIObject));
    CHECK(copy.v.v_obj != root.v.v_obj);
    CHECK(cell->data[0].v.v_obj == cell->data[1].v.v_obj);
    CHECK(cell->data[0].v.v_obj != p.v.v_obj);
  }
  CHECK(RFFIStructuralEqual(&root, &copy, 0, &eq) == 0 && eq == 1);

  /* Repr: fields by name; the shared pair once. */
  memset(&text, 0, sizeof(text));
  CHECK(RFFIReprPrint(&root, 0, &text) == 0);
  CHECK(ba_equals(text_of(&text), "(#1=c_structural.Pair(id=3, payload=4), #1, 5)"));
  release(&text);
  CHECK(RFFIReprPrint(&root, -1, &text) == -1);
  expect_error("ValueError", "negative");

  /* JSON graph: a round trip is equal, and keeps the sharing. */
  CHECK(RFFIToJSONGraphString(&root, NULL, &text) == 0);
  json = text_of(&text);
  CHECK(ba_contains(json, "\"type\":\"c_structural.Pair\""));
  memset(&back, 0, sizeof(back));
  CHECK(RFFIFromJSONGraphString(&json, &back) == 0);
  CHECK(RFFIStructuralEqual(&root, &back, 0, &eq) == 0 && eq == 1);
  {
    RFFISeqCell* cell = (RFFISeqCell*)((char*)back.v.v_obj + sizeof(RFFIObject));
    CHECK(cell->data[0].v.v_obj == cell->data[1].v.v_obj);
  }
  release(&back);
  release(&text);

  /* What cannot be written is named; malformed text is a ValueError. */
  fn = get_global("ffi.Array");
  items[0] = object_arg(fn);
  release(&root);
  root = make_array(items, 1);
  CHECK(RFFIToJSONGraphString(&root, NULL, &text) == -1);
  expect_error("TypeError", "ffi.Function");
  json = ba_of("{\"root_index\": 3, \"nodes\": []}");
  CHECK(RFFIFromJSONGraphString(&json, &back) == -1);
  expect_error("ValueError", "not a node index");
  json = ba_of("{\"root_index\": 0, \"nodes\": [{\"type\": \"ffi.Array\", \"data\": [0]}]}");
  CHECK(RFFIFromJSONGraphString(&json, &back) == -1);
  expect_error("ValueError", "cycle");
  CHECK(RFFIFromJSONGraphString(NULL, &back) == -1);
  expect_error("ValueError", "`json` is NULL");
  RFFIObjectDecRef(fn);
  release(&root);
  release(&copy);
  release(&p);
}

int main(void) {
  register_pair();
  test_equal_hash_and_mismatch();
  test_copy_repr_json();
  return finish("test_structural");
}
