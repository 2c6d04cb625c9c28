/* fuzz_embed.c — libFuzzer harness for the embedding API (tdl.h): the input is a little program
 * of API calls, one byte choosing each call and the bytes after it its operands.
 *
 * State: two interpreter slots, 16 handle slots (each remembering its interpreter), 8 DLPack
 * exports not yet given away. The calls: open, close (then misuse checks while the closed
 * interpreter is still held alive by a handle), run (a snippet from a table or code from the
 * input), values of every kind, globals, attributes, calls with positional and keyword arguments
 * (tdl_call and tdl_call_name), C builtins registered with table or fuzzed signatures whose
 * bodies call back into tdl, raise, return an argument or close the interpreter, tensors copied
 * and borrowed from host memory of fuzzed geometry, DLPack export, import (into either
 * interpreter, plain and versioned) and deletion, host-made DLPack tensors of fuzzed dtype,
 * device, offset and version, tdl_tensor_read (every element is read), tdl_dup, tdl_value_free.
 *
 * What the harness must not do, it does not: it never uses a freed handle, never calls into an
 * interpreter that may have been freed (after tdl_close, only tdl_value_free of its handles and
 * the deleters of its exports), never imports one DLManagedTensor twice, and gives tdl host
 * memory that covers every element of the geometry it declares. At the end it frees and closes
 * everything, and checks that each borrowed buffer and host DLPack tensor was released exactly
 * once (LeakSanitizer catches the rest). */
#include "fuzz_common.h"

#include <dlpack/dlpack.h>

/* DLPack 1.0's versioned struct (Debian's dlpack.h 0.6 lacks it; tdl.h only declares it). */
typedef struct HostDLV {
    uint32_t major, minor;
    void *manager_ctx;
    void (*deleter)(struct HostDLV *self);
    uint64_t flags;
    DLTensor dl_tensor;
} HostDLV;

enum { NI = 2, NH = 16, NX = 8, MAX_OPS = 96 };

typedef struct Handle {
    tdl_value *v;
    int slot;                   /* the interpreter slot it came from */
    unsigned gen;               /* that slot's generation: an older one is closed */
} Handle;

typedef struct Export {
    void *mt;                   /* DLManagedTensor or HostDLV */
    bool versioned;
} Export;

/* Host memory handed to tdl: released (by tdl's release callback or DLPack deleter) exactly once. */
typedef struct HostBuf {
    int released;
    bool versioned;
    union {
        DLManagedTensor mt;
        HostDLV mtv;
    } dl;
    int64_t shape[4], strides[4];
    struct HostBuf *next;
    unsigned char data[];
} HostBuf;

static struct {
    const uint8_t *p, *end;
    tdl_interp *T[NI];
    unsigned gen[NI];
    Handle h[NH];
    Export x[NX];
    HostBuf *bufs;
} S;

static uint8_t byte(void) { return S.p < S.end ? *S.p++ : 0; }
static int64_t small_int(void) { return (int64_t)(int8_t)byte(); }

static void check(bool ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_embed: %s\n", what);
        abort();
    }
}

/* The interpreter of slot i, or NULL when it is not open. */
static tdl_interp *interp(int i) { return S.T[i % NI]; }

/* A handle operand: any slot (NULL when empty), of an open or closed interpreter (tdl checks). */
static tdl_value *handle(void) { return S.h[byte() % NH].v; }

static void put_handle(int slot, tdl_value *v)
{
    if (!v)
        return;
    int k = byte() % NH;
    tdl_value_free(S.h[k].v);
    S.h[k] = (Handle){v, slot, S.gen[slot]};
}

/* A kept export, or a new host-made DLPack tensor given away: the slot is emptied either way. */
static void put_export(void *mt, bool versioned)
{
    if (!mt)
        return;
    int k = byte() % NX;
    if (S.x[k].mt) {
        if (S.x[k].versioned)
            ((HostDLV *)S.x[k].mt)->deleter(S.x[k].mt);
        else
            ((DLManagedTensor *)S.x[k].mt)->deleter(S.x[k].mt);
    }
    S.x[k] = (Export){mt, versioned};
}

static void released(HostBuf *b)
{
    check(b->released == 0, "a host buffer was released twice");
    b->released = 1;
}
static void on_release(void *ud, void *data) { released(ud); }
static void on_delete(DLManagedTensor *self) { released(self->manager_ctx); }
static void on_delete_v(HostDLV *self) { released(self->manager_ctx); }

/* Fuzzed geometry with host memory that covers it: ndim 0-3, sizes 0-4, strides -4..4 or C order.
 * Returns the buffer (on S.bufs) with *data at element (0, ..., 0); es is the element size. */
static HostBuf *host_tensor(size_t es, int *ndim, bool *strided, void **data)
{
    int nd = byte() % 4;
    bool st = byte() & 1;
    int64_t shape[4], strides[4], lo = 0, hi = 0, c = 1;
    bool empty = false;
    for (int k = nd - 1; k >= 0; k--) {
        shape[k] = byte() % 5;
        strides[k] = st ? (int64_t)(byte() % 9) - 4 : c;
        c *= shape[k] ? shape[k] : 1;
        empty |= shape[k] == 0;
    }
    for (int k = 0; k < nd && !empty; k++) {
        int64_t span = (shape[k] - 1) * strides[k];
        if (span < 0)
            lo += span;
        else
            hi += span;
    }
    size_t n = (size_t)(hi - lo + 2);   /* one spare element: a misaligned offset stays inside */
    HostBuf *b = calloc(1, sizeof *b + n * es);
    check(b != NULL, "out of memory");
    for (size_t i = 0; i < n * es; i++)
        b->data[i] = (unsigned char)(i * 37 + 11);
    memcpy(b->shape, shape, sizeof shape);
    memcpy(b->strides, strides, sizeof strides);
    b->next = S.bufs;
    S.bufs = b;
    *ndim = nd;
    *strided = st;
    *data = b->data + (size_t)(-lo) * es;
    return b;
}

static tdl_dtype dtype(void) { return (tdl_dtype)(byte() % 7); }  /* 0 (ANY) and 6 are not dtypes */

/* Reads every element a tdl_tensor_info describes. */
static void read_all(const tdl_tensor_info *info)
{
    int64_t idx[64] = {0}, n = 0;
    check(info->ndim >= 0 && info->ndim <= 64, "tdl_tensor_read: bad ndim");
    for (int k = 0; k < info->ndim; k++)
        n = k ? n * info->shape[k] : info->shape[k];
    if (info->ndim == 0)
        n = 1;
    check(n == info->numel, "tdl_tensor_read: numel is not the product of the shape");
    for (int64_t i = 0; i < n; i++) {
        int64_t off = 0;
        for (int k = 0; k < info->ndim; k++)
            off += idx[k] * info->strides[k];
        fuzz_write(NULL, (const char *)info->data + off * (int64_t)info->itemsize, info->itemsize);
        for (int k = info->ndim - 1; k >= 0 && ++idx[k] == info->shape[k]; k--)
            idx[k] = 0;
    }
}

static const char *const snippets[] = {
    "def f(x, y=2, *, z=3):\n    return x * y + z\n",
    "t = arange(12).reshape(3, 4)\n",
    "x = tensor([1.0, 2.0, 3.0])\n",
    "i, j = dims(2)\nu = t[i, j]\nw = u.sum(j)\n",
    "s = 'h\xc3\xa9llo'\nl = [1, 2.5, None, 'x', (1,)]\n",
    "e = lambda: 1 // 0\n",
    "exit(3)\n",
    "y = t.sum(0)\nz = t.T.contiguous()\n",
    "def g(a, b):\n    return a @ b\n",
    "c = cb(t, 2)\n",
    "x[0] = 5\n",
    "x.add_(1)\n",
    "del x\n",
    "k = x.order(i) if False else x.float()\n",
    "h = [t, x, t.T, t[1:]]\n",
    "f(e())\n",
    "q = cb(cb(1))\n",
    "t = t.float().softmax(-1)\n",
    "r = x.tolist() + [len(l)]\n",
};
static const char *const names[] = {"f", "t", "x", "i", "u", "w", "s", "l", "e", "y", "z", "g", "c", "k", "h",
                                    "q", "r", "len", "print", "tensor", "zeros", "cb", "nope", "argv", ""};
static const char *const attrs[] = {"shape", "sum", "T", "dtype", "reshape", "size", "item", "tolist",
                                    "order", "append", "nope", "float", "__class__", "ndim"};
static const char *const kwnames[] = {"y", "z", "dim", "keepdim", "dtype", "k", "scale", "out", "x", "a", "", "y"};
static const char *const callees[] = {"f", "len", "tensor", "zeros", "g", "cb", "t.sum", "x.reshape", "e",
                                      "vision.roi_align", "nope.x", "print", "sorted", "exit", "max", "t.nope",
                                      "", ".", "f.", "s.upper"};
static const char *const signatures[] = {
    "x: tensor, k: int = 3, *, scale: float = 1.0, out: tensor? = None",
    "a, b = None",
    "",
    "*, k: str = 'a'",
    "x: list, y: tuple = None",
    "x: callable",
    "x: bool, y: none = None",
    "a: int = 1, b",
    "x: nope",
    "x: int = 'a'",
};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define PICK(a) (a)[byte() % COUNT(a)]

/* The C builtin: what it does depends on ud. */
static tdl_status cfn(tdl_interp *T, tdl_value *const *args, int nargs, tdl_value **result, void *ud)
{
    switch ((uintptr_t)ud % 8) {
    case 0: return TDL_OK;
    case 1: *result = nargs ? args[0] : NULL; return TDL_OK;
    case 2: return tdl_raise(T, (tdl_error_kind)((uintptr_t)ud % 30), "raised by a C builtin (%d args)", nargs);
    case 3: return tdl_call_name(T, "len", nargs ? 1 : 0, args, 0, NULL, NULL, result);
    case 4: return tdl_int(T, nargs, result);
    case 5:
        if (nargs)
            tdl_value_free(args[0]);    /* does nothing: the call owns its argument handles */
        return tdl_run_string(T, "nested = 1\n", NULL);
    case 6: tdl_close(T); return TDL_OK;     /* does nothing from inside a call */
    default: return nargs ? tdl_dup(T, args[nargs - 1], result) : TDL_OK;
    }
}

static void op_open(void)
{
    int i = byte() % NI;
    if (S.T[i])
        return;
    S.T[i] = fuzz_open(0);
    check(S.T[i] != NULL, "tdl_open failed");
    S.gen[i]++;
}

/* Closes slot i; while one of its handles keeps the interpreter alive, everything is misuse. */
static void close_slot(int i)
{
    tdl_interp *T = S.T[i];
    if (!T)
        return;
    tdl_close(T);
    S.T[i] = NULL;
    for (int k = 0; k < NH; k++) {
        if (!S.h[k].v || S.h[k].slot != i || S.h[k].gen != S.gen[i])
            continue;
        tdl_value *out = (tdl_value *)1;
        int64_t n;
        check(tdl_run_string(T, "1", NULL) == TDL_MISUSE, "a closed interpreter ran code");
        check(tdl_typeof(T, S.h[k].v) == TDL_TINVALID, "a handle of a closed interpreter is valid");
        check(tdl_to_int(T, S.h[k].v, &n) == TDL_MISUSE, "reading a handle of a closed interpreter");
        check(tdl_dup(T, S.h[k].v, &out) == TDL_MISUSE && out == NULL, "tdl_dup after close");
        check(tdl_error_kind_of(T) == TDL_ERR_NONE, "an error after close");
        tdl_close(T);
        break;
    }
}

static void op_run(void)
{
    tdl_interp *T = interp(byte());
    if (!T)
        return;
    char code[256];
    if (byte() & 1) {
        size_t n = byte() % 64, k = 0;
        while (k < n && S.p < S.end)
            code[k++] = (char)byte();
        code[k] = '\0';
    } else {
        snprintf(code, sizeof code, "%s", PICK(snippets));
    }
    if (byte() % 8 == 0)
        tdl_interrupt(T);       /* cleared when the run starts */
    fuzz_arm(T);
    tdl_status st = tdl_run_string(T, code, "<fuzz>");
    fuzz_disarm();
    fuzz_check_status(T, st);
}

static void op_make(void)
{
    int slot = byte() % NI;
    tdl_interp *T = S.T[slot];
    if (!T)
        return;
    tdl_value *v = NULL, *items[4];
    tdl_status st;
    switch (byte() % 9) {
    case 0: st = tdl_none(T, &v); break;
    case 1: st = tdl_bool(T, byte() & 1, &v); break;
    case 2: {
        int64_t near[] = {0, INT64_MIN + 128, INT64_MAX - 255 - 127};  /* reaching both ends */
        st = tdl_int(T, PICK(near) + byte() + small_int(), &v);
        break;
    }
    case 3: {
        static const double d[] = {0.5, -0.0, 1e308, 1.0 / 0.0, 0.0 / 0.0, 3};
        st = tdl_float(T, PICK(d), &v);
        break;
    }
    case 4: {
        char s[8];
        size_t n = byte() % 8;
        for (size_t k = 0; k < n; k++)
            s[k] = (char)byte();
        if (byte() & 1) {
            st = tdl_str_len(T, s, n, &v);
        } else {
            s[n] = '\0';
            st = tdl_str(T, s, &v);
        }
        break;
    }
    case 5: case 6: {
        size_t n = byte() % 5;
        for (size_t k = 0; k < n; k++)
            items[k] = handle();
        st = byte() & 1 ? tdl_tuple(T, n, n ? items : NULL, &v) : tdl_list(T, n, n ? items : NULL, &v);
        break;
    }
    case 7: st = tdl_dup(T, handle(), &v); break;
    default: st = tdl_list_append(T, handle(), handle()); break;
    }
    fuzz_check_status(T, st);
    check(st == TDL_OK || v == NULL, "a failed call left a handle");
    put_handle(slot, v);
}

static void op_read(void)
{
    int slot = byte() % NI;
    tdl_interp *T = S.T[slot];
    if (!T)
        return;
    tdl_value *v = handle(), *out = NULL;
    bool b;
    int64_t i;
    double d;
    const char *s = NULL;
    size_t n;
    tdl_status st = TDL_OK;
    switch (byte() % 10) {
    case 0: st = tdl_to_bool(T, v, &b); break;
    case 1: st = tdl_to_int(T, v, &i); break;
    case 2: st = tdl_to_float(T, v, &d); break;
    case 3:
        st = tdl_to_str(T, v, &s, &n);
        if (st == TDL_OK)
            check(strlen(s) <= n, "tdl_to_str: a NUL-terminated string longer than its length"),
                fuzz_write(NULL, s, n);
        break;
    case 4: st = tdl_seq_len(T, v, &n); break;
    case 5: st = tdl_seq_get(T, v, byte() % 6, &out); break;
    case 6:
        st = tdl_repr(T, v, &out);
        break;
    case 7: {
        const char *tn = tdl_type_name(T, v);
        check(tn != NULL, "tdl_type_name gave NULL");
        fuzz_write(NULL, tn, strlen(tn));
        tdl_type ty = tdl_typeof(T, v);
        check(ty >= TDL_TINVALID && ty <= TDL_TOTHER, "tdl_typeof: no such type");
        break;
    }
    case 8: st = tdl_get_attr(T, v, PICK(attrs), &out); break;
    default: {
        tdl_tensor_info info;
        st = tdl_tensor_read(T, v, dtype(), &info);
        if (st == TDL_OK)
            read_all(&info);
        break;
    }
    }
    fuzz_check_status(T, st);
    put_handle(slot, out);
}

static void op_globals(void)
{
    int slot = byte() % NI;
    tdl_interp *T = S.T[slot];
    if (!T)
        return;
    tdl_value *out = NULL;
    tdl_status st;
    switch (byte() % 4) {
    case 0: st = tdl_get_global(T, PICK(names), &out); break;
    case 1: st = tdl_set_global(T, PICK(names), handle()); break;
    case 2: st = tdl_import(T, byte() & 1 ? "vision" : "nope", &out); break;
    default: {
        static const char *const argv[] = {"a", "", "b"};
        st = tdl_set_argv(T, byte() % 4, argv);
        break;
    }
    }
    fuzz_check_status(T, st);
    put_handle(slot, out);
}

static void op_call(void)
{
    int slot = byte() % NI;
    tdl_interp *T = S.T[slot];
    if (!T)
        return;
    tdl_value *args[4], *kwargs[3], *out = NULL;
    const char *kw[3];
    int nargs = byte() % 5, nkw = byte() % 4;
    for (int k = 0; k < nargs; k++)
        args[k] = handle();
    for (int k = 0; k < nkw; k++)
        kw[k] = PICK(kwnames), kwargs[k] = handle();
    bool by_name = byte() & 1, want = byte() % 4 != 0;
    tdl_value *f = by_name ? NULL : handle();
    const char *callee = by_name ? PICK(callees) : NULL;
    fuzz_arm(T);
    tdl_status st = by_name ? tdl_call_name(T, callee, nargs, args, nkw, kw, kwargs, want ? &out : NULL)
                            : tdl_call(T, f, nargs, args, nkw, kw, kwargs, want ? &out : NULL);
    fuzz_disarm();
    fuzz_check_status(T, st);
    put_handle(slot, out);
}

static void op_register(void)
{
    tdl_interp *T = interp(byte());
    if (!T)
        return;
    char sig[48];
    const char *s;
    if (byte() & 1) {
        size_t n = byte() % 40, k = 0;
        while (k < n && S.p < S.end)
            sig[k++] = (char)byte();
        sig[k] = '\0';
        s = sig;
    } else {
        s = PICK(signatures);
    }
    static const char *const fnames[] = {"cb", "cb", "len", "print", ""};
    tdl_status st = tdl_register(T, PICK(fnames), s, cfn, (void *)(uintptr_t)byte());
    fuzz_check_status(T, st);
}

static void op_host_tensor(void)
{
    int slot = byte() % NI;
    tdl_interp *T = S.T[slot];
    if (!T)
        return;
    tdl_dtype dt = dtype();
    size_t es = tdl_dtype_size(dt) ? tdl_dtype_size(dt) : 8;
    int nd;
    bool strided;
    void *data;
    HostBuf *b = host_tensor(es, &nd, &strided, &data);
    tdl_value *v = NULL;
    tdl_status st;
    if (byte() & 1) {
        st = tdl_tensor_from_host(T, dt, nd, b->shape, strided ? b->strides : NULL, data, &v);
        b->released = 1;        /* copied: tdl keeps no pointer into it */
    } else {
        st = tdl_tensor_borrow(T, dt, nd, b->shape, strided ? b->strides : NULL, data, on_release, b, &v);
    }
    fuzz_check_status(T, st);
    put_handle(slot, v);
}

static void op_host_dlpack(void)
{
    int slot = byte() % NI;
    static const DLDataType types[] = {{kDLFloat, 32, 1}, {kDLFloat, 64, 1}, {kDLInt, 32, 1}, {kDLInt, 64, 1},
                                       {(uint8_t)6 /* kDLBool, DLPack 0.8 */, 8, 1}, {kDLUInt, 8, 1}, {kDLFloat, 32, 4}, {kDLFloat, 16, 1},
                                       {kDLInt, 8, 1}, {kDLBfloat, 16, 1}, {kDLInt, 0, 1}, {kDLInt, 64, 0}};
    static const DLDevice devices[] = {{kDLCPU, 0}, {kDLCPU, 0}, {kDLCPU, 0}, {kDLCUDAHost, 0}, {kDLCUDAManaged, 0},
                                       {kDLCUDA, 0}, {kDLCPU, 7}, {(DLDeviceType)99, 0}};
    DLDataType t = PICK(types);
    size_t es = (size_t)(t.bits / 8 ? t.bits / 8 : 1) * (t.lanes ? t.lanes : 1);
    int nd;
    bool strided;
    void *data;
    HostBuf *b = host_tensor(es, &nd, &strided, &data);
    DLTensor dl = {.data = b->data, .device = PICK(devices), .ndim = byte() % 8 == 0 ? 65 : nd, .dtype = t,
                   .shape = b->shape, .strides = strided ? b->strides : NULL,
                   .byte_offset = (uint64_t)((char *)data - (char *)b->data) + (byte() % 8 == 0)};
    bool versioned = byte() & 1;
    b->versioned = versioned;
    if (versioned)
        b->dl.mtv = (HostDLV){.major = byte() % 8 == 0 ? 2 : 1, .manager_ctx = b, .deleter = on_delete_v,
                              .flags = byte() & 1, .dl_tensor = dl};
    else
        b->dl.mt = (DLManagedTensor){.dl_tensor = dl, .manager_ctx = b, .deleter = on_delete};
    put_export(versioned ? (void *)&b->dl.mtv : (void *)&b->dl.mt, versioned);
    (void)slot;
}

static void op_dlpack(void)
{
    int slot = byte() % NI;
    tdl_interp *T = S.T[slot];
    int k = byte() % NX;
    switch (byte() % 3) {
    case 0: {       /* export */
        if (!T)
            return;
        void *mt = NULL;
        bool versioned = byte() & 1;
        tdl_value *v = handle();
        tdl_status st = versioned ? tdl_tensor_to_dlpack_versioned(T, v, (struct DLManagedTensorVersioned **)&mt)
                                  : tdl_tensor_to_dlpack(T, v, (struct DLManagedTensor **)&mt);
        fuzz_check_status(T, st);
        if (st == TDL_OK) {
            /* the exported memory is readable */
            DLTensor *dl = versioned ? &((HostDLV *)mt)->dl_tensor : &((DLManagedTensor *)mt)->dl_tensor;
            int64_t cs[64], c = 1;
            check(dl->ndim >= 0 && dl->ndim <= 64, "an export with a bad ndim");
            for (int d = dl->ndim - 1; d >= 0; d--) {
                cs[d] = c;
                c *= dl->shape[d];
            }
            if (c > 0) {    /* (an empty one may have no data pointer) */
                check(dl->data != NULL, "an export without data");
                tdl_tensor_info info = {.ndim = dl->ndim, .shape = dl->shape, .numel = c,
                                        .strides = dl->strides ? dl->strides : cs,
                                        .data = (char *)dl->data + dl->byte_offset,
                                        .itemsize = (size_t)(dl->dtype.bits / 8)};
                read_all(&info);
            }
        }
        put_export(mt, versioned);
        break;
    }
    case 1: {       /* import: tdl takes the tensor over, whatever happens */
        if (!T || !S.x[k].mt)
            return;
        Export x = S.x[k];
        S.x[k].mt = NULL;
        tdl_value *v = NULL;
        tdl_status st = x.versioned ? tdl_tensor_from_dlpack_versioned(T, x.mt, &v)
                                    : tdl_tensor_from_dlpack(T, x.mt, &v);
        fuzz_check_status(T, st);
        put_handle(slot, v);
        break;
    }
    default:        /* the consumer is done with it */
        if (S.x[k].mt) {
            Export x = S.x[k];
            S.x[k].mt = NULL;
            if (x.versioned)
                ((HostDLV *)x.mt)->deleter(x.mt);
            else
                ((DLManagedTensor *)x.mt)->deleter(x.mt);
        }
        break;
    }
}

static void op_contiguous(void)
{
    int slot = byte() % NI;
    tdl_interp *T = S.T[slot];
    if (!T)
        return;
    tdl_value *v = NULL;
    tdl_status st = tdl_tensor_contiguous(T, handle(), &v);
    fuzz_check_status(T, st);
    put_handle(slot, v);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_env();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    memset(&S, 0, sizeof S);
    S.p = data;
    S.end = data + size;
    S.T[0] = fuzz_open(0);
    check(S.T[0] != NULL, "tdl_open failed");
    for (int n = 0; n < MAX_OPS && S.p < S.end; n++) {
        switch (byte() % 13) {
        case 0: op_open(); break;
        case 1: close_slot(byte() % NI); break;
        case 2: case 3: op_run(); break;
        case 4: op_make(); break;
        case 5: op_read(); break;
        case 6: op_globals(); break;
        case 7: op_call(); break;
        case 8: op_register(); break;
        case 9: op_host_tensor(); break;
        case 10: op_host_dlpack(); break;
        case 11: op_dlpack(); break;
        default: op_contiguous(); break;
        }
    }
    /* Everything goes, in an order that byte picks: exports, handles, interpreters. */
    bool close_first = byte() & 1;
    if (close_first)
        for (int i = 0; i < NI; i++)
            close_slot(i);
    for (int k = 0; k < NX; k++) {
        if (!S.x[k].mt)
            continue;
        if (S.x[k].versioned)
            ((HostDLV *)S.x[k].mt)->deleter(S.x[k].mt);
        else
            ((DLManagedTensor *)S.x[k].mt)->deleter(S.x[k].mt);
    }
    for (int k = 0; k < NH; k++) {
        tdl_value_free(S.h[k].v);
        S.h[k].v = NULL;
    }
    for (int i = 0; i < NI; i++)
        close_slot(i);
    while (S.bufs) {
        HostBuf *b = S.bufs;
        S.bufs = b->next;
        check(b->released == 1, "a host buffer was never released");
        free(b);
    }
    return 0;
}
