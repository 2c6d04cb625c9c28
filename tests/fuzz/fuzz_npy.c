/* fuzz_npy.c — libFuzzer harness: the input is a .npy or .npz file, loaded from memory
 * (fc_npy_load_mem, fc_npz_load_mem) and from a file (fc_npy_load, fc_npz_load), which must agree.
 * Every loaded view is then read element by element through its strides (ASan checks that the
 * geometry stays inside the data), printed (fc_format_tensor), saved and loaded again (the bytes
 * must come back), and, for a .npy, loaded by a tdl program (`load`) and printed and summed there.
 * Seeds: tests/golden/fcdim_io (every dtype, both orders, versions 1-3, stored/deflated/ZIP64
 * archives). */
#include "fcdim.h"
#include "fuzz_common.h"
#include "hash.h"

#include <unistd.h>

static char dir[64], in_npy[96], in_npz[96], out_npy[96];

static void cleanup(void)
{
    unlink(in_npy);
    unlink(in_npz);
    unlink(out_npy);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_env();
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tdl-fuzz-XXXXXX", tmp && strlen(tmp) < 40 ? tmp : "/tmp");
    if (!mkdtemp(dir))
        abort();
    snprintf(in_npy, sizeof in_npy, "%s/in.npy", dir);
    snprintf(in_npz, sizeof in_npz, "%s/in.npz", dir);
    snprintf(out_npy, sizeof out_npy, "%s/out.npy", dir);
    atexit(cleanup);
    return 0;
}

static void check(bool ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_npy: %s\n", what);
        abort();
    }
}

static void write_file(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    check(f && fwrite(data, 1, size, f) == size && fclose(f) == 0, "cannot write the temporary file");
}

/* Reads every element of v through its strides; returns a hash of the bytes in C order. */
static uint64_t walk(const FcView *v)
{
    size_t es = fc_dtype_size(v->dtype);
    int64_t numel = fc_view_numel(v), idx[FC_MAX_DIMS] = {0};
    uint64_t h = FNV1A_SEED;
    for (int64_t i = 0; i < numel; i++) {
        int64_t off = v->offset;
        for (int k = 0; k < v->ndim; k++)
            off += idx[k] * v->strides[k];
        const unsigned char *p = (const unsigned char *)v->data + off * (int64_t)es;
        h = fnv1a_bytes(h, p, es);
        for (int k = v->ndim - 1; k >= 0 && ++idx[k] == v->shape[k]; k--)
            idx[k] = 0;
    }
    return h;
}

static bool same_geometry(const FcView *a, const FcView *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim)
        return false;
    for (int k = 0; k < a->ndim; k++)
        if (a->shape[k] != b->shape[k])
            return false;
    return true;
}

/* Prints v, saves it and loads it back. */
static void exercise(const FcView *v)
{
    uint64_t h = walk(v);
    char *text = NULL;
    FcError err;
    if (fc_format_tensor(v, NULL, &text, &err) == FC_OK) {
        check(text != NULL, "fc_format_tensor gave no text");
        fuzz_write(NULL, text, strlen(text));
        free(text);
    }
    if (fc_npy_save(out_npy, v, &err) == FC_OK) {
        FcView back;
        check(fc_npy_load(out_npy, &back, &err) == FC_OK, "a saved .npy does not load");
        check(same_geometry(v, &back) && walk(&back) == h, "a saved .npy loads with other contents");
        free(back.data);
    }
}

/* A tdl program loads the file: the interpreter's side of the conversion. */
static void load_in_tdl(void)
{
    tdl_config cfg = {0};
    cfg.size = sizeof cfg;
    cfg.max_memory = FUZZ_MAX_MEMORY;
    cfg.write = fuzz_write;
    tdl_interp *T = tdl_open(&cfg);
    check(T != NULL, "tdl_open failed");
    char code[256];
    snprintf(code, sizeof code, "x = load('%s')\nprint(x)\nprint(x.sum(), x.flatten()[-3:], x.double().mean())\n",
             in_npy);
    fuzz_arm(T);
    tdl_status st = tdl_run_string(T, code, "<fuzz>");
    fuzz_disarm();
    fuzz_check_status(T, st);
    tdl_close(T);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FcError err;
    FcView mem, file;
    write_file(in_npy, data, size);
    FcStatus sm = fc_npy_load_mem(data, size, "in.npy", &mem, &err);
    FcStatus sf = fc_npy_load(in_npy, &file, &err);
    check(sm == sf, ".npy from memory and from a file: different statuses");
    if (sm == FC_OK) {
        check(same_geometry(&mem, &file) && walk(&mem) == walk(&file), ".npy from memory and from a file differ");
        exercise(&mem);
        free(mem.data);
        free(file.data);
        load_in_tdl();
    }

    FcNamedView *am = NULL, *af = NULL;
    int nm = 0, nf = 0;
    write_file(in_npz, data, size);
    sm = fc_npz_load_mem(data, size, "in.npz", &am, &nm, &err);
    sf = fc_npz_load(in_npz, &af, &nf, &err);
    check(sm == sf && nm == nf, ".npz from memory and from a file: different results");
    for (int i = 0; i < nm; i++) {
        check(strcmp(am[i].name, af[i].name) == 0, ".npz member names differ");
        check(same_geometry(&am[i].view, &af[i].view) && walk(&am[i].view) == walk(&af[i].view),
              ".npz members from memory and from a file differ");
        exercise(&am[i].view);
    }
    fc_npz_free(am, nm);
    fc_npz_free(af, nf);
    return 0;
}
