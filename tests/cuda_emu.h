/* cuda_emu.h — CUDA's execution model emulated on the host, for running generated CUDA C
 * source without a GPU: the text put in front of a kernel's source (g++ -include) by the host
 * runs of test_cuda.c and by the host driver of tests/mock_cuda/ (a libcuda and an NVRTC whose
 * "device" is host memory and whose kernels are that source compiled by g++).
 *
 * Compiled as C++17 (no contraction into FMA). Blocks run one after another; a block's threads
 * are coroutines (ucontext), switched at __syncthreads and at every shuffle, so the block
 * reductions run as written; __shared__ arrays are statics, which one block at a time may use.
 * Blocks of bx x by threads (threadIdx.x fastest), grids of gx x gy x gz blocks. emu_reverse
 * starts blocks and threads last to first (what a GPU may do), for code whose result must not
 * depend on that order. Not for ASan builds: the coroutines' stacks confuse it.
 * cuda_emu_setup and cuda_emu_build are the one way both hosts write the header and build a
 * kernel behind it. Depends on libc and lang/hash.h only; included by tests only. */
#ifndef TDL_CUDA_EMU_H
#define TDL_CUDA_EMU_H

#include "hash.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char cuda_emu_header[] =
    "#include <math.h>\n"
    "#include <stdint.h>\n"
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "#include <ucontext.h>\n"
    "struct dim3 { unsigned x, y, z; };\n"
    "static dim3 threadIdx, blockIdx, blockDim, gridDim;\n"
    "#define __global__\n"
    "#define __device__\n"
    "#define __forceinline__ inline\n"
    "#define __noinline__\n"
    "#define __launch_bounds__(n)\n"
    "#define __shared__ static\n"
    "static float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }\n"
    "static unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }\n"
    "static double __longlong_as_double(long long u) { double f; memcpy(&f, &u, 8); return f; }\n"
    "static long long __double_as_longlong(double f) { long long u; memcpy(&u, &f, 8); return u; }\n"
    "static int atomicCAS(int *p, int cmp, int val) { int old = *p; if (old == cmp) *p = val; return old; }\n"
    "static unsigned atomicAdd(unsigned *p, unsigned v) { unsigned old = *p; *p = old + v; return old; }\n"
    "static void __threadfence() {}\n"
    "static unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)((unsigned long long)a * b >> 32); }\n"
    "struct EmuThread { ucontext_t ctx; bool done, waiting; };\n"
    "static EmuThread *emu_th;\n"
    "static int emu_cur;   // the running thread's number in its block\n"
    "static ucontext_t emu_main;\n"
    "static void (*emu_fn)(const void *);\n"
    "static const void *emu_arg;\n"
    "static void __syncthreads() { emu_th[emu_cur].waiting = true; swapcontext(&emu_th[emu_cur].ctx, &emu_main); }\n"
    "template <class T> static T __shfl_down_sync(unsigned, T v, int d)\n"
    "{\n"
    "    static unsigned char buf[1024][sizeof(T)];\n"
    "    memcpy(buf[emu_cur], &v, sizeof v);\n"
    "    __syncthreads();\n"
    "    T r;\n"
    "    memcpy(&r, buf[(emu_cur & 31) + d < 32 ? emu_cur + d : emu_cur], sizeof r);\n"
    "    __syncthreads();\n"
    "    return r;\n"
    "}\n"
    "static bool emu_reverse;   // blocks and threads started last to first\n"
    "static void emu_start(int i) { emu_fn(emu_arg); emu_th[i].done = true; }\n"
    "// Runs fn(arg) on a grid of gx x gy x gz blocks of bx x by threads.\n"
    "static void emu_grid(void (*fn)(const void *), const void *arg, unsigned gx, unsigned gy, unsigned gz,\n"
    "                     unsigned bx, unsigned by)\n"
    "{\n"
    "    enum { STACK = 128 * 1024 };\n"
    "    const unsigned nt = bx * by;\n"
    "    emu_fn = fn;\n"
    "    emu_arg = arg;\n"
    "    emu_th = (EmuThread *)calloc(nt, sizeof *emu_th);\n"
    "    char *stacks = (char *)malloc((size_t)nt * STACK);\n"
    "    gridDim = {gx, gy, gz};\n"
    "    blockDim = {bx, by, 1};\n"
    "    for (unsigned bz = 0; bz < gz; bz++)\n"
    "    for (unsigned byy = 0; byy < gy; byy++)\n"
    "        for (unsigned bb = 0; bb < gx; bb++) {\n"
    "            const unsigned b = emu_reverse ? gx - 1 - bb : bb;\n"
    "            blockIdx = {b, byy, bz};\n"
    "            for (unsigned i = 0; i < nt; i++) {\n"
    "                emu_th[i].done = emu_th[i].waiting = false;\n"
    "                getcontext(&emu_th[i].ctx);\n"
    "                emu_th[i].ctx.uc_stack.ss_sp = stacks + (size_t)i * STACK;\n"
    "                emu_th[i].ctx.uc_stack.ss_size = STACK;\n"
    "                emu_th[i].ctx.uc_link = &emu_main;\n"
    "                makecontext(&emu_th[i].ctx, (void (*)())emu_start, 1, (int)i);\n"
    "            }\n"
    "            for (;;) {\n"
    "                bool live = false;\n"
    "                for (unsigned ii = 0; ii < nt; ii++) {\n"
    "                    const unsigned i = emu_reverse ? nt - 1 - ii : ii;\n"
    "                    if (emu_th[i].done || emu_th[i].waiting)\n"
    "                        continue;\n"
    "                    emu_cur = (int)i;\n"
    "                    threadIdx = {i % bx, i / bx, 0};\n"
    "                    swapcontext(&emu_main, &emu_th[i].ctx);\n"
    "                }\n"
    "                for (unsigned i = 0; i < nt; i++)\n"
    "                    if (!emu_th[i].done) {\n"
    "                        live = true;\n"
    "                        emu_th[i].waiting = false;   /* every live thread is at the barrier */\n"
    "                    }\n"
    "                if (!live)\n"
    "                    break;\n"
    "            }\n"
    "        }\n"
    "    free(stacks);\n"
    "    free(emu_th);\n"
    "}\n";

/* Writes the header into dir/emu.h, where cuda_emu_build looks for it (through a file of this
 * process's own, renamed into place: processes may share dir); whether it could. */
static bool cuda_emu_setup(const char *dir)
{
    char p[1100], tmp[1100];
    snprintf(p, sizeof p, "%s/emu.h", dir);
    snprintf(tmp, sizeof tmp, "%s/emu.h.%d", dir, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return false;
    bool ok = fputs(cuda_emu_header, f) >= 0;
    ok = fclose(f) == 0 && ok && rename(tmp, p) == 0;
    if (!ok)
        unlink(tmp);
    return ok;
}

/* The host build of text (a kernel's source and its launchers), behind dir/emu.h: the shared
 * object dir/h<hash>.so, named by a hash of the header and the text, built by g++ only when it is
 * not there yet. So a folder kept between runs (make test's build/mock_cuda/kernels) builds each
 * text once, processes may share it (each writes files of its own and renames the result into
 * place), and a path is never reused for other code (a loaded build may stay loaded after
 * dlclose). Its path goes into so; on failure g++'s messages are in so's path + ".log", next to
 * the .cpp. Whether the build is there. */
static bool cuda_emu_build(const char *dir, const char *text, char *so, size_t cap)
{
    unsigned long long h = fnv1a_str(fnv1a_str(FNV1A_SEED, cuda_emu_header), text);
    snprintf(so, cap, "%s/h%016llx.so", dir, h);
    if (access(so, R_OK) == 0)
        return true;
    char cpp[1100], tmp[1100], cmd[4500];
    snprintf(cpp, sizeof cpp, "%s/h%016llx.%d.cpp", dir, h, (int)getpid());
    snprintf(tmp, sizeof tmp, "%s/h%016llx.%d.so", dir, h, (int)getpid());
    FILE *f = fopen(cpp, "w");
    if (!f)
        return false;
    bool ok = fputs(text, f) >= 0;
    ok = fclose(f) == 0 && ok;
    int n = snprintf(cmd, sizeof cmd, "g++ -std=c++17 -O1 -fPIC -shared -w -include %s/emu.h %s -o %s 2> %s.log", dir,
                     cpp, tmp, so);
    ok = ok && n > 0 && (size_t)n < sizeof cmd && system(cmd) == 0 && rename(tmp, so) == 0;
    if (ok) {
        unlink(cpp);
        snprintf(cmd, sizeof cmd, "%s.log", so);
        unlink(cmd);
    }
    return ok;
}

#endif
