/* npy.c — NumPy's .npy and .npz files: load into malloc'd views, save from views of any strides.
 *
 * Formats: numpy/lib/format.py (the .npy header is a Python dict literal after a magic string) and
 * PKWARE's APPNOTE.TXT (an .npz is a ZIP archive of .npy members, stored or deflated; zlib does
 * the raw inflate/deflate and the CRC-32). Every length read from a file is checked against the
 * bytes actually there before it is used, so no input makes us read out of bounds. Sizes come
 * from the ZIP central directory (numpy writes ZIP64 local headers whose sizes are 0xFFFFFFFF);
 * ZIP64 central-directory fields and the ZIP64 end record are read, never written.
 *
 * Writes go to a temporary file next to the target and are renamed over it, so a reader never
 * sees half a file. Depends on fcdim.h, the C library, POSIX file calls and zlib. */
#include "fcdim.h"
#include "mem.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.c reads and writes little-endian data in place; port the byte swaps first"
#endif

static FcStatus fail(FcError *err, FcStatus st, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return st;
}

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static void wr16(unsigned char *p, uint32_t v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); }
static void wr32(unsigned char *p, uint32_t v) { wr16(p, v); wr16(p + 2, v >> 16); }

/* ---- the .npy header ---- */

typedef struct NpyHeader {
    FcDType dtype;
    bool fortran;
    int ndim;
    int64_t shape[FC_MAX_DIMS];
    size_t data_offset;     /* bytes before the array data */
    size_t nbytes;          /* bytes of array data */
} NpyHeader;

/* A cursor over the header text [p, end). */
typedef struct Scan {
    const char *p, *end;
} Scan;

static void skip_ws(Scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static bool eat(Scan *s, char c)
{
    skip_ws(s);
    if (s->p < s->end && *s->p == c) {
        s->p++;
        return true;
    }
    return false;
}

/* A Python string literal in single or double quotes, without escapes (numpy never writes any
 * in these keys and values); copies at most cap-1 characters into out. */
static bool scan_string(Scan *s, char *out, size_t cap)
{
    skip_ws(s);
    if (s->p >= s->end || (*s->p != '\'' && *s->p != '"'))
        return false;
    char q = *s->p++;
    size_t n = 0;
    while (s->p < s->end && *s->p != q) {
        if (*s->p == '\\' || *s->p == '\n')
            return false;
        if (n + 1 < cap)
            out[n++] = *s->p;
        s->p++;
    }
    if (s->p >= s->end)
        return false;
    s->p++;
    out[n] = '\0';
    return true;
}

static bool scan_word(Scan *s, const char *w)
{
    skip_ws(s);
    size_t n = strlen(w);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n) != 0)
        return false;
    const char *after = s->p + n;
    if (after < s->end && (after[0] == '_' || (after[0] >= 'a' && after[0] <= 'z') ||
                           (after[0] >= 'A' && after[0] <= 'Z') || (after[0] >= '0' && after[0] <= '9')))
        return false;
    s->p = after;
    return true;
}

/* The value of 'descr': tdl's dtypes but bfloat16 (NumPy has none) in little-endian form. '='
 * (native) is taken as little-endian; '|' (not applicable) only for the one-byte ones. */
static FcStatus parse_descr(const char *d, FcDType *out, const char *name, FcError *err)
{
    static const struct {
        const char *code;
        FcDType t;
    } codes[] = {{"f4", FC_FLOAT32}, {"f8", FC_FLOAT64}, {"i4", FC_INT32}, {"i8", FC_INT64}, {"b1", FC_BOOL},
                 {"u1", FC_UINT8},   {"i1", FC_INT8},    {"i2", FC_INT16}, {"f2", FC_FLOAT16}};
    if (d[0] && strcmp(d + 1, "O") == 0)
        return fail(err, FC_ERR_IO, "%s: object arrays are not supported (descr '%s')", name, d);
    if (d[0] == '<' || d[0] == '=' || d[0] == '|' || d[0] == '>')
        for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
            if (strcmp(d + 1, codes[i].code) != 0)
                continue;
            bool one_byte = fc_dtype_size(codes[i].t) == 1;
            if (d[0] == '>' && !one_byte)
                return fail(err, FC_ERR_IO, "%s: big-endian data is not supported (descr '%s')", name, d);
            if (d[0] == '|' && !one_byte)
                break;
            *out = codes[i].t;
            return FC_OK;
        }
    return fail(err, FC_ERR_IO,
                "%s: unsupported dtype '%s' (tdl has bool, uint8, int8, int16, int32, int64, float16, float32, float64)",
                name, d);
}

/* Parses the dict literal text[0..len) into h (all but data_offset and nbytes). */
static FcStatus parse_dict(const char *text, size_t len, NpyHeader *h, const char *name, FcError *err)
{
    Scan s = {text, text + len};
    bool have_descr = false, have_order = false, have_shape = false;
    if (!eat(&s, '{'))
        return fail(err, FC_ERR_IO, "%s: corrupt header: expected '{'", name);
    while (!eat(&s, '}')) {
        char key[32], val[32];
        if (!scan_string(&s, key, sizeof key))
            return fail(err, FC_ERR_IO, "%s: corrupt header: expected a quoted key", name);
        if (!eat(&s, ':'))
            return fail(err, FC_ERR_IO, "%s: corrupt header: expected ':' after '%s'", name, key);
        if (strcmp(key, "descr") == 0 && !have_descr) {
            skip_ws(&s);
            if (s.p < s.end && *s.p == '[')
                return fail(err, FC_ERR_IO, "%s: structured dtypes are not supported", name);
            if (!scan_string(&s, val, sizeof val))
                return fail(err, FC_ERR_IO, "%s: corrupt header: 'descr' is not a string", name);
            FcStatus st = parse_descr(val, &h->dtype, name, err);
            if (st != FC_OK)
                return st;
            have_descr = true;
        } else if (strcmp(key, "fortran_order") == 0 && !have_order) {
            if (scan_word(&s, "True"))
                h->fortran = true;
            else if (scan_word(&s, "False"))
                h->fortran = false;
            else
                return fail(err, FC_ERR_IO, "%s: corrupt header: 'fortran_order' is not True or False", name);
            have_order = true;
        } else if (strcmp(key, "shape") == 0 && !have_shape) {
            if (!eat(&s, '('))
                return fail(err, FC_ERR_IO, "%s: corrupt header: 'shape' is not a tuple", name);
            h->ndim = 0;
            while (!eat(&s, ')')) {
                skip_ws(&s);
                if (s.p >= s.end || *s.p < '0' || *s.p > '9')
                    return fail(err, FC_ERR_IO, "%s: corrupt header: bad dimension in 'shape'", name);
                int64_t d = 0;
                while (s.p < s.end && *s.p >= '0' && *s.p <= '9') {
                    int digit = *s.p++ - '0';
                    if (d > (INT64_MAX - digit) / 10)
                        return fail(err, FC_ERR_IO, "%s: shape is too large (a dimension overflows 64 bits)", name);
                    d = d * 10 + digit;
                }
                if (s.p < s.end && *s.p == 'L')     /* Python 2 long */
                    s.p++;
                if (h->ndim == FC_MAX_DIMS)
                    return fail(err, FC_ERR_IO, "%s: shape has more than %d dimensions", name, FC_MAX_DIMS);
                h->shape[h->ndim++] = d;
                if (!eat(&s, ',')) {
                    if (!eat(&s, ')'))
                        return fail(err, FC_ERR_IO, "%s: corrupt header: expected ',' or ')' in 'shape'", name);
                    /* (5) is the integer 5, not a tuple; numpy writes (5,). */
                    if (h->ndim == 1)
                        return fail(err, FC_ERR_IO, "%s: corrupt header: 'shape' is not a tuple", name);
                    break;
                }
            }
            have_shape = true;
        } else if (strcmp(key, "descr") == 0 || strcmp(key, "fortran_order") == 0 || strcmp(key, "shape") == 0) {
            return fail(err, FC_ERR_IO, "%s: corrupt header: duplicate key '%s'", name, key);
        } else {
            return fail(err, FC_ERR_IO, "%s: corrupt header: unexpected key '%s'", name, key);
        }
        if (!eat(&s, ',')) {
            if (!eat(&s, '}'))
                return fail(err, FC_ERR_IO, "%s: corrupt header: expected ',' or '}'", name);
            break;
        }
    }
    skip_ws(&s);
    if (s.p != s.end)
        return fail(err, FC_ERR_IO, "%s: corrupt header: text after the closing '}'", name);
    if (!have_descr || !have_order || !have_shape)
        return fail(err, FC_ERR_IO, "%s: corrupt header: missing key '%s'", name,
                    !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
    return FC_OK;
}

/* Reads and checks the preamble and header of buf[0..len): everything but the data. */
static FcStatus parse_header(const unsigned char *buf, size_t len, NpyHeader *h, const char *name, FcError *err)
{
    static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    if (len < 6 || memcmp(buf, magic, 6) != 0)
        return fail(err, FC_ERR_IO, "%s: not a .npy file (bad magic)", name);
    if (len < 8)
        return fail(err, FC_ERR_IO, "%s: file is truncated: no format version", name);
    int major = buf[6], minor = buf[7];
    if ((major != 1 && major != 2 && major != 3) || minor != 0)
        return fail(err, FC_ERR_IO, "%s: unsupported .npy format version %d.%d", name, major, minor);
    size_t lenbytes = major == 1 ? 2 : 4;
    if (len < 8 + lenbytes)
        return fail(err, FC_ERR_IO, "%s: file is truncated: no header length", name);
    size_t hlen = major == 1 ? rd16(buf + 8) : rd32(buf + 8);
    size_t start = 8 + lenbytes;
    if (hlen > len - start)
        return fail(err, FC_ERR_IO, "%s: file is truncated: header says %zu bytes of header, found %zu",
                    name, hlen, len - start);
    if (hlen == 0 || buf[start + hlen - 1] != '\n')
        return fail(err, FC_ERR_IO, "%s: corrupt header: it does not end with a newline", name);
    for (size_t i = 0; i < hlen; i++)
        if (buf[start + i] == 0)
            return fail(err, FC_ERR_IO, "%s: corrupt header: it contains a NUL byte", name);
    memset(h, 0, sizeof *h);
    FcStatus st = parse_dict((const char *)buf + start, hlen, h, name, err);
    if (st != FC_OK)
        return st;
    /* The byte size must fit in both int64 (view arithmetic) and size_t (malloc). */
    uint64_t limit = (uint64_t)INT64_MAX < (uint64_t)SIZE_MAX ? (uint64_t)INT64_MAX : (uint64_t)SIZE_MAX;
    uint64_t nbytes = fc_dtype_size(h->dtype);
    bool zero = false;
    for (int k = 0; k < h->ndim; k++)
        zero |= h->shape[k] == 0;
    for (int k = 0; k < h->ndim && !zero; k++) {
        if (nbytes > limit / (uint64_t)h->shape[k])
            return fail(err, FC_ERR_IO, "%s: shape is too large (its byte size overflows)", name);
        nbytes *= (uint64_t)h->shape[k];
    }
    h->nbytes = zero ? 0 : (size_t)nbytes;
    h->data_offset = start + hlen;
    size_t found = len - h->data_offset;
    if (found < h->nbytes)
        return fail(err, FC_ERR_IO, "%s: file is truncated: header says %zu bytes of data, found %zu",
                    name, h->nbytes, found);
    if (found > h->nbytes)
        return fail(err, FC_ERR_IO, "%s: %zu bytes of unexpected data after the array", name, found - h->nbytes);
    return FC_OK;
}

/* Fills out from h with data (whose ownership passes to out): C or Fortran strides. */
static void view_from_header(const NpyHeader *h, void *data, FcView *out)
{
    memset(out, 0, sizeof *out);
    out->dtype = h->dtype;
    out->ndim = h->ndim;
    memcpy(out->shape, h->shape, sizeof(int64_t) * (size_t)h->ndim);
    if (h->fortran)
        fc_fortran_strides(h->ndim, h->shape, out->strides);
    else
        fc_contiguous_strides(h->ndim, h->shape, out->strides);
    out->offset = 0;
    out->data = data;
    /* Any nonzero byte is True: tdl's kernels assume 0 or 1. */
    if (h->dtype == FC_BOOL)
        for (size_t i = 0; i < h->nbytes; i++)
            ((unsigned char *)data)[i] = ((unsigned char *)data)[i] != 0;
}

FcStatus fc_npy_load_mem(const void *buf, size_t len, const char *name_for_messages, FcView *out, FcError *err)
{
    const char *name = name_for_messages ? name_for_messages : "<memory>";
    NpyHeader h;
    FcStatus st = parse_header(buf, len, &h, name, err);
    if (st != FC_OK)
        return st;
    void *data = mem_malloc(h.nbytes ? h.nbytes : 1);
    if (!data)
        return fail(err, FC_ERR_NOMEM, "%s: out of memory for %zu bytes of data", name, h.nbytes);
    memcpy(data, (const unsigned char *)buf + h.data_offset, h.nbytes);
    view_from_header(&h, data, out);
    return FC_OK;
}

/* Reads the whole of path into a malloc'd buffer (at least one byte allocated). */
static FcStatus read_file(const char *path, unsigned char **buf, size_t *len, FcError *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail(err, FC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return fail(err, FC_ERR_IO, "%s: not a regular file", path);
    }
    if ((uint64_t)sb.st_size >= (uint64_t)SIZE_MAX) {
        fclose(f);
        return fail(err, FC_ERR_NOMEM, "%s: file is too large to load", path);
    }
    size_t n = (size_t)sb.st_size;
    unsigned char *b = mem_malloc(n ? n : 1);
    if (!b) {
        fclose(f);
        return fail(err, FC_ERR_NOMEM, "%s: out of memory reading %zu bytes", path, n);
    }
    size_t got = fread(b, 1, n, f);
    bool bad = ferror(f) != 0;
    fclose(f);
    if (bad || got != n) {
        mem_free(b);
        return fail(err, FC_ERR_IO, "%s: read error", path);
    }
    *buf = b;
    *len = n;
    return FC_OK;
}

FcStatus fc_npy_load(const char *path, FcView *out, FcError *err)
{
    unsigned char *buf;
    size_t len;
    FcStatus st = read_file(path, &buf, &len, err);
    if (st != FC_OK)
        return st;
    NpyHeader h;
    st = parse_header(buf, len, &h, path, err);
    if (st != FC_OK) {
        mem_free(buf);
        return st;
    }
    /* Reuse the file buffer for the data rather than holding two copies. */
    memmove(buf, buf + h.data_offset, h.nbytes);
    unsigned char *data = mem_realloc(buf, h.nbytes ? h.nbytes : 1);
    view_from_header(&h, data ? data : buf, out);
    return FC_OK;
}

/* ---- writing .npy ---- */

static FcStatus check_view(const FcView *v, const char *name, FcError *err)
{
    if (!v || (unsigned)v->dtype >= FC_DTYPE__COUNT)
        return fail(err, FC_ERR_VALUE, "%s: cannot save: invalid dtype", name);
    /* torch's .numpy() of a bfloat16 tensor: "Got unsupported ScalarType BFloat16". */
    if (v->dtype == FC_BFLOAT16)
        return fail(err, FC_ERR_TYPE, "%s: cannot save: NumPy has no bfloat16 dtype (Got unsupported ScalarType "
                    "BFloat16); convert with .float() first", name);
    if (v->ndim < 0 || v->ndim > FC_MAX_DIMS)
        return fail(err, FC_ERR_VALUE, "%s: cannot save: %d dimensions (0 to %d allowed)", name, v->ndim,
                    FC_MAX_DIMS);
    uint64_t n = fc_dtype_size(v->dtype);
    bool zero = false;
    for (int k = 0; k < v->ndim; k++) {
        if (v->shape[k] < 0)
            return fail(err, FC_ERR_VALUE, "%s: cannot save: negative dimension %lld", name,
                        (long long)v->shape[k]);
        zero |= v->shape[k] == 0;
    }
    for (int k = 0; k < v->ndim && !zero; k++) {
        if (n > (uint64_t)INT64_MAX / (uint64_t)v->shape[k])
            return fail(err, FC_ERR_VALUE, "%s: cannot save: byte size overflows", name);
        n *= (uint64_t)v->shape[k];
    }
    if (!zero && !v->data)
        return fail(err, FC_ERR_VALUE, "%s: cannot save: view has no data", name);
    return FC_OK;
}

static size_t view_nbytes(const FcView *v) { return (size_t)fc_view_numel(v) * fc_dtype_size(v->dtype); }

/* Writes numpy's header for v (C order, little-endian) into hdr, which holds at least
 * NPY_HEADER_CAP bytes; returns its length, padded so the data starts on a 64-byte boundary. */
#define NPY_HEADER_CAP (16 + 64 + FC_MAX_DIMS * 22 + 64)
static size_t npy_header(const FcView *v, unsigned char *hdr)
{
    static const char *const descr[FC_DTYPE__COUNT] = {"|b1", "<i4", "<i8", "<f4", "<f8",
                                                       "|u1", "|i1", "<i2", "<f2", "?"};
    char dict[NPY_HEADER_CAP];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr[v->dtype]);
    for (int k = 0; k < v->ndim; k++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%s%lld", k ? ", " : "", (long long)v->shape[k]);
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }", v->ndim == 1 ? "," : "");
    /* Version 1.0 has a 2-byte length; 2.0 only when the padded dict would not fit. */
    size_t pre = 10, total = ((pre + (size_t)n + 1 + 63) / 64) * 64;
    int major = 1;
    if (total - pre > 65535) {
        pre = 12;
        total = ((pre + (size_t)n + 1 + 63) / 64) * 64;
        major = 2;
    }
    static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    memcpy(hdr, magic, 6);
    hdr[6] = (unsigned char)major;
    hdr[7] = 0;
    if (major == 1)
        wr16(hdr + 8, (uint32_t)(total - pre));
    else
        wr32(hdr + 8, (uint32_t)(total - pre));
    memcpy(hdr + pre, dict, (size_t)n);
    memset(hdr + pre + n, ' ', total - pre - (size_t)n - 1);
    hdr[total - 1] = '\n';
    return total;
}

static bool is_c_contiguous(const FcView *v)
{
    if (fc_view_numel(v) == 0)
        return true;    /* the products below then fit */
    int64_t s = 1;
    for (int k = v->ndim - 1; k >= 0; k--) {
        if (v->shape[k] != 1 && v->strides[k] != s)
            return false;
        s *= v->shape[k];
    }
    return true;
}

/* Copies v's elements in C order into dst (view_nbytes(v) bytes), bools as 0 or 1. */
static void gather(const FcView *v, unsigned char *dst)
{
    size_t es = fc_dtype_size(v->dtype);
    int64_t numel = fc_view_numel(v);
    int64_t idx[FC_MAX_DIMS] = {0};
    int64_t off = v->offset;
    const unsigned char *base = v->data;
    for (int64_t i = 0; i < numel; i++) {
        memcpy(dst + (size_t)i * es, base + off * (int64_t)es, es);
        if (v->dtype == FC_BOOL)
            dst[i] = dst[i] != 0;
        for (int k = v->ndim - 1; k >= 0; k--) {
            if (++idx[k] < v->shape[k]) {
                off += v->strides[k];
                break;
            }
            off -= v->strides[k] * (idx[k] - 1);
            idx[k] = 0;
        }
    }
}

/* Encodes v as a complete .npy image in a malloc'd buffer. */
static FcStatus npy_encode(const FcView *v, unsigned char **out, size_t *outlen, const char *name, FcError *err)
{
    unsigned char hdr[NPY_HEADER_CAP];
    size_t hl = npy_header(v, hdr), nb = view_nbytes(v);
    if (nb > SIZE_MAX - hl)
        return fail(err, FC_ERR_NOMEM, "%s: array too large", name);
    unsigned char *b = mem_malloc(hl + nb);
    if (!b)
        return fail(err, FC_ERR_NOMEM, "%s: out of memory encoding %zu bytes", name, hl + nb);
    memcpy(b, hdr, hl);
    gather(v, b + hl);
    *out = b;
    *outlen = hl + nb;
    return FC_OK;
}

/* A file written under a temporary name and renamed over path on commit. */
typedef struct AtomicFile {
    FILE *f;
    char *tmp;
    const char *path;
} AtomicFile;

static FcStatus atomic_open(AtomicFile *af, const char *path, FcError *err)
{
    af->f = NULL;
    af->path = path;
    size_t cap = strlen(path) + 40;
    af->tmp = mem_malloc(cap);
    if (!af->tmp)
        return fail(err, FC_ERR_NOMEM, "%s: out of memory", path);
    /* O_EXCL with a pid-and-counter name rather than mkstemp, so the file gets the usual
     * 0666 & ~umask permissions instead of 0600. */
    for (int i = 0; i < 1000; i++) {
        snprintf(af->tmp, cap, "%s.tmp%ld-%d", path, (long)getpid(), i);
        int fd = open(af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd < 0)
            break;
        af->f = fdopen(fd, "wb");
        if (!af->f) {
            close(fd);
            unlink(af->tmp);
            break;
        }
        return FC_OK;
    }
    FcStatus st = fail(err, FC_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    mem_free(af->tmp);
    af->tmp = NULL;
    return st;
}

static void atomic_abort(AtomicFile *af)
{
    if (af->f)
        fclose(af->f);
    if (af->tmp) {
        unlink(af->tmp);
        mem_free(af->tmp);
    }
    af->f = NULL;
    af->tmp = NULL;
}

static bool atomic_write(AtomicFile *af, const void *p, size_t n) { return n == 0 || fwrite(p, 1, n, af->f) == n; }

static FcStatus atomic_commit(AtomicFile *af, bool ok, FcError *err)
{
    if (!ok) {
        int e = errno;
        atomic_abort(af);
        return fail(err, FC_ERR_IO, "%s: write error: %s", af->path, strerror(e));
    }
    int rc = fclose(af->f);
    af->f = NULL;
    if (rc != 0 || rename(af->tmp, af->path) != 0) {
        int e = errno;
        atomic_abort(af);
        return fail(err, FC_ERR_IO, "%s: write error: %s", af->path, strerror(e));
    }
    mem_free(af->tmp);
    af->tmp = NULL;
    return FC_OK;
}

FcStatus fc_npy_save(const char *path, const FcView *v, FcError *err)
{
    FcStatus st = check_view(v, path, err);
    if (st != FC_OK)
        return st;
    unsigned char hdr[NPY_HEADER_CAP];
    size_t hl = npy_header(v, hdr), nb = view_nbytes(v);
    /* A C-contiguous non-bool view goes straight from memory; anything else is gathered. */
    unsigned char *gathered = NULL;
    const unsigned char *data = NULL;
    if (nb) {
        if (is_c_contiguous(v) && v->dtype != FC_BOOL) {
            data = (const unsigned char *)v->data + v->offset * (int64_t)fc_dtype_size(v->dtype);
        } else {
            gathered = mem_malloc(nb);
            if (!gathered)
                return fail(err, FC_ERR_NOMEM, "%s: out of memory gathering %zu bytes", path, nb);
            gather(v, gathered);
            data = gathered;
        }
    }
    AtomicFile af;
    st = atomic_open(&af, path, err);
    if (st == FC_OK)
        st = atomic_commit(&af, atomic_write(&af, hdr, hl) && atomic_write(&af, data, nb), err);
    mem_free(gathered);
    return st;
}

/* ---- .npz archives ---- */

#define ZIP_LOCAL_SIG 0x04034b50u
#define ZIP_CENTRAL_SIG 0x02014b50u
#define ZIP_END_SIG 0x06054b50u
#define ZIP64_END_SIG 0x06064b50u
#define ZIP64_LOCATOR_SIG 0x07064b50u

void fc_npz_free(FcNamedView *arrays, int n)
{
    if (!arrays)
        return;
    for (int i = 0; i < n; i++) {
        mem_free(arrays[i].name);
        mem_free(arrays[i].view.data);
    }
    mem_free(arrays);
}

/* Finds the end-of-central-directory record and the directory's entry count, offset and size,
 * following the ZIP64 end record where the 32-bit fields are saturated. */
static FcStatus zip_directory(const unsigned char *b, size_t len, uint64_t *count, uint64_t *cd_off,
                              uint64_t *cd_size, const char *name, FcError *err)
{
    if (len < 22)
        return fail(err, FC_ERR_IO, "%s: not a .npz file (too short for a ZIP archive)", name);
    size_t lo = len - 22 > 65535 ? len - 22 - 65535 : 0;
    size_t e = len - 22 + 1;
    bool found = false;
    while (e-- > lo) {
        /* The record must end exactly at the end of the file, comment included. */
        if (rd32(b + e) == ZIP_END_SIG && e + 22 + rd16(b + e + 20) == len) {
            found = true;
            break;
        }
    }
    if (!found)
        return fail(err, FC_ERR_IO, "%s: not a .npz file (no ZIP end-of-central-directory record)", name);
    if (rd16(b + e + 4) != 0 || rd16(b + e + 6) != 0)
        return fail(err, FC_ERR_IO, "%s: multi-disk ZIP archives are not supported", name);
    *count = rd16(b + e + 10);
    *cd_size = rd32(b + e + 12);
    *cd_off = rd32(b + e + 16);
    if (*count == 0xFFFF || *cd_size == 0xFFFFFFFFu || *cd_off == 0xFFFFFFFFu) {
        if (e < 20 || rd32(b + e - 20) != ZIP64_LOCATOR_SIG)
            return fail(err, FC_ERR_IO, "%s: corrupt ZIP archive: missing ZIP64 end-of-directory locator", name);
        uint64_t z = rd64(b + e - 20 + 8);
        if (z > len || len - z < 56 || rd32(b + z) != ZIP64_END_SIG)
            return fail(err, FC_ERR_IO, "%s: corrupt ZIP archive: bad ZIP64 end-of-directory record", name);
        *count = rd64(b + z + 32);
        *cd_size = rd64(b + z + 40);
        *cd_off = rd64(b + z + 48);
    }
    if (*cd_off > len || *cd_size > len - *cd_off)
        return fail(err, FC_ERR_IO, "%s: corrupt ZIP archive: central directory out of bounds", name);
    return FC_OK;
}

/* Inflates raw deflate src[0..slen) into exactly dlen bytes at dst. */
static bool inflate_exact(const unsigned char *src, size_t slen, unsigned char *dst, size_t dlen)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK)
        return false;
    size_t in = 0, outn = 0;
    int rc = Z_OK;
    while (rc == Z_OK) {
        zs.next_in = (Bytef *)(src + in);
        zs.avail_in = (uInt)(slen - in > UINT_MAX ? UINT_MAX : slen - in);
        zs.next_out = dst + outn;
        zs.avail_out = (uInt)(dlen - outn > UINT_MAX ? UINT_MAX : dlen - outn);
        uInt ai = zs.avail_in, ao = zs.avail_out;
        rc = inflate(&zs, Z_NO_FLUSH);
        in += ai - zs.avail_in;
        outn += ao - zs.avail_out;
        /* No progress possible: input exhausted or output full before the stream's end. */
        if (rc == Z_BUF_ERROR || (rc == Z_OK && ai == zs.avail_in && ao == zs.avail_out))
            break;
    }
    inflateEnd(&zs);
    return rc == Z_STREAM_END && outn == dlen;
}

FcStatus fc_npz_load_mem(const void *buf, size_t len, const char *name_for_messages, FcNamedView **arrays,
                         int *n, FcError *err)
{
    const char *name = name_for_messages ? name_for_messages : "<memory>";
    const unsigned char *b = buf;
    *arrays = NULL;
    *n = 0;
    uint64_t count = 0, cd_off = 0, cd_size = 0;
    FcStatus st = zip_directory(b, len, &count, &cd_off, &cd_size, name, err);
    if (st != FC_OK)
        return st;
    /* Each entry takes at least 46 bytes of the directory, which bounds the allocation. */
    if (count > cd_size / 46 || count > INT_MAX)
        return fail(err, FC_ERR_IO, "%s: corrupt ZIP archive: %llu entries do not fit the central directory",
                    name, (unsigned long long)count);
    FcNamedView *out = mem_calloc(count ? (size_t)count : 1, sizeof *out);
    if (!out)
        return fail(err, FC_ERR_NOMEM, "%s: out of memory", name);
    int got = 0;
    size_t p = (size_t)cd_off, cd_end = (size_t)(cd_off + cd_size);
    unsigned char *raw = NULL;
    for (uint64_t i = 0; i < count; i++) {
        if (cd_end - p < 46 || rd32(b + p) != ZIP_CENTRAL_SIG) {
            st = fail(err, FC_ERR_IO, "%s: corrupt ZIP archive: bad central directory entry %llu", name,
                      (unsigned long long)i);
            goto done;
        }
        unsigned flags = rd16(b + p + 8), method = rd16(b + p + 10);
        uint32_t crc = rd32(b + p + 16);
        uint64_t csize = rd32(b + p + 20), usize = rd32(b + p + 24), lho = rd32(b + p + 42);
        size_t nlen = rd16(b + p + 28), elen = rd16(b + p + 30), clen = rd16(b + p + 32);
        if (cd_end - p - 46 < nlen + elen + clen) {
            st = fail(err, FC_ERR_IO, "%s: corrupt ZIP archive: central directory entry %llu overruns", name,
                      (unsigned long long)i);
            goto done;
        }
        char mname[300];
        size_t shown = nlen < sizeof mname - 1 ? nlen : sizeof mname - 1;
        memcpy(mname, b + p + 46, shown);
        mname[shown] = '\0';
        if (shown != nlen) {
            st = fail(err, FC_ERR_IO, "%s: member name of %zu bytes is too long", name, nlen);
            goto done;
        }
        if (memchr(mname, 0, nlen)) {
            st = fail(err, FC_ERR_IO, "%s: corrupt ZIP archive: member name contains a NUL byte", name);
            goto done;
        }
        /* ZIP64 extra field: 64-bit values for exactly the saturated 32-bit fields, in order. */
        const unsigned char *x = b + p + 46 + nlen, *xend = x + elen;
        while (xend - x >= 4) {
            unsigned id = rd16(x), sz = rd16(x + 2);
            if ((size_t)(xend - x - 4) < sz)
                break;
            if (id == 0x0001) {
                const unsigned char *q = x + 4, *qend = q + sz;
                uint64_t *fields[3] = {&usize, &csize, &lho};
                for (int f = 0; f < 3; f++) {
                    if (*fields[f] != 0xFFFFFFFFu)
                        continue;
                    if (qend - q < 8) {
                        st = fail(err, FC_ERR_IO, "%s: corrupt ZIP archive: short ZIP64 field for '%s'", name, mname);
                        goto done;
                    }
                    *fields[f] = rd64(q);
                    q += 8;
                }
            }
            x += 4 + sz;
        }
        p += 46 + nlen + elen + clen;
        if (flags & 1) {
            st = fail(err, FC_ERR_IO, "%s: member '%s' is encrypted", name, mname);
            goto done;
        }
        if (method != 0 && method != 8) {
            st = fail(err, FC_ERR_IO, "%s: member '%s' uses compression method %u (only stored and deflate)",
                      name, mname, method);
            goto done;
        }
        if (nlen < 5 || strcmp(mname + nlen - 4, ".npy") != 0) {
            st = fail(err, FC_ERR_IO, "%s: member '%s' is not a .npy file", name, mname);
            goto done;
        }
        mname[nlen - 4] = '\0';
        for (int j = 0; j < got; j++)
            if (strcmp(out[j].name, mname) == 0) {
                st = fail(err, FC_ERR_IO, "%s: duplicate member '%s.npy'", name, mname);
                goto done;
            }
        mname[nlen - 4] = '.';
        if (lho > len || len - lho < 30 || rd32(b + lho) != ZIP_LOCAL_SIG) {
            st = fail(err, FC_ERR_IO, "%s: corrupt ZIP archive: bad local header for '%s'", name, mname);
            goto done;
        }
        uint64_t data = lho + 30 + rd16(b + lho + 26) + rd16(b + lho + 28);
        if (data > len || csize > len - data) {
            st = fail(err, FC_ERR_IO, "%s: corrupt ZIP archive: data of '%s' runs past the end", name, mname);
            goto done;
        }
        if ((method == 0 && csize != usize) || (method == 8 && usize / 1032 > csize + 1) || usize >= SIZE_MAX) {
            st = fail(err, FC_ERR_IO, "%s: corrupt ZIP archive: impossible sizes for '%s'", name, mname);
            goto done;
        }
        const unsigned char *member = b + data;
        if (method == 8) {
            raw = mem_malloc(usize ? (size_t)usize : 1);
            if (!raw) {
                st = fail(err, FC_ERR_NOMEM, "%s: out of memory inflating '%s'", name, mname);
                goto done;
            }
            if (!inflate_exact(member, (size_t)csize, raw, (size_t)usize)) {
                st = fail(err, FC_ERR_IO, "%s: member '%s' is corrupt (inflate failed)", name, mname);
                goto done;
            }
            member = raw;
        }
        uLong c = crc32(0L, Z_NULL, 0);
        for (uint64_t done_n = 0; done_n < usize;) {
            uInt chunk = (uInt)(usize - done_n > UINT_MAX ? UINT_MAX : usize - done_n);
            c = crc32(c, member + done_n, chunk);
            done_n += chunk;
        }
        if (c != crc) {
            st = fail(err, FC_ERR_IO, "%s: member '%s' fails its CRC-32 check (archive is corrupt)", name, mname);
            goto done;
        }
        char label[600];
        snprintf(label, sizeof label, "%s: member '%s'", name, mname);
        st = fc_npy_load_mem(member, (size_t)usize, label, &out[got].view, err);
        if (st != FC_OK)
            goto done;
        mname[nlen - 4] = '\0';
        out[got].name = mem_strdup(mname);
        if (!out[got].name) {
            mem_free(out[got].view.data);
            st = fail(err, FC_ERR_NOMEM, "%s: out of memory", name);
            goto done;
        }
        got++;
        mem_free(raw);
        raw = NULL;
    }
    *arrays = out;
    *n = got;
    return FC_OK;
done:
    mem_free(raw);
    fc_npz_free(out, got);
    return st;
}

FcStatus fc_npz_load(const char *path, FcNamedView **arrays, int *n, FcError *err)
{
    *arrays = NULL;
    *n = 0;
    unsigned char *buf;
    size_t len;
    FcStatus st = read_file(path, &buf, &len, err);
    if (st != FC_OK)
        return st;
    st = fc_npz_load_mem(buf, len, path, arrays, n, err);
    mem_free(buf);
    return st;
}

/* One member as written: where its local header starts and what the directory repeats. */
typedef struct ZipEntry {
    uint32_t crc, csize, usize, offset;
    uint16_t method;
    bool utf8;
} ZipEntry;

/* Deflates src into a malloc'd raw deflate stream. */
static FcStatus deflate_all(const unsigned char *src, size_t n, unsigned char **out, size_t *outlen,
                            const char *name, FcError *err)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return fail(err, FC_ERR_NOMEM, "%s: cannot start deflate", name);
    /* Callers keep n under 4 GiB (the ZIP limit), so zlib's uLong/uInt sizes hold it. */
    uLong cap = deflateBound(&zs, (uLong)n);
    unsigned char *d = mem_malloc(cap);
    if (!d) {
        deflateEnd(&zs);
        return fail(err, FC_ERR_NOMEM, "%s: out of memory compressing", name);
    }
    zs.next_in = (Bytef *)src;
    zs.avail_in = (uInt)n;
    zs.next_out = d;
    zs.avail_out = (uInt)cap;
    int rc = deflate(&zs, Z_FINISH);
    *outlen = zs.total_out;
    deflateEnd(&zs);
    if (rc != Z_STREAM_END) {
        mem_free(d);
        return fail(err, FC_ERR_IO, "%s: deflate failed", name);
    }
    *out = d;
    return FC_OK;
}

FcStatus fc_npz_save(const char *path, const FcNamedView *arrays, int n, bool compress, FcError *err)
{
    if (n < 0 || n > 65535 || (n > 0 && !arrays))
        return fail(err, FC_ERR_VALUE, "%s: cannot save %d arrays in one .npz (0 to 65535)", path, n);
    for (int i = 0; i < n; i++) {
        if (!arrays[i].name || !arrays[i].name[0] || strlen(arrays[i].name) > 60000)
            return fail(err, FC_ERR_VALUE, "%s: array %d needs a name (1 to 60000 bytes)", path, i);
        for (int j = 0; j < i; j++)
            if (strcmp(arrays[i].name, arrays[j].name) == 0)
                return fail(err, FC_ERR_VALUE, "%s: duplicate array name '%s'", path, arrays[i].name);
        FcStatus st = check_view(&arrays[i].view, path, err);
        if (st != FC_OK)
            return st;
    }
    ZipEntry *ents = mem_calloc(n ? (size_t)n : 1, sizeof *ents);
    if (!ents)
        return fail(err, FC_ERR_NOMEM, "%s: out of memory", path);
    AtomicFile af;
    FcStatus st = atomic_open(&af, path, err);
    if (st != FC_OK) {
        mem_free(ents);
        return st;
    }
    bool ok = true;
    uint64_t pos = 0;
    unsigned char *npy = NULL, *packed = NULL;
    for (int i = 0; i < n && ok; i++) {
        size_t ulen, clen;
        st = npy_encode(&arrays[i].view, &npy, &ulen, path, err);
        if (st != FC_OK)
            goto fail_out;
        const unsigned char *payload = npy;
        clen = ulen;
        if (ulen >= 0xFFFFFFFFu) {
            st = fail(err, FC_ERR_VALUE, "%s: array '%s' is too large for a ZIP archive (ZIP64 is not written)",
                      path, arrays[i].name);
            goto fail_out;
        }
        if (compress) {
            st = deflate_all(npy, ulen, &packed, &clen, path, err);
            if (st != FC_OK)
                goto fail_out;
            payload = packed;
        }
        size_t nlen = strlen(arrays[i].name) + 4;
        if (pos + 30 + nlen + clen >= 0xFFFFFFFFu) {
            st = fail(err, FC_ERR_VALUE, "%s: archive is too large for ZIP (ZIP64 is not written)", path);
            goto fail_out;
        }
        ZipEntry *z = &ents[i];
        z->crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), npy, (uInt)ulen);
        z->csize = (uint32_t)clen;
        z->usize = (uint32_t)ulen;
        z->offset = (uint32_t)pos;
        z->method = compress ? 8 : 0;
        z->utf8 = false;
        for (const char *c = arrays[i].name; *c; c++)
            z->utf8 |= (unsigned char)*c >= 0x80;
        unsigned char lh[30] = {0};
        wr32(lh, ZIP_LOCAL_SIG);
        wr16(lh + 4, 20);
        wr16(lh + 6, z->utf8 ? 0x800 : 0);
        wr16(lh + 8, z->method);
        wr16(lh + 10, 0);                  /* 00:00:00 */
        wr16(lh + 12, (0 << 9) | (1 << 5) | 1);   /* 1980-01-01: reproducible output */
        wr32(lh + 14, z->crc);
        wr32(lh + 18, z->csize);
        wr32(lh + 22, z->usize);
        wr16(lh + 26, (uint32_t)nlen);
        ok = atomic_write(&af, lh, 30) && atomic_write(&af, arrays[i].name, nlen - 4) &&
             atomic_write(&af, ".npy", 4) && atomic_write(&af, payload, clen);
        pos += 30 + nlen + clen;
        mem_free(npy);
        mem_free(packed);
        npy = packed = NULL;
    }
    uint64_t cd_start = pos;
    for (int i = 0; i < n && ok; i++) {
        const ZipEntry *z = &ents[i];
        size_t nlen = strlen(arrays[i].name) + 4;
        unsigned char ch[46] = {0};
        wr32(ch, ZIP_CENTRAL_SIG);
        wr16(ch + 4, 20);                  /* made by: MS-DOS/FAT attributes, version 2.0 */
        wr16(ch + 6, 20);
        wr16(ch + 8, z->utf8 ? 0x800 : 0);
        wr16(ch + 10, z->method);
        wr16(ch + 12, 0);
        wr16(ch + 14, (0 << 9) | (1 << 5) | 1);
        wr32(ch + 16, z->crc);
        wr32(ch + 20, z->csize);
        wr32(ch + 24, z->usize);
        wr16(ch + 28, (uint32_t)nlen);
        wr32(ch + 42, z->offset);
        ok = atomic_write(&af, ch, 46) && atomic_write(&af, arrays[i].name, nlen - 4) && atomic_write(&af, ".npy", 4);
        pos += 46 + nlen;
    }
    if (ok && pos >= 0xFFFFFFFFu) {
        st = fail(err, FC_ERR_VALUE, "%s: archive is too large for ZIP (ZIP64 is not written)", path);
        goto fail_out;
    }
    if (ok) {
        unsigned char end[22] = {0};
        wr32(end, ZIP_END_SIG);
        wr16(end + 8, (uint32_t)n);
        wr16(end + 10, (uint32_t)n);
        wr32(end + 12, (uint32_t)(pos - cd_start));
        wr32(end + 16, (uint32_t)cd_start);
        ok = atomic_write(&af, end, 22);
    }
    mem_free(ents);
    return atomic_commit(&af, ok, err);
fail_out:
    mem_free(npy);
    mem_free(packed);
    mem_free(ents);
    atomic_abort(&af);
    return st;
}
