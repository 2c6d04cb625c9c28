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

int fc_store_terms(const FcKernel *k, uint64_t loops, FcStoreTerm *t)
{
    if (k->nscatter > 64)
        return -1;
    int n = 0;
    for (int l = 0; l < k->nloop; l++)
        if ((loops >> l & 1) && k->extent[l] > 1 && k->out_strides[l] != 0)
            t[n++] = (FcStoreTerm){k->out_strides[l], k->extent[l], l, -1};
    for (int g = 0; g < k->nscatter; g++) {
        if (k->scatter[g].extent <= 0)
            return -1;          /* nothing can be written */
        if (k->scatter[g].extent > 1 && k->scatter[g].stride != 0)
            t[n++] = (FcStoreTerm){k->scatter[g].stride, k->scatter[g].extent, -1, g};
    }
    return n;
}

bool fc_store_terms_injective(const FcStoreTerm *t, int n, int64_t max_keys, int64_t *nkeys)
{
    bool used[FC_STORE_TERMS_MAX] = {false};
    int64_t span = 0, keys = 1;
    for (int m = 0; m < n; m++) {
        int b = -1;
        for (int j = 0; j < n; j++)
            if (!used[j] && (b < 0 || abs64(t[j].stride) < abs64(t[b].stride)))
                b = j;
        used[b] = true;
        int64_t a = abs64(t[b].stride), e = t[b].extent;
        if (a <= span || e - 1 > (INT64_MAX - span) / a || keys > max_keys / e)
            return false;
        span += a * (e - 1);
        keys *= e;
    }
    *nkeys = keys;
    return true;
}

/* The root loops that are no owner dim's (a chunk of one): the store's own loops. */
static uint64_t root_loops(const FcKernel *k)
{
    uint64_t m = 0;
    for (int l = 0; l < k->nloop; l++)
        if (k->owner[l] < 0)
            m |= (uint64_t)1 << l;
    return m;
}

uint64_t fc_store_owner_loops(const FcKernel *k)
{
    if (!k || k->reduce != FC_OP_NONE || k->nloop <= 0 || k->nloop > FC_MAX_DIMS)
        return 0;
    FcStoreTerm t[FC_STORE_TERMS_MAX];
    int n = fc_store_terms(k, root_loops(k), t);
    uint64_t own = 0;
    for (int i = 0; i < n; i++) {
        if (t[i].loop < 0)
            continue;
        int64_t a = abs64(t[i].stride), low = 0, g = 0;
        bool ok = true;
        for (int j = 0; j < n && ok; j++) {
            if (j == i)
                continue;
            int64_t aj = abs64(t[j].stride);
            if (aj < a) {
                /* spans that overflow are too wide anyway */
                if (t[j].extent - 1 > (INT64_MAX - low) / aj)
                    ok = false;
                else
                    low += aj * (t[j].extent - 1);
            } else {
                g = gcd64(g, aj);
            }
        }
        if (!ok || low >= a)
            continue;
        if (g != 0 && (t[i].extent - 1 > (INT64_MAX - low) / a || g <= low + a * (t[i].extent - 1)))
            continue;
        own |= (uint64_t)1 << t[i].loop;
    }
    return own;
}

int64_t fc_store_band_rows(const FcKernel *k, uint64_t allowed, int64_t max_keys, uint64_t *rows, int64_t *nkeys)
{
    *rows = 0;
    *nkeys = 0;
    if (!k || k->reduce != FC_OP_NONE || k->nloop <= 0 || k->nloop > FC_MAX_DIMS || k->nscatter <= 0)
        return 0;
    FcStoreTerm t[FC_STORE_TERMS_MAX];
    int n = fc_store_terms(k, root_loops(k), t);
    /* Every term's stride positive: a negative one would let the other terms reach below a row's
     * first element. */
    for (int i = 0; i < n; i++)
        if (t[i].stride < 0)
            return 0;
    int64_t best = 0;
    for (int i = 0; i < n; i++) {
        int gi = t[i].scatter;
        if (gi < 0 || !(allowed >> gi & 1))
            continue;
        int64_t a = t[i].stride, low = 0, keys = 1;
        uint64_t set = 0;
        bool ok = true;
        for (int j = 0; j < n && ok; j++) {
            int gj = t[j].scatter;
            bool in = gj >= 0 && (allowed >> gj & 1) && t[j].stride >= a;
            if (in) {
                int64_t q = t[j].stride / a;
                ok = t[j].stride % a == 0 && (t[j].extent - 1) <= (max_keys - keys) / q;
                if (ok) {
                    keys += q * (t[j].extent - 1);
                    set |= (uint64_t)1 << gj;
                }
            } else if (t[j].extent - 1 > (INT64_MAX - low) / t[j].stride) {
                ok = false;
            } else {
                low += t[j].stride * (t[j].extent - 1);
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
