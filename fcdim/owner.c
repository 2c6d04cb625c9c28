/* owner.c — the owner loops of a kernel's scattered or accumulating store (fcdim.h).
 *
 * Such a store sends several iterations to one element (a scatter-add, the backward of a
 * gather), which is why the backends run it in the order of its loop nest. But the store's index
 * map often shows loops along which distinct iterations can never meet: the channel loop of
 * roi_align's backward (an element's channel is the loop's index, whatever the gathered pixel),
 * the row loop of gather(1, idx)'s backward. Those loops own their elements: splitting the work
 * over them, each part run in loop order, gives every element its contributions in the same
 * order as the whole nest in order, so the same bits at any thread count (and without atomics
 * on a GPU).
 *
 * The test is on the address alone: out_offset + sum of terms stride * index, one per root loop
 * (index in [0, extent)) and one per scatter index (in [0, extent) once wrapped; a value out of
 * range stops the kernel before its chunk is written). A negative stride reverses its term's
 * index, which keeps it injective, so only |stride| counts. Term t = (a, e) determines its index
 * when the terms of smaller stride span less than a (they cannot carry into it) and the others
 * are all multiples of some G beyond the span of t and the smaller ones (they cannot reach
 * into it): the address mod G then holds a * i + low with low < a.
 *
 * Depends on fcdim.h. */
#include "fcdim.h"

typedef struct Term {
    int64_t a, e;
    int loop;                   /* -1: a scatter index */
} Term;

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static int64_t abs64(int64_t v) { return v < 0 ? -v : v; }

uint64_t fc_store_owner_loops(const FcKernel *k)
{
    if (!k || k->reduce != FC_OP_NONE || k->nloop <= 0 || k->nloop > FC_MAX_DIMS)
        return 0;
    Term t[2 * FC_MAX_DIMS];
    int n = 0;
    for (int l = 0; l < k->nloop; l++)
        if (k->owner[l] < 0 && k->extent[l] > 1 && k->out_strides[l] != 0)
            t[n++] = (Term){abs64(k->out_strides[l]), k->extent[l], l};
    for (int g = 0; g < k->nscatter; g++) {
        if (k->scatter[g].extent <= 0)
            return 0;           /* nothing can be written */
        if (k->scatter[g].extent > 1 && k->scatter[g].stride != 0)
            t[n++] = (Term){abs64(k->scatter[g].stride), k->scatter[g].extent, -1};
    }
    uint64_t own = 0;
    for (int i = 0; i < n; i++) {
        if (t[i].loop < 0)
            continue;
        int64_t a = t[i].a, low = 0, g = 0;
        bool ok = true;
        for (int j = 0; j < n && ok; j++) {
            if (j == i)
                continue;
            if (t[j].a < a) {
                /* spans that overflow are too wide anyway */
                if (t[j].e - 1 > (INT64_MAX - low) / t[j].a)
                    ok = false;
                else
                    low += t[j].a * (t[j].e - 1);
            } else {
                g = gcd64(g, t[j].a);
            }
        }
        if (!ok || low >= a)
            continue;
        if (g != 0 && (t[i].e - 1 > (INT64_MAX - low) / a || g <= low + a * (t[i].e - 1)))
            continue;
        own |= (uint64_t)1 << t[i].loop;
    }
    return own;
}

int64_t fc_store_band_rows(const FcKernel *k, uint64_t allowed, int64_t max_keys, uint64_t *rows, int64_t *nkeys)
{
    *rows = 0;
    *nkeys = 0;
    if (!k || k->reduce != FC_OP_NONE || k->nloop <= 0 || k->nloop > FC_MAX_DIMS || k->nscatter <= 0 ||
        k->nscatter > 64)
        return 0;
    /* Every term's stride positive (a zero-stride one adds nothing): a negative one would let the
     * other terms reach below a row's first element. */
    Term t[2 * FC_MAX_DIMS + 64];
    int n = 0;
    for (int l = 0; l < k->nloop; l++)
        if (k->owner[l] < 0 && k->extent[l] > 1 && k->out_strides[l] != 0) {
            if (k->out_strides[l] < 0)
                return 0;
            t[n++] = (Term){k->out_strides[l], k->extent[l], l};
        }
    for (int g = 0; g < k->nscatter; g++) {
        if (k->scatter[g].extent <= 0)
            return 0;
        if (k->scatter[g].extent > 1 && k->scatter[g].stride != 0) {
            if (k->scatter[g].stride < 0)
                return 0;
            t[n++] = (Term){k->scatter[g].stride, k->scatter[g].extent, -1 - g};
        }
    }
    int64_t best = 0;
    for (int i = 0; i < n; i++) {
        int gi = -1 - t[i].loop;
        if (t[i].loop >= 0 || !(allowed >> gi & 1))
            continue;
        int64_t a = t[i].a, low = 0, keys = 1;
        uint64_t set = 0;
        bool ok = true;
        for (int j = 0; j < n && ok; j++) {
            int gj = -1 - t[j].loop;
            bool in = t[j].loop < 0 && (allowed >> gj & 1) && t[j].a >= a;
            if (in) {
                int64_t q = t[j].a / a;
                ok = t[j].a % a == 0 && (t[j].e - 1) <= (max_keys - keys) / q;
                if (ok) {
                    keys += q * (t[j].e - 1);
                    set |= (uint64_t)1 << gj;
                }
            } else if (t[j].e - 1 > (INT64_MAX - low) / t[j].a) {
                ok = false;
            } else {
                low += t[j].a * (t[j].e - 1);
            }
        }
        if (!ok || low >= a || keys > max_keys || (best && a >= best))
            continue;
        best = a;
        *rows = set;
        *nkeys = keys;
    }
    return best;
}

static long owner_splits;

void fc_owner_split_note(void) { __atomic_fetch_add(&owner_splits, 1, __ATOMIC_RELAXED); }

long fc_owner_split_count(void) { return __atomic_load_n(&owner_splits, __ATOMIC_RELAXED); }
