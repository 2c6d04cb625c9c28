/* test_limits.c — the limits a host sets in tdl_config, through the embedding API: max_memory
 * (a MemoryError with its location past it, the memory given back, the interpreter usable after),
 * the size member's ABI rule (older and newer hosts' structs), recursion_limit and the C stack
 * guard (deep recursion on a small thread stack is a RecursionError, not a crash), and the file
 * flags (TDL_NO_FILE_READ, TDL_NO_FILE_WRITE). */
#include "tests.h"
#include "tdl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void discard(void *ud, const char *text, size_t len) { (void)ud, (void)text, (void)len; }

static tdl_interp *open_limited(size_t max_memory)
{
    tdl_config cfg = {.size = sizeof cfg};
    cfg.write = discard;
    cfg.max_memory = max_memory;
    tdl_interp *T = tdl_open(&cfg);
    ck_assert_ptr_nonnull(T);
    return T;
}

#define OK(T, code) ck_assert_msg(tdl_run_string(T, code, "<test>") == TDL_OK, "%s: %s", code, tdl_error_report(T))

/* Runs code, which must fail with kind; returns the report. */
static const char *fails(tdl_interp *T, const char *code, tdl_error_kind kind)
{
    ck_assert_int_eq(tdl_run_string(T, code, "<test>"), TDL_ERROR);
    ck_assert_msg(tdl_error_kind_of(T) == kind, "%s: %s", code, tdl_error_report(T));
    return tdl_error_report(T);
}

static int64_t global_int(tdl_interp *T, const char *name)
{
    tdl_value *v;
    int64_t i = -1;
    ck_assert_int_eq(tdl_get_global(T, name, &v), TDL_OK);
    ck_assert_int_eq(tdl_to_int(T, v, &i), TDL_OK);
    tdl_value_free(v);
    return i;
}

/* The runaway list of the issue (which the kernel killed at 23 GB): a MemoryError at the line
 * that doubles it, the memory given back, and the interpreter usable. */
START_TEST(test_max_memory_list)
{
    tdl_interp *T = open_limited(64 << 20);
    const char *r = fails(T, "x = [0]\nwhile True:\n    x = x + x\n", TDL_ERR_MEMORY);
    ck_assert_msg(strstr(r, "<test>:3:") != NULL, "%s", r);
    ck_assert_str_eq(tdl_error_message(T), "over the interpreter's memory limit (max_memory = 67108864 bytes)");
    /* x still holds the last list that fitted; dropping it gives its memory back, so a list of
     * half the limit fits again, many times over (the account is credited what is freed). */
    OK(T, "x = None\nn = 0\nfor k in range(8):\n    y = [k] * (2 << 20)\n    n += len(y)\n    y = None\n");
    ck_assert_int_eq(global_int(T, "n"), 8 * (2 << 20));
    tdl_close(T);
}
END_TEST

START_TEST(test_max_memory_tensor)
{
    tdl_interp *T = open_limited(32 << 20);
    /* 40 MB of float32 computed into memory: past the limit at the statement that stores it. */
    const char *r = fails(T, "a = 1\nb = (zeros(10000000) + a).contiguous()\n", TDL_ERR_MEMORY);
    ck_assert_msg(strstr(r, "<test>:2:") != NULL, "%s", r);
    for (int k = 0; k < 4; k++) OK(T, "b = (zeros(2000000) + 1).contiguous()\nn = int(b.sum().item())\n");
    ck_assert_int_eq(global_int(T, "n"), 2000000);
    tdl_close(T);
}
END_TEST

/* A large block freed is kept by the CPU backend for reuse (cpu_backend.c) and stays charged: an
 * allocation it does not fit, refused with it kept, frees it and is tried again. */
START_TEST(test_max_memory_cache)
{
    tdl_interp *T = open_limited(64 << 20);
    OK(T, "b = (zeros(10000000) + 1).contiguous()\nb = None\n");
    OK(T, "c = (zeros(12000000) + 2).contiguous()\nn = int(c.sum().item())\n");
    ck_assert_int_eq(global_int(T, "n"), 24000000);
    tdl_close(T);
}
END_TEST

/* Values made through the API and freed by the host are charged and credited too. */
START_TEST(test_max_memory_api)
{
    tdl_interp *T = open_limited(16 << 20);
    static float buf[1 << 20];
    const int64_t shape[1] = {1 << 20};
    for (int k = 0; k < 20; k++) {
        tdl_value *v;
        ck_assert_int_eq(tdl_tensor_from_host(T, TDL_DTYPE_FLOAT32, 1, shape, NULL, buf, &v), TDL_OK);
        tdl_value_free(v);
    }
    const int64_t big[1] = {5 << 20};
    float *host = calloc(5 << 20, sizeof *host);     /* the host's memory: not counted */
    ck_assert_ptr_nonnull(host);
    tdl_value *v = NULL;
    ck_assert_int_eq(tdl_tensor_from_host(T, TDL_DTYPE_FLOAT32, 1, big, NULL, host, &v), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_MEMORY);
    ck_assert_ptr_null(v);
    /* Borrowed without a copy, it is not charged. */
    ck_assert_int_eq(tdl_tensor_borrow(T, TDL_DTYPE_FLOAT32, 1, big, NULL, host, NULL, NULL, &v), TDL_OK);
    tdl_value_free(v);
    free(host);
    OK(T, "z = len([1] * 1000)\n");
    tdl_close(T);
}
END_TEST

START_TEST(test_no_limit)
{
    tdl_interp *T = open_limited(0);
    OK(T, "x = [0] * (4 << 20)\nn = len(x)\n");
    ck_assert_int_eq(global_int(T, "n"), 4 << 20);
    tdl_close(T);
}
END_TEST

/* A host built against tdl 0.1's header (no size; size reads 0 here) gets the 0.1 members only:
 * max_memory past them is not read. */
START_TEST(test_config_size_zero)
{
    tdl_config cfg = {0};
    cfg.write = discard;
    cfg.max_memory = 1000;      /* not read: no limit */
    tdl_interp *T = tdl_open(&cfg);
    ck_assert_ptr_nonnull(T);
    OK(T, "x = [0] * 100000\n");
    tdl_close(T);
}
END_TEST

/* An older host's struct ends before recursion_limit: that member and those after it are the
 * defaults, whatever lies beyond the host's size. */
START_TEST(test_config_size_older)
{
    tdl_config cfg;
    memset(&cfg, 0xff, sizeof cfg);     /* what lies past the host's struct */
    cfg.size = offsetof(tdl_config, recursion_limit);
    cfg.write = discard;
    cfg.write_ud = NULL;
    cfg.path = NULL;
    tdl_interp *T = tdl_open(&cfg);
    ck_assert_ptr_nonnull(T);
    OK(T, "def f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\nd = f(900)\n");
    ck_assert_int_eq(global_int(T, "d"), 900);
    fails(T, "f(1100)", TDL_ERR_RECURSION);
    tdl_close(T);
}
END_TEST

/* A newer host's struct is longer: the members this library knows are read, the rest ignored. */
START_TEST(test_config_size_newer)
{
    struct { tdl_config cfg; char later[64]; } host;
    memset(&host, 0xff, sizeof host);
    memset(&host.cfg, 0, sizeof host.cfg);
    host.cfg.size = sizeof host;
    host.cfg.write = discard;
    host.cfg.max_memory = 8 << 20;
    tdl_interp *T = tdl_open(&host.cfg);
    ck_assert_ptr_nonnull(T);
    fails(T, "x = [0] * (4 << 20)\n", TDL_ERR_MEMORY);
    tdl_close(T);
}
END_TEST

START_TEST(test_recursion_limit)
{
    tdl_config cfg = {.size = sizeof cfg};
    cfg.write = discard;
    cfg.recursion_limit = 50;
    tdl_interp *T = tdl_open(&cfg);
    ck_assert_ptr_nonnull(T);
    OK(T, "def f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\nd = f(45)\n");
    ck_assert_int_eq(global_int(T, "d"), 45);
    const char *r = fails(T, "f(60)", TDL_ERR_RECURSION);
    ck_assert_msg(strstr(r, "maximum recursion depth exceeded") != NULL, "%s", r);
    OK(T, "d = f(10)\n");
    tdl_close(T);
}
END_TEST

/* A recursion limit far above what the C stack holds, on a thread with a small stack: the stack
 * guard turns it into a RecursionError before the stack runs out. */
static void *deep(void *arg)
{
    tdl_config cfg = {.size = sizeof cfg};
    cfg.write = discard;
    cfg.recursion_limit = 10000000;
    tdl_interp *T = tdl_open(&cfg);
    int *kind = arg;
    if (!T) return NULL;
    tdl_run_string(T, "def f(n):\n    return 1 + f(n + 1)\nf(0)\n", "<test>");
    kind[0] = tdl_error_kind_of(T);
    kind[1] = tdl_run_string(T, "x = 1 + 1\n", "<test>") == TDL_OK;
    tdl_close(T);
    return NULL;
}

START_TEST(test_recursion_c_stack)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 1 << 20);
    pthread_t th;
    int kind[2] = {-1, 0};
    ck_assert_int_eq(pthread_create(&th, &attr, deep, kind), 0);
    pthread_join(th, NULL);
    pthread_attr_destroy(&attr);
    ck_assert_int_eq(kind[0], TDL_ERR_RECURSION);
    ck_assert_int_eq(kind[1], 1);
}
END_TEST

START_TEST(test_file_flags)
{
    char path[64], pathz[64];
    snprintf(path, sizeof path, "/tmp/tdl_limits_%d.npy", (int)getpid());
    snprintf(pathz, sizeof pathz, "/tmp/tdl_limits_%d.npz", (int)getpid());
    char save[256], load[256];
    snprintf(save, sizeof save, "save('%s', arange(3))\nsavez('%s', a=arange(2))\n", path, pathz);
    snprintf(load, sizeof load, "n = int(load('%s').sum().item()) + len(loadz('%s'))\n", path, pathz);

    tdl_config cfg = {.size = sizeof cfg};
    cfg.write = discard;
    cfg.flags = TDL_NO_FILE_WRITE;
    tdl_interp *T = tdl_open(&cfg);
    ck_assert_ptr_nonnull(T);
    fails(T, save, TDL_ERR_IO);
    ck_assert_str_eq(tdl_error_message(T),
                     "save(): programs may not write files in this interpreter (TDL_NO_FILE_WRITE)");
    char z[256];
    snprintf(z, sizeof z, "savez_compressed('%s', a=arange(2))\n", pathz);
    fails(T, z, TDL_ERR_IO);
    ck_assert_int_eq(access(path, F_OK), -1);
    ck_assert_int_eq(access(pathz, F_OK), -1);
    tdl_close(T);

    cfg.flags = TDL_NO_FILE_READ;
    T = tdl_open(&cfg);
    ck_assert_ptr_nonnull(T);
    OK(T, save);
    fails(T, load, TDL_ERR_IO);
    ck_assert_str_eq(tdl_error_message(T), "load(): programs may not read files in this interpreter (TDL_NO_FILE_READ)");
    char lz[128];
    snprintf(lz, sizeof lz, "loadz('%s')\n", pathz);
    fails(T, lz, TDL_ERR_IO);
    tdl_close(T);

    cfg.flags = 0;
    T = tdl_open(&cfg);
    ck_assert_ptr_nonnull(T);
    OK(T, load);
    ck_assert_int_eq(global_int(T, "n"), 3 + 1);
    tdl_close(T);
    unlink(path);
    unlink(pathz);
}
END_TEST

Suite *limits_suite(void)
{
    Suite *s = suite_create("limits");
    TCase *tc = tcase_create("limits");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_max_memory_list);
    tcase_add_test(tc, test_max_memory_tensor);
    tcase_add_test(tc, test_max_memory_cache);
    tcase_add_test(tc, test_max_memory_api);
    tcase_add_test(tc, test_no_limit);
    tcase_add_test(tc, test_config_size_zero);
    tcase_add_test(tc, test_config_size_older);
    tcase_add_test(tc, test_config_size_newer);
    tcase_add_test(tc, test_recursion_limit);
    tcase_add_test(tc, test_recursion_c_stack);
    tcase_add_test(tc, test_file_flags);
    suite_add_tcase(s, tc);
    return s;
}
