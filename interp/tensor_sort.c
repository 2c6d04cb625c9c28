/* tensor_sort.c — the IMPL functions that order values (tensor_ops.def's "statistics, scans,
 * sorting" section): sort/argsort/topk, kthvalue/median/nanmedian/mode/msort, cummax/cummin,
 * unique/unique_consecutive, searchsorted/bucketize.
 *
 * A line's order is found on the host by replaying PyTorch 1.13's CPU algorithms step for step
 * (libstdc++'s std::sort, std::nth_element and std::partial_sort, its quick_select_template, a
 * stable merge sort), so tied values get torch's indices; the values are then gathered lazily by
 * the indices found, so they fuse with what uses them and their gradients are scatter-adds into
 * those indices. searchsorted runs torch's binary search on every value at once. Depends on
 * tensor_impl.h.
 */
#include "tensor_impl.h"
#include "mem.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- sorting ------------------------------------------------------------------------------- */

/* How two elements compare: NaN the largest value (sort, topk, kthvalue), the same with equal
 * values ordered by their position (median's comparator), or the plain `<` of mode's std::sort,
 * under which a NaN is neither before nor after anything. */
typedef enum { CMP_NAN_LAST, CMP_NAN_LAST_INDEX, CMP_PLAIN } SortCmp;

typedef struct SortKeys {
    const char *base;
    FcDType dt;
    bool desc;
    SortCmp cmp;
} SortKeys;

static double key_f(const SortKeys *k, int64_t i)
{
    return fc_scalar_load(k->dt, k->base + i * (int64_t)fc_dtype_size(k->dt)).f;
}

static int64_t key_i(const SortKeys *k, int64_t i)
{
    return fc_scalar_load(k->dt, k->base + i * (int64_t)fc_dtype_size(k->dt)).i;
}

/* Whether element i goes strictly before element j, by k->cmp (offsets i < j: i is earlier in its
 * line). */
static bool goes_before(const SortKeys *k, int64_t i, int64_t j)
{
    if (fc_dtype_is_float(k->dt)) {
        double x = key_f(k, i), y = key_f(k, j);
        if (k->cmp == CMP_PLAIN) return k->desc ? x > y : x < y;
        if (k->cmp == CMP_NAN_LAST_INDEX && x == y) return i < j;
        if (k->desc) return (isnan(x) && !isnan(y)) || x > y;
        return (!isnan(x) && isnan(y)) || x < y;
    }
    int64_t x = key_i(k, i), y = key_i(k, j);
    if (k->cmp == CMP_NAN_LAST_INDEX && x == y) return i < j;
    return k->desc ? x > y : x < y;
}

/* Stable merge sort of idx[0..n) (element offsets) by keys; tmp has room for n. */
static void merge_sort(const SortKeys *k, int64_t *idx, int64_t *tmp, int64_t n)
{
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t p = lo, q = mid, o = lo;
            while (p < mid && q < hi) tmp[o++] = goes_before(k, idx[q], idx[p]) ? idx[q++] : idx[p++];
            while (p < mid) tmp[o++] = idx[p++];
            while (q < hi) tmp[o++] = idx[q++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof *idx);
    }
}

/* libstdc++'s std::sort, std::nth_element and std::partial_sort (bits/stl_algo.h, stl_heap.h),
 * step for step: PyTorch's CPU sort (stable=False) and topk call them, and where elements tie
 * their order is what these steps make of it, so the indices are PyTorch's only if the steps are
 * the same. Over element offsets, compared by goes_before. */

static void cxx_swap(int64_t *a, int64_t *b)
{
    int64_t t = *a;
    *a = *b;
    *b = t;
}

/* std::__push_heap */
static void cxx_push_heap(const SortKeys *k, int64_t *first, int64_t hole, int64_t top, int64_t value)
{
    int64_t parent = (hole - 1) / 2;
    while (hole > top && goes_before(k, first[parent], value)) {
        first[hole] = first[parent];
        hole = parent;
        parent = (hole - 1) / 2;
    }
    first[hole] = value;
}

/* std::__adjust_heap */
static void cxx_adjust_heap(const SortKeys *k, int64_t *first, int64_t hole, int64_t len, int64_t value)
{
    int64_t top = hole, child = hole;
    while (child < (len - 1) / 2) {
        child = 2 * (child + 1);
        if (goes_before(k, first[child], first[child - 1])) child--;
        first[hole] = first[child];
        hole = child;
    }
    if ((len & 1) == 0 && child == (len - 2) / 2) {
        child = 2 * (child + 1);
        first[hole] = first[child - 1];
        hole = child - 1;
    }
    cxx_push_heap(k, first, hole, top, value);
}

/* std::__make_heap */
static void cxx_make_heap(const SortKeys *k, int64_t *first, int64_t len)
{
    if (len < 2) return;
    for (int64_t parent = (len - 2) / 2;; parent--) {
        cxx_adjust_heap(k, first, parent, len, first[parent]);
        if (parent == 0) return;
    }
}

/* std::__pop_heap: the heap's top to *result, *result's value into the heap [first, first + len) */
static void cxx_pop_heap(const SortKeys *k, int64_t *first, int64_t len, int64_t *result)
{
    int64_t value = *result;
    *result = *first;
    cxx_adjust_heap(k, first, 0, len, value);
}

/* std::__heap_select */
static void cxx_heap_select(const SortKeys *k, int64_t *first, int64_t *middle, int64_t *last)
{
    cxx_make_heap(k, first, middle - first);
    for (int64_t *i = middle; i < last; i++)
        if (goes_before(k, *i, *first)) cxx_pop_heap(k, first, middle - first, i);
}

/* std::__partial_sort: the first middle - first in order, the rest in no useful order */
static void cxx_partial_sort(const SortKeys *k, int64_t *first, int64_t *middle, int64_t *last)
{
    cxx_heap_select(k, first, middle, last);
    while (middle - first > 1) {                            /* std::__sort_heap */
        middle--;
        cxx_pop_heap(k, first, middle - first, middle);
    }
}

/* std::__unguarded_linear_insert */
static void cxx_linear_insert(const SortKeys *k, int64_t *last)
{
    int64_t val = *last, *next = last - 1;
    while (goes_before(k, val, *next)) {
        *last = *next;
        last = next--;
    }
    *last = val;
}

/* std::__insertion_sort */
static void cxx_insertion_sort(const SortKeys *k, int64_t *first, int64_t *last)
{
    if (first == last) return;
    for (int64_t *i = first + 1; i != last; i++) {
        if (goes_before(k, *i, *first)) {
            int64_t val = *i;
            memmove(first + 1, first, (size_t)(i - first) * sizeof *first);
            *first = val;
        } else {
            cxx_linear_insert(k, i);
        }
    }
}

/* std::__unguarded_partition_pivot: the median of first[1], the middle and the last moved to
 * first[0], then Hoare's partition around it */
static int64_t *cxx_partition_pivot(const SortKeys *k, int64_t *first, int64_t *last)
{
    int64_t *a = first + 1, *b = first + (last - first) / 2, *c = last - 1;
    if (goes_before(k, *a, *b)) {
        if (goes_before(k, *b, *c)) cxx_swap(first, b);
        else if (goes_before(k, *a, *c)) cxx_swap(first, c);
        else cxx_swap(first, a);
    } else if (goes_before(k, *a, *c)) {
        cxx_swap(first, a);
    } else if (goes_before(k, *b, *c)) {
        cxx_swap(first, c);
    } else {
        cxx_swap(first, b);
    }
    int64_t *lo = first + 1, *hi = last;
    for (;;) {
        while (goes_before(k, *lo, *first)) lo++;
        hi--;
        while (goes_before(k, *first, *hi)) hi--;
        if (!(lo < hi)) return lo;
        cxx_swap(lo, hi);
        lo++;
    }
}

/* std::__lg */
static int cxx_lg(int64_t n)
{
    return 63 - __builtin_clzll((unsigned long long)n);
}

enum { CXX_THRESHOLD = 16 };     /* std::sort's _S_threshold */

/* std::__introsort_loop */
static void cxx_introsort_loop(const SortKeys *k, int64_t *first, int64_t *last, int depth)
{
    while (last - first > CXX_THRESHOLD) {
        if (depth == 0) {
            cxx_partial_sort(k, first, last, last);
            return;
        }
        depth--;
        int64_t *cut = cxx_partition_pivot(k, first, last);
        cxx_introsort_loop(k, cut, last, depth);
        last = cut;
    }
}

/* std::sort */
static void cxx_sort(const SortKeys *k, int64_t *first, int64_t n)
{
    if (n < 2) return;
    cxx_introsort_loop(k, first, first + n, 2 * cxx_lg(n));
    if (n > CXX_THRESHOLD) {                                 /* std::__final_insertion_sort */
        cxx_insertion_sort(k, first, first + CXX_THRESHOLD);
        for (int64_t *i = first + CXX_THRESHOLD; i != first + n; i++) cxx_linear_insert(k, i);
    } else {
        cxx_insertion_sort(k, first, first + n);
    }
}

/* std::nth_element (std::__introselect) */
static void cxx_nth_element(const SortKeys *k, int64_t *first, int64_t *nth, int64_t *last)
{
    if (first == last || nth == last) return;
    int depth = 2 * cxx_lg(last - first);
    while (last - first > 3) {
        if (depth == 0) {
            cxx_heap_select(k, first, nth + 1, last);
            cxx_swap(first, nth);
            return;
        }
        depth--;
        int64_t *cut = cxx_partition_pivot(k, first, last);
        if (cut <= nth) first = cut;
        else last = cut;
    }
    cxx_insertion_sort(k, first, last);
}

/* PyTorch's topk_impl_loop on one line of n elements: its first kk are the top kk (largest or
 * smallest by k->desc), in order when sorted. */
static void topk_line(const SortKeys *k, int64_t *idx, int64_t n, int64_t kk, bool sorted)
{
    if (kk <= 0) return;
    if (kk * 64 <= n) {
        cxx_partial_sort(k, idx, idx + kk, idx + n);
    } else {
        cxx_nth_element(k, idx, idx + kk - 1, idx + n);
        if (sorted) cxx_sort(k, idx, kk - 1);
    }
}

/* How a line is ordered: PyTorch's sort(stable=True) (any stable sort), sort(stable=False)
 * (std::sort), or topk's selection of the first k; or, by select_line, one element of it picked
 * to the front (kthvalue, median(dim), nanmedian(dim), median(), nanmedian(), mode), or each
 * position given the index of the running max / min (cummax, cummin: by desc). */
typedef enum {
    ORDER_STABLE, ORDER_SORT, ORDER_TOPK, ORDER_KTH, ORDER_MEDIAN, ORDER_NANMEDIAN, ORDER_MEDIAN_ALL,
    ORDER_NANMEDIAN_ALL, ORDER_MODE, ORDER_CUMMAX
} LineOrder;

static void select_line(const SortKeys *k, int64_t *idx, int64_t n, LineOrder order, int64_t kk);

/* The int64 indices that order t along dim d, on t's device (for ORDER_TOPK, the first k of each
 * line are topk's, in order when sorted, the rest in no useful order). */
static bool sort_indices(Interp *I, FcTensor *t, int d, bool desc, LineOrder order, int64_t kk, bool sorted,
                         FcTensor **out)
{
    FcTensor *h;
    FcView v;
    FcError e;
    if (!host_dense(I, t, NULL, t->dtype, &h, &v)) return false;
    int64_t n = t->ndim ? t->shape[d] : 1, inner = 1, total = fc_view_numel(&v);
    for (int k = d + 1; k < t->ndim; k++) inner *= t->shape[k];
    FcView iv = {.dtype = FC_INT64, .ndim = t->ndim, .offset = 0};
    memcpy(iv.shape, t->shape, (size_t)t->ndim * sizeof *t->shape);
    fc_contiguous_strides(t->ndim, iv.shape, iv.strides);
    int64_t *res = mem_malloc((size_t)(total ? total : 1) * sizeof *res);
    /* a line's indices, and after them the merge sort's scratch */
    int64_t *idx = mem_malloc((size_t)(n ? (order == ORDER_STABLE ? 2 : 1) * n : 1) * sizeof *idx);
    bool ok = res && idx ? true : err_nomem(I);
    SortKeys k = {(const char *)v.data + v.offset * (int64_t)fc_dtype_size(v.dtype), v.dtype, desc, CMP_NAN_LAST};
    for (int64_t base = 0; ok && n > 0 && base < total; base++) {
        if ((base / inner) % n != 0) continue;      /* the first element of each line */
        for (int64_t j = 0; j < n; j++) idx[j] = base + j * inner;
        if (order == ORDER_STABLE) merge_sort(&k, idx, idx + n, n);
        else if (order == ORDER_SORT) cxx_sort(&k, idx, n);
        else if (order == ORDER_TOPK) topk_line(&k, idx, n, kk, sorted);
        else select_line(&k, idx, n, order, kk);
        for (int64_t j = 0; j < n; j++) res[base + j * inner] = (idx[j] - base) / inner;
    }
    iv.data = res;
    if (ok) ok = tensor_check(I, fc_from_view(I->fc, &iv, t->device, out, &e), &e);
    mem_free(res);
    mem_free(idx);
    fc_tensor_release(h);
    return ok;
}

/* *r replaced by a stored copy of it with these strides (dense); *r NULL on failure. */
static FcStatus store_strided(FcCtx *ctx, FcTensor **r, const int64_t *strides, FcError *e)
{
    FcTensor *t = NULL;
    FcStatus st = fc_empty(ctx, (*r)->dtype, (*r)->device, (*r)->ndim, (*r)->shape, strides, &t, e);
    if (st == FC_OK) st = fc_assign(ctx, t, *r, e);
    if (st != FC_OK) {
        fc_tensor_release(t);
        t = NULL;
    }
    return step(st, r, &t);
}

/* (values, indices) of t ordered along dim; ORDER_TOPK: only the first k; kthvalue, median and
 * mode's orders: only the first (the dim kept, of size 1). */
static bool sorted(Interp *I, FcTensor *t, int64_t dim, bool desc, LineOrder order, int64_t k, bool in_order,
                   FcTensor **values, FcTensor **indices)
{
    FcError e;
    int d;
    FcTensor *ix = NULL, *tmp;
    *values = *indices = NULL;
    if (!tensor_check(I, fc_wrap_dim(dim, t->ndim, &d, &e), &e)) return false;
    if (order == ORDER_TOPK && k > (t->ndim ? t->shape[d] : 1)) return err_raise(I, TDL_ERR_RUNTIME, "selected index k out of range");
    if (!sort_indices(I, t, d, desc, order, k, in_order, &ix)) return false;
    FcStatus st = FC_OK;
    bool picks = order >= ORDER_KTH && order <= ORDER_MODE;
    if ((order == ORDER_TOPK || picks) && t->ndim) {
        /* a new tensor, as PyTorch allocates the indices (not a view of all of them) */
        st = step(narrow(I->fc, ix, d, 0, picks ? 1 : k, &tmp, &e), &ix, &tmp);
        if (st == FC_OK) st = step(fc_clone(I->fc, ix, FC_MF_CONTIGUOUS, &tmp, &e), &ix, &tmp);
    }
    if (st == FC_OK) st = t->ndim ? fc_gather(I->fc, t, d, ix, values, &e) : fc_clone(I->fc, t, FC_MF_PRESERVE, values, &e);
    if (st == FC_OK && (order == ORDER_STABLE || order == ORDER_SORT) && t->ndim > 1) {
        /* laid out as t (PyTorch's sort meta: t's strides when dense, else dense in t's order) */
        int64_t like[FC_MAX_DIMS], c[FC_MAX_DIMS];
        st = fc_like_strides(I->fc, t, FC_MF_PRESERVE, like, &e);
        fc_contiguous_strides(t->ndim, t->shape, c);
        if (st == FC_OK && memcmp(like, c, (size_t)t->ndim * sizeof *c) != 0) {
            st = store_strided(I->fc, values, like, &e);
            if (st == FC_OK) st = store_strided(I->fc, &ix, like, &e);
        }
    }
    if (st != FC_OK) {
        fc_tensor_release(*values);
        *values = NULL;
        fc_tensor_release(ix);
        return tensor_check(I, st, &e);
    }
    *indices = ix;
    return true;
}

/* sort's and argsort's order: std::sort unless stable=True */
static LineOrder sort_order(const TensorSig *sig, TensorArg *a)
{
    TensorArg *stable = ARG("stable");
    return stable && !stable->none && stable->b ? ORDER_STABLE : ORDER_SORT;
}

bool impl_sort(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *r[2];
    if (!sorted(I, a[0].t, ARG("dim")->i, ARG("descending")->b, sort_order(sig, a), -1, true, &r[0], &r[1]))
        return false;
    return tuple_of(I, r, 2, &rt_sort, out);
}

bool impl_argsort(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *v, *ix;
    if (!sorted(I, a[0].t, ARG("dim")->i, ARG("descending")->b, sort_order(sig, a), -1, true, &v, &ix)) return false;
    fc_tensor_release(v);
    return tensor_value_steal(I, ix, out);
}

bool impl_topk(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *r[2];
    if (a[1].i < 0) return err_raise(I, TDL_ERR_RUNTIME, "selected index k out of range");
    if (a[0].t->dtype == FC_FLOAT16) return err_raise(I, TDL_ERR_RUNTIME, "\"topk_cpu\" not implemented for 'Half'");
    if (!sorted(I, a[0].t, ARG("dim")->i, ARG("largest")->b, ORDER_TOPK, a[1].i, ARG("sorted")->b, &r[0], &r[1]))
        return false;
    return tuple_of(I, r, 2, &rt_topk, out);
}

/* ---- kthvalue, median, nanmedian, mode, msort, cummax, cummin ------------------------------ */

/* PyTorch's quick_select_template (aten/src/ATen/native/SortingUtils.h), kthvalue's selection,
 * step for step (it swaps values and indices together, as these swaps move idx): idx[kk] ends as
 * the element of rank kk, NaN the largest value. */
static void quick_select(const SortKeys *k, int64_t *idx, int64_t n, int64_t kk)
{
    int64_t lo = 0, hi = n - 1;
    for (;;) {
        if (hi <= lo) return;
        if (hi == lo + 1) {
            if (goes_before(k, idx[hi], idx[lo])) cxx_swap(&idx[lo], &idx[hi]);
            return;
        }
        cxx_swap(&idx[lo + (hi - lo) / 2], &idx[lo + 1]);        /* the median of three */
        if (goes_before(k, idx[hi], idx[lo + 1])) cxx_swap(&idx[lo + 1], &idx[hi]);
        if (goes_before(k, idx[hi], idx[lo])) cxx_swap(&idx[lo], &idx[hi]);
        if (goes_before(k, idx[lo], idx[lo + 1])) cxx_swap(&idx[lo + 1], &idx[lo]);
        int64_t i = lo + 1, j = hi, piv = idx[lo];
        for (;;) {
            do i++; while (goes_before(k, idx[i], piv));
            do j--; while (goes_before(k, piv, idx[j]));
            if (j < i) break;
            cxx_swap(&idx[i], &idx[j]);
        }
        cxx_swap(&idx[lo], &idx[j]);
        if (j <= kk) lo = i;
        if (j >= kk) hi = j - 1;
    }
}

static bool key_nan(const SortKeys *k, int64_t i)
{
    return fc_dtype_is_float(k->dt) && isnan(key_f(k, i));
}

/* PyTorch's median_with_indices_impl (median(dim), nanmedian(dim)) and median_impl (median(),
 * nanmedian()) on one line: the first NaN where NaN propagates, else std::nth_element to the lower
 * median of the values that are not NaN. Its comparator orders equal values by index for the dim
 * forms (then the pick is the lower index) and not for the others. */
static void median_line(const SortKeys *k, int64_t *idx, int64_t n, bool skip_nan)
{
    int64_t nans = 0;
    for (int64_t j = 0; j < n; j++) {
        if (!key_nan(k, idx[j])) continue;
        if (!skip_nan) {
            idx[0] = idx[j];
            return;
        }
        nans++;
    }
    cxx_nth_element(k, idx, idx + (n - nans - 1) / 2, idx + n);
    idx[0] = idx[(n - nans - 1) / 2];
}

/* PyTorch's mode kernel (aten/src/ATen/native/cpu/TensorCompareKernel.cpp) on one line: std::sort
 * of (value, index) pairs by the value's plain `<`, then the first longest run of equal values (a
 * NaN equals nothing) gives the mode and the index of that run's last pair. */
static void mode_line(const SortKeys *k, int64_t *idx, int64_t n)
{
    cxx_sort(k, idx, n);
    int64_t best = 0, freq = 0, pick = idx[0];
    bool fl = fc_dtype_is_float(k->dt);
    for (int64_t j = 0; j < n; j++) {
        freq++;
        if (j == n - 1 || (fl ? key_f(k, idx[j]) != key_f(k, idx[j + 1]) : key_i(k, idx[j]) != key_i(k, idx[j + 1]))) {
            if (freq > best) {
                best = freq;
                pick = idx[j];
            }
            freq = 0;
        }
    }
    idx[0] = pick;
}

/* PyTorch's cummax_cummin_helper on one line: a NaN, or a value >= the running max (cummax;
 * <= the running min for cummin) while that is not NaN, becomes the running one, so among equal
 * values the last is taken and a NaN stays. */
static void cummax_line(const SortKeys *k, int64_t *idx, int64_t n)
{
    int64_t run = idx[0];
    for (int64_t j = 0; j < n; j++) {
        if (key_nan(k, idx[j]) || (!key_nan(k, run) && !goes_before(k, idx[j], run))) run = idx[j];
        idx[j] = run;
    }
}

/* The orders after ORDER_TOPK (LineOrder) on one line of n > 0 offsets. */
static void select_line(const SortKeys *k, int64_t *idx, int64_t n, LineOrder order, int64_t kk)
{
    SortKeys by = *k;
    by.cmp = order == ORDER_MEDIAN || order == ORDER_NANMEDIAN ? CMP_NAN_LAST_INDEX : order == ORDER_MODE ? CMP_PLAIN : CMP_NAN_LAST;
    if (order == ORDER_KTH) {
        quick_select(&by, idx, n, kk - 1);
        idx[0] = idx[kk - 1];
    } else if (order == ORDER_MODE) {
        mode_line(&by, idx, n);
    } else if (order == ORDER_CUMMAX) {
        /* not goes_before: x >= running ascending (cummax), x <= running descending (cummin) */
        cummax_line(&by, idx, n);
    } else {
        median_line(&by, idx, n, order == ORDER_NANMEDIAN || order == ORDER_NANMEDIAN_ALL);
    }
}

static const char *const values_indices[] = {"values", "indices"};
static const TupleFields rt_kthvalue = {"torch.return_types.kthvalue", values_indices, "KthvalueBackward0"};
static const TupleFields rt_median = {"torch.return_types.median", values_indices, "MedianBackward1"};
static const TupleFields rt_nanmedian = {"torch.return_types.nanmedian", values_indices, "NanmedianBackward1"};
static const TupleFields rt_mode = {"torch.return_types.mode", values_indices, "ModeBackward0"};
static const TupleFields rt_cummax = {"torch.return_types.cummax", values_indices, "CummaxBackward0"};
static const TupleFields rt_cummin = {"torch.return_types.cummin", values_indices, "CumminBackward0"};

/* PyTorch's "NAME_cpu" not implemented for 'Half' (and 'Bool'): the dtypes a kernel refuses. */
static bool dtype_refused(Interp *I, const FcTensor *t, const char *kernel, bool half)
{
    if (t->dtype == FC_BOOL || (half && t->dtype == FC_FLOAT16))
        return err_raise(I, TDL_ERR_RUNTIME, "\"%s\" not implemented for '%s'", kernel, fc_dtype_torch_name(t->dtype)), true;
    return false;
}

/* (values, indices) of the reduction of t along dim by one element per line (order, kk: as
 * sorted), as a torch.return_types tuple; a dim of size 0 has no element to pick (name's
 * IndexError). */
static bool picked(Interp *I, FcTensor *t, int64_t dim, bool keep, LineOrder order, int64_t kk, const char *name,
                   const TupleFields *fields, Value *out)
{
    FcTensor *r[2], *tmp;
    FcError e;
    int d;
    if (!tensor_check(I, fc_wrap_dim(dim, t->ndim, &d, &e), &e)) return false;
    if (t->ndim && t->shape[d] == 0)
        return err_raise(I, TDL_ERR_INDEX, "%s(): Expected reduction dim %d to have non-zero size.", name, d);
    if (order == ORDER_KTH && (kk < 1 || kk > (t->ndim ? t->shape[d] : 1)))
        return err_raise(I, TDL_ERR_RUNTIME, "kthvalue(): selected number k out of range for dimension %d", d);
    if (!sorted(I, t, d, false, order, kk, false, &r[0], &r[1])) return false;
    FcStatus st = FC_OK;
    for (int j = 0; j < 2 && st == FC_OK && !keep && t->ndim; j++)
        st = step(fc_squeeze(I->fc, r[j], UINT64_C(1) << d, &tmp, &e), &r[j], &tmp);
    if (st != FC_OK) {
        fc_tensor_release(r[0]);
        fc_tensor_release(r[1]);
        return tensor_check(I, st, &e);
    }
    return tuple_of(I, r, 2, fields, out);
}

bool impl_kthvalue(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    if (dtype_refused(I, a[0].t, "kthvalue_cpu", true)) return false;
    return picked(I, a[0].t, ARG("dim")->i, ARG("keepdim")->b, ORDER_KTH, a[1].i, "kthvalue", &rt_kthvalue, out);
}

/* median() / nanmedian(): the lower median of every element (NaN where one is and NaN propagates;
 * NaN for no elements), a 0-dim tensor. Its gradient goes evenly to the elements equal to it (to
 * the NaNs when it is NaN), as PyTorch's evenly_distribute_backward: with a gradient to record,
 * the result is max() (fc_max_all, whose gradient that is) of where(x == median, x, -inf) (+inf and
 * min() for a median of -inf), which may give 0 for a median of -0 with both zeros in t. The
 * elements are searched in t's logical order, where PyTorch's clone keeps a dense tensor's memory
 * order: only which zero or which NaN is returned could tell. */
static bool median_all(Interp *I, FcTensor *t, bool skip_nan, Value *out)
{
    FcTensor *flat = NULL, *v = NULL, *ix = NULL, *m = NULL, *fill = NULL, *w = NULL;
    FcScalar med;
    FcError e;
    int64_t n = fc_tensor_numel(t);
    if (dtype_refused(I, t, "median_cpu", false)) return false;
    if (n == 0) {
        FcScalar nan = {.f = NAN};
        /* at::full({}, NaN).to(dtype): an integer tensor gets what x86's conversion of a NaN
         * gives (the lowest int64 or int32, whose low bits the narrower types keep: 0) */
        if (!fc_dtype_is_float(t->dtype)) nan.i = t->dtype == FC_INT32 ? INT32_MIN : INT64_MIN;
        FcStatus st = fc_full(I->fc, t->dtype, t->device, 0, NULL, nan, &v, &e);
        return result(I, st, &e, v, out);
    }
    FcStatus st = fc_reshape(I->fc, t, 1, &n, &flat, &e);
    if (st != FC_OK) return tensor_check(I, st, &e);
    if (!sorted(I, flat, 0, false, skip_nan ? ORDER_NANMEDIAN_ALL : ORDER_MEDIAN_ALL, 1, false, &v, &ix)) {
        fc_tensor_release(flat);
        return false;
    }
    fc_tensor_release(ix);
    st = step(fc_reshape(I->fc, v, 0, NULL, &ix, &e), &v, &ix);
    if (st == FC_OK && fc_is_grad_enabled() && fc_requires_grad(t) && fc_dtype_is_float(t->dtype)) {
        bool is_nan, low;
        FcTensor *c;
        st = fc_item(I->fc, v, &med, &e);
        is_nan = isnan(med.f);
        low = med.f == -INFINITY;
        if (st == FC_OK) st = fc_detach(I->fc, v, &c, &e);
        if (st == FC_OK) {
            st = is_nan ? fc_binary(I->fc, FC_OP_NE, flat, flat, &m, &e) : fc_binary(I->fc, FC_OP_EQ, flat, c, &m, &e);
            fc_tensor_release(c);
        }
        if (st == FC_OK) st = float_scalar(I->fc, low ? INFINITY : -INFINITY, &fill, &e);
        if (st == FC_OK) st = fc_where(I->fc, m, flat, fill, &w, &e);
        if (st == FC_OK) {
            fc_tensor_release(v);
            v = NULL;
            st = fc_max_all(I->fc, w, 0, low, &v, &e);
        }
    }
    fc_tensor_release(flat);
    fc_tensor_release(m);
    fc_tensor_release(fill);
    fc_tensor_release(w);
    return chain_result(I, st, &e, v, out);
}

bool impl_median(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    if (!ARG("dim")) return median_all(I, a[0].t, false, out);
    if (dtype_refused(I, a[0].t, "median_out", false)) return false;
    return picked(I, a[0].t, a[1].i, ARG("keepdim")->b, ORDER_MEDIAN, 1, "median", &rt_median, out);
}

bool impl_nanmedian(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    if (!ARG("dim")) return median_all(I, a[0].t, true, out);
    if (dtype_refused(I, a[0].t, "median_out", false)) return false;
    return picked(I, a[0].t, a[1].i, ARG("keepdim")->b, ORDER_NANMEDIAN, 1, "nanmedian", &rt_nanmedian, out);
}

bool impl_mode(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    return picked(I, a[0].t, ARG("dim")->i, ARG("keepdim")->b, ORDER_MODE, 1, "mode", &rt_mode, out);
}

/* msort: sort(dim=0)'s values */
bool impl_msort(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *v, *ix;
    if (!sorted(I, a[0].t, 0, false, ORDER_SORT, -1, true, &v, &ix)) return false;
    fc_tensor_release(ix);
    return tensor_value_steal(I, v, out);
}

/* cummax(dim) / cummin(dim): the running max / min and its index (cummax_line), the values
 * gathered by the indices (so the gradient is PyTorch's scatter-add into them). */
static bool cummax(Interp *I, TensorArg *a, bool is_min, Value *out)
{
    FcTensor *r[2];
    if (a[0].t->dtype == FC_FLOAT16)
        return err_raise(I, TDL_ERR_RUNTIME, "\"%s\" not implemented for 'Half'", is_min ? "cummin_cpu" : "cummax_cpu");
    if (!sorted(I, a[0].t, a[1].i, is_min, ORDER_CUMMAX, -1, false, &r[0], &r[1])) return false;
    return tuple_of(I, r, 2, is_min ? &rt_cummin : &rt_cummax, out);
}

bool impl_cummax(Interp *I, const TensorSig *sig, TensorArg *a, Value *out) { (void)sig; return cummax(I, a, false, out); }
bool impl_cummin(Interp *I, const TensorSig *sig, TensorArg *a, Value *out) { (void)sig; return cummax(I, a, true, out); }

/* Slices a and b (each len elements at a * len, b * len of base, of dtype dt) in PyTorch's
 * unique_dim order: lexicographic by < and > (a NaN compares neither way); -1, 0 or 1. */
static int slice_cmp(const char *base, FcDType dt, int64_t len, int64_t a, int64_t b)
{
    size_t sz = fc_dtype_size(dt);
    for (int64_t i = 0; i < len; i++) {
        FcScalar x = fc_scalar_load(dt, base + (a * len + i) * (int64_t)sz);
        FcScalar y = fc_scalar_load(dt, base + (b * len + i) * (int64_t)sz);
        if (fc_dtype_is_float(dt) ? x.f < y.f : x.i < y.i) return -1;
        if (fc_dtype_is_float(dt) ? x.f > y.f : x.i > y.i) return 1;
    }
    return 0;
}

/* Whether slices a and b are equal element by element (a NaN equals nothing). */
static bool slice_eq(const char *base, FcDType dt, int64_t len, int64_t a, int64_t b)
{
    size_t sz = fc_dtype_size(dt);
    for (int64_t i = 0; i < len; i++) {
        FcScalar x = fc_scalar_load(dt, base + (a * len + i) * (int64_t)sz);
        FcScalar y = fc_scalar_load(dt, base + (b * len + i) * (int64_t)sz);
        if (fc_dtype_is_float(dt) ? !(x.f == y.f) : x.i != y.i) return false;
    }
    return true;
}

/* unique's result, as torch.unique builds it: the m slices of src along d that first[] names, then
 * (when not NULL) the inverse, shaped as inv_shape, and the counts of each slice, as int64 tensors on
 * src's device; one tensor, or a tuple when inverse or counts are asked for. */
static bool unique_result(Interp *I, FcTensor *src, int d, const int64_t *first, int64_t m, const int64_t *inverse,
                          int inv_ndim, const int64_t *inv_shape, const int64_t *counts, Value *out)
{
    FcError e;
    FcTensor *sel = NULL, *r[3] = {NULL, NULL, NULL};
    FcView iv = {.dtype = FC_INT64, .ndim = 1, .offset = 0, .strides = {1}};
    iv.shape[0] = m;
    iv.data = (void *)first;
    int nr = 1;
    bool ok = tensor_check(I, fc_from_view(I->fc, &iv, src->device, &sel, &e), &e);
    if (ok) ok = tensor_check(I, fc_index_select(I->fc, src, d, sel, &r[0], &e), &e);
    if (ok && inverse) {
        FcView xv = {.dtype = FC_INT64, .ndim = inv_ndim, .offset = 0, .data = (void *)inverse};
        memcpy(xv.shape, inv_shape, (size_t)inv_ndim * sizeof *inv_shape);
        fc_contiguous_strides(inv_ndim, xv.shape, xv.strides);
        ok = tensor_check(I, fc_from_view(I->fc, &xv, src->device, &r[nr++], &e), &e);
    }
    if (ok && counts) {
        iv.data = (void *)counts;
        ok = tensor_check(I, fc_from_view(I->fc, &iv, src->device, &r[nr++], &e), &e);
    }
    fc_tensor_release(sel);
    if (!ok) {
        for (int k = 0; k < 3; k++) fc_tensor_release(r[k]);
        return false;
    }
    if (nr == 1) return tensor_value_steal(I, r[0], out);
    return tuple_of(I, r, nr, NULL, out);
}

/* unique(dim=d): the distinct slices of t along d, sorted (always, as torch's unique_dim), with
 * the inverse (which output slice each input slice is) and the counts when asked. */
static bool unique_dim(Interp *I, FcTensor *t, int64_t dim, bool inv, bool cnt, Value *out)
{
    FcError e;
    int d;
    if (t->ndim == 0)
        return err_raise(I, TDL_ERR_INDEX, "Dimension specified as %lld but tensor has no dimensions", (long long)dim);
    if (!tensor_check(I, fc_wrap_dim(dim, t->ndim, &d, &e), &e)) return false;
    if (t->dtype == FC_FLOAT16 || t->dtype == FC_BFLOAT16)
        return err_raise(I, TDL_ERR_RUNTIME, "\"unique_dim\" not implemented for '%s'", fc_dtype_torch_name(t->dtype));
    int64_t n = t->shape[d], len = 1;
    for (int k = 0; k < t->ndim; k++)
        if (k != d) len *= t->shape[k];
    if (n > 0 && len == 0)
        return err_raise(I, TDL_ERR_RUNTIME, "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied");
    int64_t perm[FC_MAX_DIMS];
    perm[0] = d;
    for (int k = 0, j = 1; k < t->ndim; k++)
        if (k != d) perm[j++] = k;
    FcTensor *h;
    FcView v;
    if (!host_dense(I, t, perm, t->dtype, &h, &v)) return false;
    const char *base = (const char *)v.data + v.offset * (int64_t)fc_dtype_size(v.dtype);
    size_t cap = (size_t)(n ? n : 1);
    int64_t *idx = mem_malloc(cap * sizeof *idx), *tmpi = mem_malloc(cap * sizeof *tmpi);
    int64_t *first = mem_malloc(cap * sizeof *first), *inverse = mem_malloc(cap * sizeof *inverse);
    int64_t *counts = mem_calloc(cap, sizeof *counts), m = 0;
    bool ok = idx && tmpi && first && inverse && counts ? true : err_nomem(I);
    if (ok) {
        for (int64_t j = 0; j < n; j++) idx[j] = j;
        /* stable merge sort of the slice indices */
        for (int64_t w = 1; w < n; w *= 2) {
            for (int64_t lo = 0; lo < n; lo += 2 * w) {
                int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
                int64_t a = lo, b = mid, o = lo;
                while (a < mid && b < hi) tmpi[o++] = slice_cmp(base, v.dtype, len, idx[b], idx[a]) < 0 ? idx[b++] : idx[a++];
                while (a < mid) tmpi[o++] = idx[a++];
                while (b < hi) tmpi[o++] = idx[b++];
            }
            memcpy(idx, tmpi, (size_t)n * sizeof *idx);
        }
        for (int64_t j = 0; j < n; j++) {
            if (m == 0 || !slice_eq(base, v.dtype, len, first[m - 1], idx[j])) first[m++] = idx[j];
            inverse[idx[j]] = m - 1;
            counts[m - 1]++;
        }
    }
    fc_tensor_release(h);
    if (ok) ok = unique_result(I, t, d, first, m, inv ? inverse : NULL, 1, &n, cnt ? counts : NULL, out);
    mem_free(idx);
    mem_free(tmpi);
    mem_free(first);
    mem_free(inverse);
    mem_free(counts);
    return ok;
}

/* unique(): the sorted distinct values of the flattened tensor, with the index of each input
 * element's value among them (return_inverse) and how often each occurs (return_counts). */
bool impl_unique(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *t = a[0].t, *flat = NULL, *ord = NULL, *h = NULL;
    TensorArg *dim = ARG("dim");
    bool inv = ARG("return_inverse")->b, cnt = ARG("return_counts")->b;
    FcError e;
    FcView v;
    if (!dim->none) return unique_dim(I, t, dim->i, inv, cnt, out);
    int64_t n = fc_tensor_numel(t), one = n;
    FcStatus st = fc_reshape(I->fc, t, 1, &one, &flat, &e);
    if (!tensor_check(I, st, &e)) return false;
    bool ok = sort_indices(I, flat, 0, false, ORDER_STABLE, -1, true, &ord);
    if (ok) ok = tensor_check(I, fc_to(I->fc, flat, flat->dtype, fc_cpu(), &h, &e), &e);
    if (ok) ok = tensor_check(I, fc_host_view(I->fc, h, &v, &e), &e);
    FcView ov;
    FcTensor *oh = NULL;
    if (ok) ok = tensor_check(I, fc_to(I->fc, ord, FC_INT64, fc_cpu(), &oh, &e), &e);
    if (ok) ok = tensor_check(I, fc_host_view(I->fc, oh, &ov, &e), &e);
    int64_t *first = NULL, *inverse = NULL, *counts = NULL, m = 0;
    if (ok) {
        first = mem_malloc((size_t)(n ? n : 1) * sizeof *first);
        inverse = mem_malloc((size_t)(n ? n : 1) * sizeof *inverse);
        counts = mem_calloc((size_t)(n ? n : 1), sizeof *counts);
        ok = first && inverse && counts ? true : err_nomem(I);
    }
    if (ok) {
        SortKeys k = {(const char *)v.data + v.offset * (int64_t)fc_dtype_size(v.dtype), v.dtype, false, CMP_NAN_LAST};
        const int64_t *o = (const int64_t *)ov.data + ov.offset;
        for (int64_t j = 0; j < n; j++) {
            int64_t e0 = o[j * ov.strides[0]] * v.strides[0];
            /* sorted: a new value is one that the previous one goes before (NaNs stay apart) */
            bool fresh = m == 0 || goes_before(&k, first[m - 1] * v.strides[0], e0) ||
                         (fc_dtype_is_float(v.dtype) && isnan(key_f(&k, e0)));
            if (fresh) first[m++] = o[j * ov.strides[0]];
            inverse[o[j * ov.strides[0]]] = m - 1;
            counts[m - 1]++;
        }
    }
    if (ok) ok = unique_result(I, flat, 0, first, m, inv ? inverse : NULL, t->ndim, t->shape, cnt ? counts : NULL, out);
    mem_free(first);
    mem_free(inverse);
    mem_free(counts);
    fc_tensor_release(flat);
    fc_tensor_release(ord);
    fc_tensor_release(h);
    fc_tensor_release(oh);
    return ok;
}

/* searchsorted(sorted_sequence, values) / bucketize(values, boundaries): PyTorch's binary search
 * (cus_lower_bound / cus_upper_bound: mid = start + (end - start) / 2, start = mid + 1 while
 * !(b[mid] >= v), or !(b[mid] > v) for right), run on every value at once for as many halvings as
 * the longest search takes, so that unsorted boundaries and NaNs give torch's very indices. The
 * boundaries are 1-D, or their leading dims are the values'. */
/* op(a, v) with v an int64 0-dim tensor: an int64 a stays int64. */
static FcStatus int_op(FcCtx *ctx, FcOp op, FcTensor *a, int64_t v, FcTensor **out, FcError *e)
{
    FcTensor *s = NULL;
    FcStatus st = int_scalar(ctx, FC_INT64, v, &s, e);
    if (st == FC_OK) st = fc_binary(ctx, op, a, s, out, e);
    fc_tensor_release(s);
    return st;
}

static bool search(Interp *I, FcTensor *b, FcTensor *v, bool right, bool i32, Value *out)
{
    FcError e;
    char sb[200], sv[200];
    if (b->ndim == 0)
        return err_raise(I, TDL_ERR_RUNTIME,
                         "torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension");
    if (b->ndim > 1 && v->ndim == 0)
        return err_raise(I, TDL_ERR_RUNTIME, "torch.searchsorted(): input value can be a scalar only when boundaries tensor "
                         "dimension is 1, but we got boundaries tensor dim(%d) and input value's dim(0) numel(1)", b->ndim);
    bool lead = b->ndim == 1 || b->ndim == v->ndim;
    for (int k = 0; lead && b->ndim > 1 && k < b->ndim - 1; k++) lead = b->shape[k] == v->shape[k];
    if (!lead)
        return err_raise(I, TDL_ERR_RUNTIME, "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                         "dimensions of boundaries tensor and input value tensor must match, but we got boundaries "
                         "tensor %s and input value tensor %s", ints_text(b->ndim, b->shape, sb, sizeof sb),
                         ints_text(v->ndim, v->shape, sv, sizeof sv));
    if (b->dtype == FC_BOOL || v->dtype == FC_BOOL)
        return err_raise(I, TDL_ERR_RUNTIME, "\"searchsorted_out_cpu\" not implemented for 'Bool'");
    int64_t n = b->shape[b->ndim - 1];
    FcScalar zero = {.i = 0}, top = {.i = n};
    FcTensor *lo = NULL, *hi = NULL, *tmp;
    FcStatus st = fc_full(I->fc, FC_INT64, v->device, v->ndim, v->shape, zero, &lo, &e);
    if (st == FC_OK) st = fc_full(I->fc, FC_INT64, v->device, v->ndim, v->shape, top, &hi, &e);
    for (int64_t left = n; left > 0 && st == FC_OK; left >>= 1) {     /* bit_length(n) halvings */
        FcTensor *active = NULL, *mid = NULL, *at = NULL, *val = NULL, *go = NULL, *c = NULL, *nxt = NULL;
        st = fc_binary(I->fc, FC_OP_LT, lo, hi, &active, &e);
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_SUB, hi, lo, &mid, &e);
        if (st == FC_OK) st = step(int_op(I->fc, FC_OP_SHR, mid, 1, &tmp, &e), &mid, &tmp);
        if (st == FC_OK) st = step(fc_binary(I->fc, FC_OP_ADD, lo, mid, &tmp, &e), &mid, &tmp);
        if (st == FC_OK) st = int_op(I->fc, FC_OP_MIN, mid, n - 1, &at, &e);       /* in range when idle */
        if (st == FC_OK && b->ndim == 1) {
            FcIndex ix = {.kind = FC_IX_TENSOR, .t = at};
            st = fc_index(I->fc, b, 1, &ix, &val, &e);
        } else if (st == FC_OK) {
            st = fc_gather(I->fc, b, -1, at, &val, &e);
        }
        if (st == FC_OK) st = fc_binary(I->fc, right ? FC_OP_GT : FC_OP_GE, val, v, &go, &e);
        if (st == FC_OK) st = step(fc_unary(I->fc, FC_OP_NOT, go, &tmp, &e), &go, &tmp);       /* go right */
        if (st == FC_OK) st = fc_binary(I->fc, FC_OP_AND, active, go, &c, &e);
        if (st == FC_OK) st = int_op(I->fc, FC_OP_ADD, mid, 1, &nxt, &e);
        if (st == FC_OK) st = step(fc_where(I->fc, c, nxt, lo, &tmp, &e), &lo, &tmp);
        if (st == FC_OK) st = step(fc_unary(I->fc, FC_OP_NOT, go, &tmp, &e), &go, &tmp);       /* go left */
        if (st == FC_OK) st = step(fc_binary(I->fc, FC_OP_AND, active, go, &tmp, &e), &c, &tmp);
        if (st == FC_OK) st = step(fc_where(I->fc, c, mid, hi, &tmp, &e), &hi, &tmp);
        fc_tensor_release(active);
        fc_tensor_release(mid);
        fc_tensor_release(at);
        fc_tensor_release(val);
        fc_tensor_release(go);
        fc_tensor_release(c);
        fc_tensor_release(nxt);
    }
    fc_tensor_release(hi);
    if (st == FC_OK && i32) st = step(fc_cast(I->fc, lo, FC_INT32, &tmp, &e), &lo, &tmp);
    return chain_result(I, st, &e, lo, out);
}

bool impl_searchsorted(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    TensorArg *side = &a[4];
    bool right = a[3].b;
    (void)sig;
    if (!side->none) {
        if (strcmp(side->str, "left") != 0 && strcmp(side->str, "right") != 0)
            return err_raise(I, TDL_ERR_RUNTIME, "torch.searchsorted(): side can only be 'left' or 'right' but got %s",
                             side->str);
        if (right && strcmp(side->str, "left") == 0)
            return err_raise(I, TDL_ERR_RUNTIME, "torch.searchsorted(): side and right can't be set to opposites, got "
                             "side of left while right was True");
        right = strcmp(side->str, "right") == 0;
    }
    return search(I, a[0].t, a[1].t, right, a[2].b, out);
}

bool impl_bucketize(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    (void)sig;
    if (a[1].t->ndim != 1)
        return err_raise(I, TDL_ERR_RUNTIME, "boundaries tensor must be 1 dimension, but got dim(%d)", a[1].t->ndim);
    return search(I, a[1].t, a[0].t, a[3].b, a[2].b, out);
}

/* ---- unique_consecutive ---- */

/* unique_consecutive(return_inverse, return_counts, dim): each run of equal neighbours (slices
 * along dim, or the flattened elements) kept once, as PyTorch compares them: with the last kept
 * one, a NaN equal to nothing. */
bool impl_unique_consecutive(Interp *I, const TensorSig *sig, TensorArg *a, Value *out)
{
    FcTensor *t = a[0].t, *src = NULL, *h = NULL;
    TensorArg *dim = ARG("dim");
    bool inv = ARG("return_inverse")->b, cnt = ARG("return_counts")->b;
    FcError e;
    FcView v;
    int d = 0;
    int64_t perm[FC_MAX_DIMS], n, len = 1;
    bool flat = dim->none;
    if (!flat) {
        if (t->ndim == 0)
            return err_raise(I, TDL_ERR_INDEX, "Dimension specified as %lld but tensor has no dimensions", (long long)dim->i);
        if (!tensor_check(I, fc_wrap_dim(dim->i, t->ndim, &d, &e), &e)) return false;
        flat = t->ndim == 1;
    }
    if (flat) {
        int64_t all = fc_tensor_numel(t);
        if (!tensor_check(I, fc_reshape(I->fc, t, 1, &all, &src, &e), &e)) return false;
        d = 0;
    } else {
        src = fc_tensor_retain(t);
        for (int k = 0; k < t->ndim; k++)
            if (k != d) len *= t->shape[k];
        if (t->shape[d] > 0 && len == 0) {
            fc_tensor_release(src);
            return err_raise(I, TDL_ERR_RUNTIME, "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied");
        }
    }
    n = src->shape[d];
    perm[0] = d;
    for (int k = 0, j = 1; k < src->ndim; k++)
        if (k != d) perm[j++] = k;
    if (!host_dense(I, src, perm, src->dtype, &h, &v)) {
        fc_tensor_release(src);
        return false;
    }
    const char *base = (const char *)v.data + v.offset * (int64_t)fc_dtype_size(v.dtype);
    size_t cap = (size_t)(n ? n : 1);
    int64_t *first = mem_malloc(cap * sizeof *first), *inverse = mem_malloc(cap * sizeof *inverse);
    int64_t *counts = mem_calloc(cap, sizeof *counts), m = 0;
    bool ok = first && inverse && counts ? true : err_nomem(I);
    for (int64_t j = 0; ok && j < n; j++) {
        if (m == 0 || !slice_eq(base, v.dtype, len, first[m - 1], j)) first[m++] = j;
        inverse[j] = m - 1;
        counts[m - 1]++;
    }
    fc_tensor_release(h);
    if (ok)
        ok = unique_result(I, src, d, first, m, inv ? inverse : NULL, flat ? t->ndim : 1, flat ? t->shape : &n,
                           cnt ? counts : NULL, out);
    mem_free(first);
    mem_free(inverse);
    mem_free(counts);
    fc_tensor_release(src);
    return ok;
}
