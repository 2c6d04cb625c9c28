/* dict.c — dict, set and frozenset: hashing, the two tables, their methods and operators.
 *
 * Python's behaviour is the specification. A dict iterates in insertion order; a set iterates in
 * the order of CPython's hash table, which this file reproduces (the same hashes for ints, floats,
 * bools and tuples, the same table sizes, probe sequence and resize rule as CPython 3.11's
 * setobject.c), so that a set of ints prints as CPython prints it. str hashes are tdl's own
 * (CPython randomises its), so the order of a set of strings is tdl's, as it is run to run in
 * CPython.
 *
 * Keys are compared by identity, then by hash and val_equal; nothing here runs tdl code. Reference
 * rule as in interp.h: arguments borrowed, *out a new reference.
 */
#include "interp.h"
#include "hash.h"
#include "mem.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define BUILTIN_ARGS Interp *I, Value self, const Value *args, int nargs, \
                     const char *const *kwnames, int nkw, Value *out

#define HASH_BITS 61
#define HASH_MODULUS (((uint64_t)1 << HASH_BITS) - 1)
#define HASH_INF 314159u
#define HASH_NONE 0xFCA86420u      /* CPython hashes None by address; any constant will do */
#define DUMMY_HASH UINT64_MAX       /* a set slot whose entry was removed */
#define LINEAR_PROBES 9
#define PERTURB_SHIFT 5
#define SET_MINSIZE 8

static inline Value dictv(DictObj *d) { return v_obj(d->h.tag, &d->h); }

/* ---- hashing ------------------------------------------------------------------------------- */

static uint64_t fix_hash(uint64_t h) { return h == UINT64_MAX ? UINT64_MAX - 1 : h; }

static uint64_t hash_int(int64_t v)
{
    uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    uint64_t x = a % HASH_MODULUS;
    return fix_hash(v < 0 ? (uint64_t)0 - x : x);
}

/* CPython's _Py_HashDouble: equal to hash_int for integral values. */
static uint64_t hash_double(double v)
{
    if (!isfinite(v)) return isinf(v) ? (v > 0 ? HASH_INF : (uint64_t)0 - HASH_INF) : 0;
    int e;
    double m = frexp(v, &e);
    int sign = 1;
    if (m < 0) {
        sign = -1;
        m = -m;
    }
    uint64_t x = 0;
    while (m) {
        x = ((x << 28) & HASH_MODULUS) | x >> (HASH_BITS - 28);
        m *= 268435456.0;
        e -= 28;
        uint64_t y = (uint64_t)m;
        m -= (double)y;
        x += y;
        if (x >= HASH_MODULUS) x -= HASH_MODULUS;
    }
    e = e >= 0 ? e % HASH_BITS : HASH_BITS - 1 - ((-1 - e) % HASH_BITS);
    x = ((x << e) & HASH_MODULUS) | x >> (HASH_BITS - e);
    if (sign < 0) x = (uint64_t)0 - x;
    return fix_hash(x);
}

static uint64_t hash_pointer(const void *p)
{
    uint64_t y = (uint64_t)(uintptr_t)p;
    return fix_hash(y >> 4 | y << 60);
}

/* CPython's tuplehash (xxHash lanes). */
#define XXPRIME_1 11400714785074694791ull
#define XXPRIME_2 14029467366897019727ull
#define XXPRIME_5 2870177450012600261ull
static uint64_t hash_lanes(const uint64_t *lanes, size_t n)
{
    uint64_t acc = XXPRIME_5;
    for (size_t i = 0; i < n; i++) {
        acc += lanes[i] * XXPRIME_2;
        acc = acc << 31 | acc >> 33;
        acc *= XXPRIME_1;
    }
    acc += n ^ (XXPRIME_5 ^ 3527539ull);
    return acc == UINT64_MAX ? 1546275796 : acc;
}

static uint64_t shuffle_bits(uint64_t h) { return ((h ^ 89869747ull) ^ (h << 16)) * 3644798167ull; }

/* CPython's frozenset_hash: over every slot (empty ones hash 0, dummies -1), with the effect
 * of an odd number of empty and dummy slots taken out again. */
static uint64_t hash_frozenset(const DictObj *s)
{
    uint64_t h = 0;
    if (s->ent) {
        for (size_t i = 0; i <= s->mask; i++) h ^= shuffle_bits(s->ent[i].hash);
        if ((s->mask + 1 - s->fill) & 1) h ^= shuffle_bits(0);
        if ((s->fill - s->used) & 1) h ^= shuffle_bits(DUMMY_HASH);
    }
    h ^= ((uint64_t)s->used + 1) * 1927868237ull;
    h ^= (h >> 11) ^ (h >> 25);
    h = h * 69069u + 907133923ull;
    return h == UINT64_MAX ? 590923713ull : h;
}

bool val_hash(Interp *I, Value v, uint64_t *out)
{
    switch (v.tag) {
    case V_NONE: *out = HASH_NONE; return true;
    case V_BOOL: *out = v.b; return true;
    case V_INT: *out = hash_int(v.i); return true;
    case V_FLOAT: *out = hash_double(v.f); return true;
    case V_TYPE: case V_DTYPE: case V_DEVICE: case V_MEMFMT: case V_ELLIPSIS: case V_EXCTYPE:
        *out = fix_hash(((uint64_t)v.tag << 56) ^ (uint64_t)v.i ^ 0x9E3779B97F4A7C15ull);
        return true;
    case V_STR: {
        StrObj *s = as_str(v);
        if (!s->hash) {
            uint64_t h = fix_hash(fnv1a_bytes(FNV1A_SEED, s->data, s->len));
            s->hash = h ? h : 1;
        }
        *out = s->hash;
        return true;
    }
    case V_TUPLE: {
        TupleObj *t = as_tuple(v);
        if (I->nest >= 1000) return err_raise(I, TDL_ERR_RECURSION, "maximum recursion depth exceeded");
        uint64_t small[8];
        uint64_t *lanes = t->n <= 8 ? small : mem_malloc(t->n * sizeof *lanes);
        if (!lanes) return err_nomem(I);
        bool ok = true;
        I->nest++;
        for (size_t i = 0; i < t->n && ok; i++) ok = val_hash(I, t->items[i], &lanes[i]);
        I->nest--;
        if (ok) *out = hash_lanes(lanes, t->n);
        if (lanes != small) mem_free(lanes);
        return ok;
    }
    case V_RANGE: {
        RangeObj *r = as_range(v);
        int64_t n = range_len(r);
        uint64_t lanes[3] = {hash_int(n), n ? hash_int(r->start) : HASH_NONE, n > 1 ? hash_int(r->step) : HASH_NONE};
        *out = hash_lanes(lanes, 3);
        return true;
    }
    case V_FROZENSET: *out = hash_frozenset(as_dict(v)); return true;
    case V_INSTANCE: case V_EXC: {
        bool found;
        if (!class_hash(I, v, out, &found)) return false;
        if (!found) *out = hash_pointer(v.o);
        return true;
    }
    case V_LIST: case V_DICT: case V_SET: case V_SLICE: case V_DICTVIEW:
        return err_raise(I, TDL_ERR_TYPE, "unhashable type: '%s'", val_type_name(v));
    default:
        if (IS_OBJ(v)) {
            *out = hash_pointer(v.o);
            return true;
        }
        return err_raise(I, TDL_ERR_TYPE, "unhashable type: '%s'", val_type_name(v));
    }
}

/* Whether stored key k (hash kh) is the key v (hash h): identity, else equal hashes and ==. A
 * tensor is a key by identity only, as torch hashes tensors by id. */
static bool key_match(Interp *I, Value k, uint64_t kh, Value v, uint64_t h, bool *out)
{
    if (k.tag == v.tag && (IS_OBJ(k) ? k.o == v.o : k.tag == V_BOOL ? k.b == v.b : k.i == v.i)) {
        *out = true;
        return true;
    }
    if (kh != h || is_tensorlike(k) || is_tensorlike(v)) {
        *out = false;
        return true;
    }
    return val_equal(I, k, v, out);
}

/* ---- the tables ---------------------------------------------------------------------------- */

DictObj *dict_alloc(Interp *I, ValueTag tag)
{
    return obj_alloc(I, sizeof(DictObj), tag, true);
}

static inline bool slot_empty(const DictEntry *e) { return e->key.tag == V_UNDEF && e->hash == 0; }

/* Set lookup as CPython's set_add_entry probes: the live slot of key, or (when absent) the slot
 * it would go into (the first dummy met, else the empty slot that ends the probe). */
static bool set_probe(Interp *I, DictObj *s, Value key, uint64_t h, DictEntry **found, DictEntry **slot)
{
    size_t mask = s->mask, i = h & mask;
    uint64_t perturb = h;
    DictEntry *freeslot = NULL;
    *found = NULL;
    for (;;) {
        DictEntry *e = &s->ent[i];
        size_t probes = i + LINEAR_PROBES <= mask ? LINEAR_PROBES : 0;
        for (;;) {
            if (slot_empty(e)) {
                *slot = freeslot ? freeslot : e;
                return true;
            }
            if (e->key.tag != V_UNDEF) {
                bool eq;
                if (!key_match(I, e->key, e->hash, key, h, &eq)) return false;
                if (eq) {
                    *found = e;
                    return true;
                }
            } else if (!freeslot) {
                freeslot = e;
            }
            if (probes-- == 0) break;
            e++;
        }
        perturb >>= PERTURB_SHIFT;
        i = (i * 5 + 1 + perturb) & mask;
    }
}

/* CPython's set_insert_clean: key is known to be absent and the table to have no dummies. */
static void set_insert_clean(DictEntry *table, size_t mask, Value key, uint64_t h)
{
    size_t i = h & mask;
    uint64_t perturb = h;
    for (;;) {
        DictEntry *e = &table[i];
        if (slot_empty(e)) goto found;
        if (i + LINEAR_PROBES <= mask) {
            for (int j = 0; j < LINEAR_PROBES; j++) {
                e++;
                if (slot_empty(e)) goto found;
            }
        }
        perturb >>= PERTURB_SHIFT;
        i = (i * 5 + 1 + perturb) & mask;
        continue;
    found:
        e->key = key;
        e->hash = h;
        e->val = v_undef();
        return;
    }
}

static DictEntry *new_table(Interp *I, size_t n)
{
    DictEntry *t = n <= SIZE_MAX / sizeof *t ? mem_calloc(n, sizeof *t) : NULL;
    if (!t) err_nomem(I);
    return t;      /* calloc'd: every key is V_UNDEF (0) with hash 0, that is empty */
}

static bool set_resize(Interp *I, DictObj *s, size_t minused)
{
    size_t size = SET_MINSIZE;
    while (size <= minused) size <<= 1;
    DictEntry *t = new_table(I, size);
    if (!t) return false;
    DictEntry *old = s->ent;
    size_t oldn = old ? s->mask + 1 : 0;
    for (size_t i = 0; i < oldn; i++)
        if (old[i].key.tag != V_UNDEF) set_insert_clean(t, size - 1, old[i].key, old[i].hash);
    mem_free(old);
    s->ent = t;
    s->mask = size - 1;
    s->fill = s->used;
    return true;
}

static bool set_ensure_table(Interp *I, DictObj *s)
{
    if (s->ent) return true;
    if (!(s->ent = new_table(I, SET_MINSIZE))) return false;
    s->mask = SET_MINSIZE - 1;
    return true;
}

/* CPython's set_add_entry; takes a new reference to key when it is added. */
static bool set_add_hashed(Interp *I, DictObj *s, Value key, uint64_t h)
{
    if (!set_ensure_table(I, s)) return false;
    DictEntry *found, *slot;
    if (!set_probe(I, s, key, h, &found, &slot)) return false;
    if (found) return true;
    bool unused = slot_empty(slot);
    val_incref(key);
    slot->key = key;
    slot->hash = h;
    slot->val = v_undef();
    s->used++;
    if (!unused) return true;
    s->fill++;
    if (s->fill * 5 < s->mask * 3) return true;
    return set_resize(I, s, s->used > 50000 ? s->used * 2 : s->used * 4);
}

/* Dict index: slots hold -1 (empty), -2 (deleted) or an entry index. */
#define IX_EMPTY (-1)
#define IX_DUMMY (-2)

static bool dict_lookup(Interp *I, DictObj *d, Value key, uint64_t h, int64_t *ix, size_t *slot)
{
    *ix = -1;
    if (!d->idx) return true;
    size_t mask = d->mask, i = h & mask;
    uint64_t perturb = h;
    for (;;) {
        int64_t k = d->idx[i];
        if (k == IX_EMPTY) {
            *slot = i;
            return true;
        }
        if (k >= 0) {
            bool eq;
            if (!key_match(I, d->ent[k].key, d->ent[k].hash, key, h, &eq)) return false;
            if (eq) {
                *ix = k;
                *slot = i;
                return true;
            }
        }
        perturb >>= PERTURB_SHIFT;
        i = (i * 5 + 1 + perturb) & mask;
    }
}

/* Rebuilds the index for room for at least `need` live entries, compacting ent. */
static bool dict_resize(Interp *I, DictObj *d, size_t need)
{
    size_t size = 8;
    while (size * 2 < need * 3 + 3) size <<= 1;
    int64_t *idx = size <= SIZE_MAX / sizeof *idx ? mem_malloc(size * sizeof *idx) : NULL;
    size_t cap = size * 2 / 3 + 1;
    DictEntry *ent = new_table(I, cap);
    if (!idx || !ent) {
        mem_free(idx);
        mem_free(ent);
        return err_nomem(I);
    }
    for (size_t i = 0; i < size; i++) idx[i] = IX_EMPTY;
    size_t n = 0;
    for (size_t k = 0; k < d->fill; k++) {
        if (d->ent[k].key.tag == V_UNDEF) continue;
        ent[n] = d->ent[k];
        size_t i = ent[n].hash & (size - 1);
        uint64_t perturb = ent[n].hash;
        while (idx[i] != IX_EMPTY) {
            perturb >>= PERTURB_SHIFT;
            i = (i * 5 + 1 + perturb) & (size - 1);
        }
        idx[i] = (int64_t)n++;
    }
    mem_free(d->ent);
    mem_free(d->idx);
    d->ent = ent;
    d->idx = idx;
    d->capent = cap;
    d->fill = n;
    d->mask = size - 1;
    return true;
}

static bool dict_set_hashed(Interp *I, DictObj *d, Value key, uint64_t h, Value val)
{
    int64_t ix;
    size_t slot;
    if (!dict_lookup(I, d, key, h, &ix, &slot)) return false;
    if (ix >= 0) {
        Value old = d->ent[ix].val;
        val_incref(val);
        d->ent[ix].val = val;
        val_decref(I, old);
        return true;
    }
    if (!d->idx || d->fill >= d->capent) {
        if (!dict_resize(I, d, d->used + 1 > d->used * 2 ? d->used + 1 : d->used * 2)) return false;
        if (!dict_lookup(I, d, key, h, &ix, &slot)) return false;
    }
    val_incref(key);
    val_incref(val);
    d->ent[d->fill] = (DictEntry){key, val, h};
    d->idx[slot] = (int64_t)d->fill++;
    d->used++;
    return true;
}

bool dict_find(Interp *I, DictObj *d, Value key, DictEntry **out)
{
    uint64_t h;
    *out = NULL;
    if (!val_hash(I, key, &h)) return false;
    if (d->h.tag == V_DICT) {
        int64_t ix;
        size_t slot;
        if (!dict_lookup(I, d, key, h, &ix, &slot)) return false;
        if (ix >= 0) *out = &d->ent[ix];
        return true;
    }
    if (!d->ent) return true;
    DictEntry *slot;
    return set_probe(I, d, key, h, out, &slot);
}

bool dict_set(Interp *I, DictObj *d, Value key, Value val)
{
    uint64_t h;
    if (!val_hash(I, key, &h)) return false;
    return d->h.tag == V_DICT ? dict_set_hashed(I, d, key, h, val) : set_add_hashed(I, d, key, h);
}

/* Empties e (a found live entry) and releases its key and value. */
static void remove_entry(Interp *I, DictObj *d, DictEntry *e)
{
    Value k = e->key, v = e->val;
    e->key = v_undef();
    e->val = v_undef();
    if (d->h.tag == V_DICT) {
        size_t ix = (size_t)(e - d->ent);
        size_t i = e->hash & d->mask;
        uint64_t perturb = e->hash;
        while (d->idx[i] != (int64_t)ix) {
            perturb >>= PERTURB_SHIFT;
            i = (i * 5 + 1 + perturb) & d->mask;
        }
        d->idx[i] = IX_DUMMY;
    } else {
        e->hash = DUMMY_HASH;
    }
    d->used--;
    val_decref(I, k);
    val_decref(I, v);
}

bool dict_del(Interp *I, DictObj *d, Value key, bool *found)
{
    DictEntry *e;
    if (!dict_find(I, d, key, &e)) return false;
    *found = e != NULL;
    if (e) remove_entry(I, d, e);
    return true;
}

DictEntry *dict_next(DictObj *d, size_t *pos)
{
    size_t n = d->idx ? d->fill : (d->ent ? d->mask + 1 : 0);
    while (*pos < n) {
        DictEntry *e = &d->ent[(*pos)++];
        if (e->key.tag != V_UNDEF) return e;
    }
    return NULL;
}

void dict_clear(Interp *I, DictObj *d)
{
    DictEntry *ent = d->ent;
    size_t n = d->idx ? d->fill : (d->ent ? d->mask + 1 : 0);
    mem_free(d->idx);
    d->ent = NULL;
    d->idx = NULL;
    d->used = d->fill = d->mask = d->capent = 0;
    for (size_t i = 0; i < n; i++) {
        val_decref(I, ent[i].key);
        val_decref(I, ent[i].val);
    }
    mem_free(ent);
}

/* ---- building from iterables ----------------------------------------------------------------- */

/* CPython's set_merge: adds every key of set o to s. */
static bool set_merge(Interp *I, DictObj *s, DictObj *o)
{
    if (o == s || o->used == 0) return true;
    if ((s->fill + o->used) * 5 >= s->mask * 3 && !set_resize(I, s, (s->used + o->used) * 2)) return false;
    if (s->fill == 0 && s->mask == o->mask && o->fill == o->used) {
        for (size_t i = 0; i <= o->mask; i++) {
            s->ent[i] = o->ent[i];
            val_incref(s->ent[i].key);
        }
        s->fill = s->used = o->used;
        return true;
    }
    if (s->fill == 0) {
        for (size_t pos = 0; dict_next(o, &pos);) {
            DictEntry *e = &o->ent[pos - 1];
            val_incref(e->key);
            set_insert_clean(s->ent, s->mask, e->key, e->hash);
            s->fill++;
            s->used++;
        }
        return true;
    }
    for (size_t pos = 0; dict_next(o, &pos);)
        if (!set_add_hashed(I, s, o->ent[pos - 1].key, o->ent[pos - 1].hash)) return false;
    return true;
}

/* CPython's set_update_internal: the keys of a set or dict, or the items of any iterable. */
static bool set_update(Interp *I, DictObj *s, Value it)
{
    if (!set_ensure_table(I, s)) return false;
    if (is_setlike(it)) return set_merge(I, s, as_dict(it));
    if (it.tag == V_DICT) {
        DictObj *o = as_dict(it);
        if ((s->fill + o->used) * 5 >= s->mask * 3 && !set_resize(I, s, (s->used + o->used) * 2)) return false;
        for (size_t pos = 0; dict_next(o, &pos);)
            if (!set_add_hashed(I, s, o->ent[pos - 1].key, o->ent[pos - 1].hash)) return false;
        return true;
    }
    Iter iter;
    if (!iter_begin(I, it, &iter)) return false;
    bool ok = true;
    for (;;) {
        Value x;
        bool done;
        if (!(ok = iter_next(I, &iter, &x, &done)) || done) break;
        ok = dict_set(I, s, x, v_undef());
        val_decref(I, x);
        if (!ok) break;
    }
    iter_end(I, &iter);
    return ok;
}

/* dict.update(x) for one positional argument: a dict, or an iterable of pairs. */
static bool dict_update(Interp *I, DictObj *d, Value x)
{
    if (x.tag == V_DICT) {
        DictObj *o = as_dict(x);
        if (o == d) return true;
        for (size_t pos = 0; dict_next(o, &pos);) {
            DictEntry *e = &o->ent[pos - 1];
            if (!dict_set_hashed(I, d, e->key, e->hash, e->val)) return false;
        }
        return true;
    }
    Iter iter;
    if (!iter_begin(I, x, &iter)) {
        if (I->err.kind == TDL_ERR_TYPE)
            err_raise(I, TDL_ERR_TYPE, "'%s' object is not iterable", val_type_name(x));
        return false;
    }
    bool ok = true;
    for (int64_t k = 0;; k++) {
        Value item;
        bool done;
        if (!(ok = iter_next(I, &iter, &item, &done)) || done) break;
        ListObj *pair = NULL;
        if (item.tag != V_TUPLE && item.tag != V_LIST && item.tag != V_STR && item.tag != V_RANGE) {
            ok = err_raise(I, TDL_ERR_TYPE, "cannot convert dictionary update sequence element #%lld to a sequence",
                           (long long)k);
        } else if ((ok = list_from_iterable(I, item, &pair)) && pair->n != 2) {
            ok = err_raise(I, TDL_ERR_VALUE, "dictionary update sequence element #%lld has length %zu; 2 is required",
                           (long long)k, pair->n);
        } else if (ok) {
            ok = dict_set(I, d, pair->items[0], pair->items[1]);
        }
        if (pair) val_decref(I, v_obj(V_LIST, &pair->h));
        val_decref(I, item);
        if (!ok) break;
    }
    iter_end(I, &iter);
    return ok;
}

static bool dict_update_kw(Interp *I, DictObj *d, const Value *vals, const char *const *kwnames, int nkw)
{
    for (int k = 0; k < nkw; k++) {
        Value key;
        if (!str_from_cstr(I, kwnames[k], &key)) return false;
        bool ok = dict_set(I, d, key, vals[k]);
        val_decref(I, key);
        if (!ok) return false;
    }
    return true;
}

/* A new set or frozenset (tag) of the items of it (NONE for empty). */
static bool set_from(Interp *I, ValueTag tag, Value it, Value *out)
{
    DictObj *s = dict_alloc(I, tag);
    if (!s) return false;
    if (it.tag != V_UNDEF && !set_update(I, s, it)) {
        val_decref(I, dictv(s));
        return false;
    }
    *out = dictv(s);
    return true;
}

static bool dict_copy(Interp *I, DictObj *d, Value *out)
{
    if (d->h.tag != V_DICT) return set_from(I, (ValueTag)d->h.tag, dictv(d), out);
    DictObj *c = dict_alloc(I, V_DICT);
    if (!c) return false;
    if (!dict_update(I, c, dictv(d))) {
        val_decref(I, dictv(c));
        return false;
    }
    *out = dictv(c);
    return true;
}

bool dict_type_call(Interp *I, TypeId t, const Value *args, int nargs, const char *const *kwnames,
                    int nkw, Value *out)
{
    const char *name = type_name(t);
    if (t != T_DICT) {
        if (nkw) return err_raise(I, TDL_ERR_TYPE, "%s() takes no keyword arguments", name);
        if (nargs > 1) return err_raise(I, TDL_ERR_TYPE, "%s expected at most 1 argument, got %d", name, nargs);
        if (t == T_FROZENSET && nargs == 1 && args[0].tag == V_FROZENSET) {
            val_incref(args[0]);
            *out = args[0];
            return true;
        }
        return set_from(I, t == T_SET ? V_SET : V_FROZENSET, nargs ? args[0] : v_undef(), out);
    }
    if (nargs > 1) return err_raise(I, TDL_ERR_TYPE, "dict expected at most 1 argument, got %d", nargs);
    DictObj *d = dict_alloc(I, V_DICT);
    if (!d) return false;
    if ((nargs && !dict_update(I, d, args[0])) || !dict_update_kw(I, d, args + nargs, kwnames, nkw)) {
        val_decref(I, dictv(d));
        return false;
    }
    *out = dictv(d);
    return true;
}

/* ---- errors ------------------------------------------------------------------------------------ */

/* KeyError whose message is the key's repr, as Python's str(KeyError(k)). */
static bool key_error(Interp *I, Value key)
{
    Buf b = {0};
    if (!val_repr(I, key, &b)) {
        buf_free(&b);
        return false;
    }
    if (b.nomem) {
        buf_free(&b);
        return err_nomem(I);
    }
    bool r = err_raise(I, TDL_ERR_KEY, "%s", b.p ? b.p : "");
    buf_free(&b);
    return r;
}

/* ---- dict methods ---------------------------------------------------------------------------- */

static bool view_new(Interp *I, Value d, DictViewKind kind, Value *out)
{
    DictViewObj *v = obj_alloc(I, sizeof *v, V_DICTVIEW, true);
    if (!v) return false;
    val_incref(d);
    v->d = as_dict(d);
    v->kind = kind;
    *out = v_obj(V_DICTVIEW, &v->h);
    return true;
}

static bool m_dict_keys(BUILTIN_ARGS) { return view_new(I, self, DV_KEYS, out); }
static bool m_dict_values(BUILTIN_ARGS) { return view_new(I, self, DV_VALUES, out); }
static bool m_dict_items(BUILTIN_ARGS) { return view_new(I, self, DV_ITEMS, out); }

static bool m_dict_get(BUILTIN_ARGS)
{
    DictEntry *e;
    if (!dict_find(I, as_dict(self), args[0], &e)) return false;
    *out = e ? e->val : nargs > 1 ? args[1] : v_none();
    val_incref(*out);
    return true;
}

static bool m_dict_pop(BUILTIN_ARGS)
{
    DictObj *d = as_dict(self);
    DictEntry *e;
    if (!dict_find(I, d, args[0], &e)) return false;
    if (!e) {
        if (nargs < 2) return key_error(I, args[0]);
        *out = args[1];
        val_incref(*out);
        return true;
    }
    *out = e->val;
    val_incref(*out);
    remove_entry(I, d, e);
    return true;
}

static bool m_dict_popitem(BUILTIN_ARGS)
{
    DictObj *d = as_dict(self);
    if (d->used == 0) return err_raise(I, TDL_ERR_KEY, "'popitem(): dictionary is empty'");
    DictEntry *e = &d->ent[d->fill - 1];
    while (e->key.tag == V_UNDEF) e--;
    TupleObj *t = tuple_alloc(I, 2);
    if (!t) return false;
    t->items[0] = e->key;
    t->items[1] = e->val;
    val_incref(e->key);
    val_incref(e->val);
    remove_entry(I, d, e);
    *out = v_obj(V_TUPLE, &t->h);
    return true;
}

static bool m_dict_update(BUILTIN_ARGS)
{
    DictObj *d = as_dict(self);
    if ((nargs && !dict_update(I, d, args[0])) || !dict_update_kw(I, d, args + nargs, kwnames, nkw)) return false;
    *out = v_none();
    return true;
}

static bool m_dict_setdefault(BUILTIN_ARGS)
{
    DictObj *d = as_dict(self);
    DictEntry *e;
    if (!dict_find(I, d, args[0], &e)) return false;
    if (!e) {
        Value dflt = nargs > 1 ? args[1] : v_none();
        if (!dict_set(I, d, args[0], dflt)) return false;
        *out = dflt;
    } else {
        *out = e->val;
    }
    val_incref(*out);
    return true;
}

static bool m_clear(BUILTIN_ARGS)
{
    dict_clear(I, as_dict(self));
    *out = v_none();
    return true;
}

static bool m_copy(BUILTIN_ARGS)
{
    return dict_copy(I, as_dict(self), out);
}

const BuiltinDef dict_methods[] = {
    {"keys", m_dict_keys, 0, 0, NULL},
    {"values", m_dict_values, 0, 0, NULL},
    {"items", m_dict_items, 0, 0, NULL},
    {"get", m_dict_get, 1, 2, NULL},
    {"pop", m_dict_pop, 1, 2, NULL},
    {"popitem", m_dict_popitem, 0, 0, NULL},
    {"update", m_dict_update, 0, 1, "*"},
    {"setdefault", m_dict_setdefault, 1, 2, NULL},
    {"clear", m_clear, 0, 0, NULL},
    {"copy", m_copy, 0, 0, NULL},
    {NULL, NULL, 0, 0, NULL},
};

/* ---- set operations ---------------------------------------------------------------------------- */

static bool set_contains_hashed(Interp *I, DictObj *s, Value key, uint64_t h, bool *out)
{
    *out = false;
    if (!s->ent) return true;
    DictEntry *found, *slot;
    if (!set_probe(I, s, key, h, &found, &slot)) return false;
    *out = found != NULL;
    return true;
}

/* A set (of tag) holding the items of any iterable x, or x itself (a new reference) when it is a
 * set or frozenset already. */
static bool as_set(Interp *I, Value x, Value *out)
{
    if (is_setlike(x)) {
        val_incref(x);
        *out = x;
        return true;
    }
    return set_from(I, V_SET, x, out);
}

/* CPython's set_intersection: iterate the smaller, keep what the larger holds. */
static bool set_intersection(Interp *I, ValueTag tag, DictObj *a, DictObj *b, Value *out)
{
    DictObj *r = dict_alloc(I, tag);
    if (!r) return false;
    if (b->used > a->used) {
        DictObj *t = a;
        a = b;
        b = t;
    }
    bool ok = true;
    for (size_t pos = 0; ok && dict_next(b, &pos);) {
        DictEntry *e = &b->ent[pos - 1];
        bool in;
        ok = set_contains_hashed(I, a, e->key, e->hash, &in);
        if (ok && in) ok = set_add_hashed(I, r, e->key, e->hash);
    }
    if (!ok) {
        val_decref(I, dictv(r));
        return false;
    }
    *out = dictv(r);
    return true;
}

/* CPython's set_difference (both ways it has of computing it). */
static bool set_difference(Interp *I, ValueTag tag, DictObj *a, DictObj *b, Value *out)
{
    bool ok = true;
    if ((a->used >> 2) > b->used) {
        if (!set_from(I, tag, dictv(a), out)) return false;
        DictObj *r = as_dict(*out);
        for (size_t pos = 0; ok && dict_next(b, &pos);) {
            bool found;
            ok = dict_del(I, r, b->ent[pos - 1].key, &found);
        }
    } else {
        DictObj *r = dict_alloc(I, tag);
        if (!r) return false;
        *out = dictv(r);
        for (size_t pos = 0; ok && dict_next(a, &pos);) {
            DictEntry *e = &a->ent[pos - 1];
            bool in;
            ok = set_contains_hashed(I, b, e->key, e->hash, &in);
            if (ok && !in) ok = set_add_hashed(I, r, e->key, e->hash);
        }
    }
    if (!ok) val_decref(I, *out);
    return ok;
}

/* In place: s ^= o (CPython's set_symmetric_difference_update over a set o). */
static bool set_symdiff_update(Interp *I, DictObj *s, DictObj *o)
{
    if (s == o) {
        dict_clear(I, s);
        return true;
    }
    for (size_t pos = 0; dict_next(o, &pos);) {
        DictEntry *e = &o->ent[pos - 1];
        DictEntry *found = NULL, *slot;
        if (!set_ensure_table(I, s) || !set_probe(I, s, e->key, e->hash, &found, &slot)) return false;
        if (found) remove_entry(I, s, found);
        else if (!set_add_hashed(I, s, e->key, e->hash)) return false;
    }
    return true;
}

/* a op b for sets a and b; the result has a's type. */
static bool set_op(Interp *I, LangOp op, Value a, Value b, Value *out)
{
    ValueTag tag = (ValueTag)a.tag;
    DictObj *x = as_dict(a), *y = as_dict(b);
    switch (op) {
    case OP_BITOR:
        if (!set_from(I, tag, a, out)) return false;
        if (!set_update(I, as_dict(*out), b)) {
            val_decref(I, *out);
            return false;
        }
        return true;
    case OP_BITAND: return set_intersection(I, tag, x, y, out);
    case OP_SUB: return set_difference(I, tag, x, y, out);
    default:    /* OP_BITXOR: a copy of b, updated with a */
        if (!set_from(I, tag, b, out)) return false;
        if (!set_symdiff_update(I, as_dict(*out), x)) {
            val_decref(I, *out);
            return false;
        }
        return true;
    }
}

bool dict_binop(Interp *I, LangOp op, Value a, Value b, Value *out, bool *handled)
{
    *handled = false;
    if (is_setlike(a) && is_setlike(b) && (op == OP_BITOR || op == OP_BITAND || op == OP_SUB || op == OP_BITXOR)) {
        *handled = true;
        return set_op(I, op, a, b, out);
    }
    if (a.tag == V_DICT && b.tag == V_DICT && op == OP_BITOR) {
        *handled = true;
        if (!dict_copy(I, as_dict(a), out)) return false;
        if (!dict_update(I, as_dict(*out), b)) {
            val_decref(I, *out);
            return false;
        }
        return true;
    }
    return true;
}

bool dict_inplace(Interp *I, LangOp op, Value a, Value b, bool *handled)
{
    *handled = false;
    if (a.tag == V_SET && is_setlike(b) && (op == OP_BITOR || op == OP_BITAND || op == OP_SUB || op == OP_BITXOR)) {
        *handled = true;
        DictObj *s = as_dict(a), *o = as_dict(b);
        if (op == OP_BITOR) return set_update(I, s, b);
        if (op == OP_BITXOR) return set_symdiff_update(I, s, o);
        if (op == OP_SUB) {
            if (s == o) {
                dict_clear(I, s);
                return true;
            }
            for (size_t pos = 0; dict_next(o, &pos);) {
                bool found;
                if (!dict_del(I, s, o->ent[pos - 1].key, &found)) return false;
            }
            return true;
        }
        /* &=: the intersection replaces s's table */
        Value r;
        if (!set_intersection(I, V_SET, s, o, &r)) return false;
        DictObj *t = as_dict(r);
        DictObj tmp = *s;
        s->used = t->used; s->fill = t->fill; s->mask = t->mask; s->ent = t->ent;
        t->used = tmp.used; t->fill = tmp.fill; t->mask = tmp.mask; t->ent = tmp.ent;
        val_decref(I, r);
        return true;
    }
    if (a.tag == V_DICT && b.tag == V_DICT && op == OP_BITOR) {
        *handled = true;
        return dict_update(I, as_dict(a), b);
    }
    return true;
}

/* Whether every key of a is in b. */
static bool set_subset(Interp *I, DictObj *a, DictObj *b, bool *out)
{
    *out = true;
    if (a->used > b->used) {
        *out = false;
        return true;
    }
    for (size_t pos = 0; dict_next(a, &pos);) {
        DictEntry *e = &a->ent[pos - 1];
        bool in;
        if (!set_contains_hashed(I, b, e->key, e->hash, &in)) return false;
        if (!in) {
            *out = false;
            return true;
        }
    }
    return true;
}

bool set_order(Interp *I, LangOp op, Value a, Value b, bool *out)
{
    DictObj *x = as_dict(a), *y = as_dict(b);
    switch (op) {
    case OP_LE: return set_subset(I, x, y, out);
    case OP_GE: return set_subset(I, y, x, out);
    case OP_LT:
        if (!set_subset(I, x, y, out)) return false;
        *out = *out && x->used < y->used;
        return true;
    default:
        if (!set_subset(I, y, x, out)) return false;
        *out = *out && y->used < x->used;
        return true;
    }
}

bool dict_equal(Interp *I, Value a, Value b, bool *out)
{
    DictObj *x = as_dict(a), *y = as_dict(b);
    if (x->used != y->used) {
        *out = false;
        return true;
    }
    if (a.tag != V_DICT) return set_subset(I, x, y, out);
    if (I->nest >= 1000) return err_raise(I, TDL_ERR_RECURSION, "maximum recursion depth exceeded in comparison");
    I->nest++;
    bool ok = true;
    *out = true;
    for (size_t pos = 0; ok && *out && dict_next(x, &pos);) {
        DictEntry *e = &x->ent[pos - 1];
        Value key = e->key, val = e->val;
        val_incref(key);
        val_incref(val);
        int64_t ix;
        size_t slot;
        ok = dict_lookup(I, y, key, e->hash, &ix, &slot);
        if (ok && ix < 0) *out = false;
        else if (ok) ok = val_equal(I, val, y->ent[ix].val, out);
        val_decref(I, key);
        val_decref(I, val);
    }
    I->nest--;
    return ok;
}

/* ---- set methods -------------------------------------------------------------------------------- */

static bool m_set_add(BUILTIN_ARGS)
{
    if (!dict_set(I, as_dict(self), args[0], v_undef())) return false;
    *out = v_none();
    return true;
}

static bool m_set_discard(BUILTIN_ARGS)
{
    bool found;
    if (!dict_del(I, as_dict(self), args[0], &found)) return false;
    *out = v_none();
    return true;
}

static bool m_set_remove(BUILTIN_ARGS)
{
    bool found;
    if (!dict_del(I, as_dict(self), args[0], &found)) return false;
    if (!found) return key_error(I, args[0]);
    *out = v_none();
    return true;
}

static bool m_set_pop(BUILTIN_ARGS)
{
    DictObj *s = as_dict(self);
    size_t pos = 0;
    DictEntry *e = s->used ? dict_next(s, &pos) : NULL;
    if (!e) return err_raise(I, TDL_ERR_KEY, "'pop from an empty set'");
    *out = e->key;
    val_incref(*out);
    remove_entry(I, s, e);
    return true;
}

/* union/intersection/difference/symmetric_difference/update with any iterables. */
static bool set_method_op(Interp *I, LangOp op, Value self, const Value *args, int nargs, Value *out)
{
    Value acc = self;
    val_incref(acc);
    if (nargs == 0) {
        val_decref(I, acc);
        return set_from(I, (ValueTag)self.tag, self, out);
    }
    for (int k = 0; k < nargs; k++) {
        Value o, r;
        if (!as_set(I, args[k], &o)) {
            val_decref(I, acc);
            return false;
        }
        bool ok = set_op(I, op, acc, o, &r);
        val_decref(I, o);
        val_decref(I, acc);
        if (!ok) return false;
        acc = r;
    }
    *out = acc;
    return true;
}

static bool m_set_union(BUILTIN_ARGS) { return set_method_op(I, OP_BITOR, self, args, nargs, out); }
static bool m_set_intersection(BUILTIN_ARGS) { return set_method_op(I, OP_BITAND, self, args, nargs, out); }
static bool m_set_difference(BUILTIN_ARGS) { return set_method_op(I, OP_SUB, self, args, nargs, out); }
static bool m_set_symmetric_difference(BUILTIN_ARGS) { return set_method_op(I, OP_BITXOR, self, args, nargs, out); }

static bool m_set_update(BUILTIN_ARGS)
{
    for (int k = 0; k < nargs; k++)
        if (!set_update(I, as_dict(self), args[k])) return false;
    *out = v_none();
    return true;
}

static bool set_relation(Interp *I, Value self, Value x, int which, Value *out)
{
    Value o;
    if (!as_set(I, x, &o)) return false;
    bool r, ok;
    if (which == 0) ok = set_subset(I, as_dict(self), as_dict(o), &r);
    else if (which == 1) ok = set_subset(I, as_dict(o), as_dict(self), &r);
    else {
        Value i;
        ok = set_intersection(I, V_SET, as_dict(self), as_dict(o), &i);
        if (ok) {
            r = as_dict(i)->used == 0;
            val_decref(I, i);
        }
    }
    val_decref(I, o);
    if (ok) *out = v_bool(r);
    return ok;
}

static bool m_set_issubset(BUILTIN_ARGS) { return set_relation(I, self, args[0], 0, out); }
static bool m_set_issuperset(BUILTIN_ARGS) { return set_relation(I, self, args[0], 1, out); }
static bool m_set_isdisjoint(BUILTIN_ARGS) { return set_relation(I, self, args[0], 2, out); }

const BuiltinDef set_methods[] = {
    {"add", m_set_add, 1, 1, NULL},
    {"discard", m_set_discard, 1, 1, NULL},
    {"remove", m_set_remove, 1, 1, NULL},
    {"pop", m_set_pop, 0, 0, NULL},
    {"clear", m_clear, 0, 0, NULL},
    {"copy", m_copy, 0, 0, NULL},
    {"update", m_set_update, 0, -1, NULL},
    {"union", m_set_union, 0, -1, NULL},
    {"intersection", m_set_intersection, 0, -1, NULL},
    {"difference", m_set_difference, 0, -1, NULL},
    {"symmetric_difference", m_set_symmetric_difference, 1, 1, NULL},
    {"issubset", m_set_issubset, 1, 1, NULL},
    {"issuperset", m_set_issuperset, 1, 1, NULL},
    {"isdisjoint", m_set_isdisjoint, 1, 1, NULL},
    {NULL, NULL, 0, 0, NULL},
};

const BuiltinDef frozenset_methods[] = {
    {"copy", m_copy, 0, 0, NULL},
    {"union", m_set_union, 0, -1, NULL},
    {"intersection", m_set_intersection, 0, -1, NULL},
    {"difference", m_set_difference, 0, -1, NULL},
    {"symmetric_difference", m_set_symmetric_difference, 1, 1, NULL},
    {"issubset", m_set_issubset, 1, 1, NULL},
    {"issuperset", m_set_issuperset, 1, 1, NULL},
    {"isdisjoint", m_set_isdisjoint, 1, 1, NULL},
    {NULL, NULL, 0, 0, NULL},
};

/* ---- repr ------------------------------------------------------------------------------------- */

bool dict_repr(Interp *I, Value v, Buf *b, bool (*repr_item)(Interp *, Value, Buf *, const void *),
               const void *ctx)
{
    if (v.tag == V_DICTVIEW) {
        DictViewObj *dv = (DictViewObj *)v.o;
        buf_printf(b, "%s([", val_type_name(v));
        bool first = true;
        for (size_t pos = 0; dict_next(dv->d, &pos); first = false) {
            DictEntry *e = &dv->d->ent[pos - 1];
            if (!first) buf_puts(b, ", ");
            if (dv->kind == DV_ITEMS) buf_puts(b, "(");
            if (dv->kind != DV_VALUES && !repr_item(I, e->key, b, ctx)) return false;
            if (dv->kind == DV_ITEMS) buf_puts(b, ", ");
            if (dv->kind != DV_KEYS && !repr_item(I, e->val, b, ctx)) return false;
            if (dv->kind == DV_ITEMS) buf_puts(b, ")");
        }
        buf_puts(b, "])");
        return true;
    }
    DictObj *d = as_dict(v);
    if (v.tag != V_DICT && d->used == 0) {
        buf_printf(b, "%s()", val_type_name(v));
        return true;
    }
    if (v.tag == V_FROZENSET) buf_puts(b, "frozenset(");
    buf_puts(b, "{");
    bool first = true;
    for (size_t pos = 0; dict_next(d, &pos); first = false) {
        DictEntry *e = &d->ent[pos - 1];
        if (!first) buf_puts(b, ", ");
        if (!repr_item(I, e->key, b, ctx)) return false;
        if (v.tag == V_DICT) {
            buf_puts(b, ": ");
            if (!repr_item(I, e->val, b, ctx)) return false;
        }
        if (b->nomem) return err_nomem(I);
    }
    buf_puts(b, v.tag == V_FROZENSET ? "})" : "}");
    return true;
}
