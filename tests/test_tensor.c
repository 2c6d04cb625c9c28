/* test_tensor.c — tensors through the public API: argument binding errors in PyTorch's words (one
 * table row per mistake), errors of fcdim with their kinds, tensor values across runs and
 * interpreters, the default device, --dump-ir / --dump-kernels through tdl_config, Ctrl-C inside
 * a kernel. What tensor programs print is checked by the tests/scripts/tensor_*.tdl scripts. */
#include "tests.h"
#include "capture.h"
#include "tdl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static Out out, dumped;
static tdl_interp *T;

static void setup(void)
{
    memset(&out, 0, sizeof out);
    memset(&dumped, 0, sizeof dumped);
    tdl_config cfg = {0};
    cfg.write = capture;
    cfg.write_ud = &out;
    T = tdl_open(&cfg);
    ck_assert_ptr_nonnull(T);
    ck_assert_int_eq(tdl_run_string(T, "x = arange(6)\nm = x.reshape(2, 3)", "<setup>"), TDL_OK);
}

static void teardown(void)
{
    tdl_close(T);
    T = NULL;
}

/* ---- errors: kind and whole message ---- */

static const struct { const char *code; tdl_error_kind kind; const char *msg; } errors[] = {
    /* binding: types, counts, keywords */
    {"x.reshape('a')", TDL_ERR_TYPE, "reshape(): argument 'shape' (position 1) must be tuple of ints, not str"},
    {"reshape(x, 'a')", TDL_ERR_TYPE, "reshape(): argument 'shape' (position 2) must be tuple of ints, not str"},
    {"x.reshape((2, 1.5))", TDL_ERR_TYPE,
     "reshape(): argument 'shape' must be tuple of ints, but found element of type float at pos 2"},
    {"x.reshape(2, 'a')", TDL_ERR_TYPE,
     "reshape(): argument 'shape' must be tuple of ints, but found element of type str at pos 2"},
    {"x.sum(foo=1)", TDL_ERR_TYPE, "sum() got an unexpected keyword argument 'foo'"},
    {"x.max(foo=1)", TDL_ERR_TYPE, "max() got an unexpected keyword argument 'foo'"},
    {"exp(x, 1)", TDL_ERR_TYPE, "exp() takes 1 positional argument but 2 were given"},
    {"x.exp(1)", TDL_ERR_TYPE, "exp() takes 0 positional arguments but 1 was given"},
    {"exp('a')", TDL_ERR_TYPE, "exp(): argument 'input' (position 1) must be Tensor, not str"},
    {"x.sum(0, 1)", TDL_ERR_TYPE, "sum(): argument 'keepdim' (position 2) must be bool, not int"},
    {"x.sum(0, dim=1)", TDL_ERR_TYPE, "sum() got multiple values for argument 'dim'"},
    {"m.transpose(0)", TDL_ERR_TYPE, "transpose() missing 1 required positional argument: 'dim1'"},
    {"m.transpose()", TDL_ERR_TYPE, "transpose() missing 2 required positional arguments: 'dim0' and 'dim1'"},
    {"zeros(2, 3, dtype=5)", TDL_ERR_TYPE, "zeros(): argument 'dtype' must be dtype, not int"},
    {"x.to('cpu', 5)", TDL_ERR_TYPE,
     "to() received an invalid combination of arguments - got (str, int), but expected one of:\n"
     " * (Device? device=None, ScalarType? dtype=None, bool non_blocking=False, bool copy=False, *, "
     "MemoryFormat? memory_format=None)\n"
     " * (ScalarType dtype, bool non_blocking=False, bool copy=False, *, MemoryFormat? memory_format=None)\n"
     " * (Tensor other, bool non_blocking=False, bool copy=False, *, MemoryFormat? memory_format=None)"},
    {"max(x, 'a')", TDL_ERR_TYPE,
     "max() received an invalid combination of arguments - got (Tensor, str), but expected one of:\n"
     " * (Tensor self)\n * (Tensor self, int dim, bool keepdim=False)\n * (Tensor self, Tensor other)"},
    {"cat([x, 1])", TDL_ERR_TYPE, "cat(): expected Tensor as element 1 in argument 'tensors', but got int"},
    {"x.contiguous(memory_format=1)", TDL_ERR_TYPE, "contiguous(): argument 'memory_format' must be memory_format, not int"},
    {"x.to('xpu')", TDL_ERR_RUNTIME, "Expected one of cpu, cuda device type at start of device string: xpu"},
    {"savez('f.npz', x, y=1)", TDL_ERR_TYPE, "savez(): argument 'y' must be Tensor, not int"},
    /* tensor(data) */
    {"tensor([[1, 2], [3, 4, 5]])", TDL_ERR_VALUE, "expected sequence of length 2 at dim 1 (got 3)"},
    {"tensor([1, [2]])", TDL_ERR_TYPE, "'list' object cannot be interpreted as an integer"},
    {"tensor([1.0, [2]])", TDL_ERR_TYPE, "must be real number, not list"},
    {"tensor([[1], 2])", TDL_ERR_TYPE, "not a sequence"},
    {"tensor([None])", TDL_ERR_RUNTIME, "Could not infer dtype of NoneType"},
    {"tensor([x, x])", TDL_ERR_VALUE, "only one element tensors can be converted to Python scalars"},
    /* host values */
    {"bool(x)", TDL_ERR_RUNTIME,
     "Boolean value of Tensor with more than one value is ambiguous (use where(cond, a, b) to choose per element, "
     "or any() / all())"},
    {"if zeros(0):\n    pass", TDL_ERR_RUNTIME,
     "Boolean value of Tensor with no values is ambiguous (use where(cond, a, b) to choose per element, "
     "or any() / all())"},
    {"len(tensor(1))", TDL_ERR_TYPE, "len() of a 0-d tensor"},
    {"for v in tensor(1):\n    pass", TDL_ERR_TYPE, "iteration over a 0-d tensor"},
    {"float(x)", TDL_ERR_VALUE, "only one element tensors can be converted to Python scalars"},
    {"int(tensor(float('nan')))", TDL_ERR_VALUE, "cannot convert float NaN to integer"},
    {"x.item()", TDL_ERR_VALUE, "only one element tensors can be converted to Python scalars"},
    {"x[7]", TDL_ERR_INDEX, "index 7 is out of bounds for dimension 0 with size 6"},
    {"x[-7]", TDL_ERR_INDEX, "index -7 is out of bounds for dimension 0 with size 6"},
    {"tensor(1)[0]", TDL_ERR_INDEX,
     "invalid index of a 0-dim tensor. Use `tensor.item()` to convert a 0-dim tensor to a number"},
    {"m.index_put_((0,), tensor(1))", TDL_ERR_TYPE,
     "index_put_(): expected Tensor as element 0 in argument 'indices', but got int"},
    {"x[0] = 'a'", TDL_ERR_TYPE, "can't assign a str to a torch.LongTensor"},
    /* PyTorch 1.13 reads past the index here; PyTorch 2 raises this */
    {"tensor(5.).index_select(0, tensor([0, 0]))", TDL_ERR_INDEX,
     "index_select(): Index to scalar can have only 1 value, got 2 value(s)"},
    {"x[1.5]", TDL_ERR_INDEX,
     "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got float)"},
    {"x + 'a'", TDL_ERR_TYPE, "unsupported operand type(s) for +: 'Tensor' and 'str'"},
    {"[1] * x", TDL_ERR_TYPE, "only integer tensors of a single element can be converted to an index"},
    {"x < 'a'", TDL_ERR_TYPE, "'<' not supported between instances of 'Tensor' and 'str'"},
    {"'a' in x", TDL_ERR_RUNTIME, "Tensor.__contains__ only supports Tensor or scalar, but you passed in a str"},
    {"x.foo", TDL_ERR_ATTRIBUTE, "'Tensor' object has no attribute 'foo'"},
    {"x.shape = (6,)", TDL_ERR_ATTRIBUTE, "'Tensor' object attribute 'shape' is read-only"},
    /* checks of the bindings themselves */
    {"x.clamp()", TDL_ERR_RUNTIME, "torch.clamp: At least one of 'min' or 'max' must not be None"},
    {"div(x, 2, rounding_mode='xx')", TDL_ERR_RUNTIME,
     "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'xx'"},
    {"ones(2, 3, 4).t()", TDL_ERR_RUNTIME, "t() expects a tensor with <= 2 dimensions, but self is 3D"},
    {"zeros(-1, 2)", TDL_ERR_RUNTIME, "Trying to create tensor with negative dimension -1: [-1, 2]"},
    {"m.sum(dim=(0, 0))", TDL_ERR_RUNTIME, "dim 0 appears multiple times in the list of dims"},
    /* an extreme over nothing (issue 23), named as torch names it: max() is amax() inside */
    {"zeros(0, 3).max()", TDL_ERR_RUNTIME,
     "max(): Expected reduction dim to be specified for input.numel() == 0. "
     "Specify the reduction dim with the 'dim' argument."},
    {"zeros(0, 3).min()", TDL_ERR_RUNTIME,
     "min(): Expected reduction dim to be specified for input.numel() == 0. "
     "Specify the reduction dim with the 'dim' argument."},
    {"zeros(0, 3).amin()", TDL_ERR_RUNTIME,
     "amin(): Expected reduction dim to be specified for input.numel() == 0. "
     "Specify the reduction dim with the 'dim' argument."},
    {"zeros(3, 0).amax(1)", TDL_ERR_INDEX, "amax(): Expected reduction dim 1 to have non-zero size."},
    {"zeros(3, 0).argmin()", TDL_ERR_INDEX, "argmin(): Expected reduction dim to be specified for input.numel() == 0."},
    {"zeros(3, 0).max(1)", TDL_ERR_INDEX, "max(): Expected reduction dim 1 to have non-zero size."},
    /* shapes whose element or byte count overflows int64 (issue 23), with PyTorch's messages;
     * one with a zero extent is fine in any order (tdiff_shape_empty_huge) */
    {"zeros(2**62, 4)", TDL_ERR_RUNTIME, "Storage size calculation overflowed with sizes=[4611686018427387904, 4]"},
    {"ones(2**61)", TDL_ERR_RUNTIME, "Storage size calculation overflowed with sizes=[2305843009213693952]"},
    {"zeros(0, 2**62, 4).sum(0)", TDL_ERR_RUNTIME,
     "Storage size calculation overflowed with sizes=[4611686018427387904, 4]"},
    {"zeros(2**62, 1, dtype=bool) | zeros(1, 4, dtype=bool)", TDL_ERR_RUNTIME,
     "Storage size calculation overflowed with sizes=[4611686018427387904, 4]"},
    {"zeros(1, 1).expand(2**62, 4)", TDL_ERR_RUNTIME, "numel: integer multiplication overflow"},
    {"zeros(0).reshape(2**62, 4)", TDL_ERR_RUNTIME, "numel: integer multiplication overflow"},
    {"zeros(0, 2**62, 4).flatten(1)", TDL_ERR_RUNTIME, "numel: integer multiplication overflow"},
    {"i = dims()\nzeros(0, 2**62, 4)[i].numel()", TDL_ERR_RUNTIME, "numel: integer multiplication overflow"},
    {"i, j, k = dims(3)\nzeros(0, 2**62, 4)[i, j, k].order(i, (j, k))", TDL_ERR_RUNTIME,
     "numel: integer multiplication overflow"},
    {"i, j, k, l = dims(4)\n(zeros(2**62, 4, 0)[i, j, k] * zeros(0, 3)[k, l]).sum(k)", TDL_ERR_RUNTIME,
     "numel: integer multiplication overflow"},
    {"a, b = dims(2)\na.size = 2**62\nb.size = 4\nzeros(0)[(a, b),]", TDL_ERR_DIMENSION_BIND,
     "dimension sizes do not match (0 != more than 2**63 - 1) when matching dimension pack "
     "(a=4611686018427387904, b=4)"},
    {"eye(-1)", TDL_ERR_RUNTIME, "n must be greater or equal to 0, got -1"},
    {"rand(2, seed=-1)", TDL_ERR_VALUE, "seed must be non-negative, got -1"},
    {"savez('/tmp/tdl_test_tensor.npz', x, arr_0=x)", TDL_ERR_VALUE, "Cannot use un-named variables and keyword arr_0"},
    /* fcdim's errors keep their message and map onto tdl's kinds */
    {"x.size(5)", TDL_ERR_INDEX, "Dimension out of range (expected to be in range of [-1, 0], but got 5)"},
    {"x.view(4, 5)", TDL_ERR_RUNTIME, "shape '[4, 5]' is invalid for input of size 6"},
    {"x + arange(4)", TDL_ERR_RUNTIME,
     "The size of tensor a (6) must match the size of tensor b (4) at non-singleton dimension 0"},
    {"x.mean()", TDL_ERR_RUNTIME,
     "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long"},
    {"where(x, 1, 0)", TDL_ERR_RUNTIME,
     "where expected condition to be a boolean tensor, but got a tensor with dtype Long"},
    {"load('/nonexistent/dir/x.npy')", TDL_ERR_IO, NULL},
    {"x.cuda()", TDL_ERR_DEVICE, NULL},
};

START_TEST(test_error)
{
    tdl_status st = tdl_run_string(T, errors[_i].code, "<test>");
    ck_assert_msg(st == TDL_ERROR, "%s: no error", errors[_i].code);
    ck_assert_msg(tdl_error_kind_of(T) == errors[_i].kind, "%s: %s", errors[_i].code, tdl_error_report(T));
    if (errors[_i].msg) ck_assert_str_eq(tdl_error_message(T), errors[_i].msg);
    ck_assert_ptr_nonnull(strstr(tdl_error_report(T), "<test>:"));
    /* the interpreter is still usable, tensors included */
    ck_assert_int_eq(tdl_run_string(T, "print(x.sum())", "<test>"), TDL_OK);
    ck_assert_ptr_nonnull(strstr(out.buf, "tensor(15)\n"));
}
END_TEST

/* ---- tensors as values of the interpreter ---- */

START_TEST(test_values_persist)
{
    ck_assert_int_eq(tdl_run_string(T, "y = m.t() * 2", "<a>"), TDL_OK);
    ck_assert_int_eq(tdl_run_string(T, "print(y.shape, y.sum().item(), m.is_contiguous(), y.is_contiguous())", "<b>"),
                     TDL_OK);
    ck_assert_str_eq(out.buf, "(3, 2) 30 True False\n");
}
END_TEST

START_TEST(test_two_interpreters)
{
    Out o2 = {0};
    tdl_config cfg = {0};
    cfg.write = capture;
    cfg.write_ud = &o2;
    tdl_interp *U = tdl_open(&cfg);
    ck_assert_ptr_nonnull(U);
    ck_assert_int_eq(tdl_run_string(U, "manual_seed(3)\na = rand(4)\nx = 1", "<u>"), TDL_OK);
    ck_assert_int_eq(tdl_run_string(T, "manual_seed(3)\na = rand(4)\nrand(4)", "<t>"), TDL_OK);
    /* each interpreter has its own generator and globals */
    ck_assert_int_eq(tdl_run_string(U, "b = rand(4)\nprint(x, (b == rand(4, seed=0)).all())", "<u>"), TDL_OK);
    ck_assert_int_eq(tdl_run_string(T, "print(x.shape)", "<t>"), TDL_OK);
    ck_assert_str_eq(o2.buf, "1 tensor(False)\n");
    ck_assert_str_eq(out.buf, "(6,)\n");
    tdl_close(U);
}
END_TEST

START_TEST(test_echo)
{
    ck_assert_int_eq(tdl_run_string_ex(T, "m.float()\n", 10, "<stdin>", TDL_RUN_INTERACTIVE), TDL_OK);
    ck_assert_str_eq(out.buf, "tensor([[0., 1., 2.],\n        [3., 4., 5.]])\n");
}
END_TEST

START_TEST(test_device)
{
    ck_assert_int_eq(tdl_set_device(T, "cpu"), TDL_OK);
    ck_assert_int_eq(tdl_set_device(T, "tpu"), TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_DEVICE);
    ck_assert_str_eq(tdl_error_message(T), "unknown device 'tpu' (use cpu, cuda or cuda:N)");
    ck_assert_int_eq(tdl_run_string(T, "print(zeros(1).device, tensor([1]).device)", "<test>"), TDL_OK);
    ck_assert_str_eq(out.buf, "cpu cpu\n");
}
END_TEST

/* The device rules, on a cuda:0 that is host memory run by the CPU backend (TDL_FAKE_CUDA=1), so
 * that they are checked on machines with no GPU: a dim's index (and what is computed from dims
 * and numbers alone) takes the device of the tensors it meets, as a Python number does; CPU 0-dim
 * tensors go with any device (PyTorch); two real devices do not mix; results land where their
 * operands are; item, tolist, printing, cpu() and save copy back. */
static const struct { const char *code, *want, *error; } device_rules[] = {
    {"x = arange(4.).cuda()\ni = dims(1)\nprint((x[i] * i + i).order(i))",
     "tensor([ 0.,  2.,  6., 12.], device='cuda:0')\n", NULL},
    {"k = dims(1)\nk.size = 3\nprint((k * 2).order(k), (k * 2).order(k).device)", "tensor([0, 2, 4]) cpu\n", NULL},
    {"print(tensor(2.) * arange(3.).cuda())", "tensor([0., 2., 4.], device='cuda:0')\n", NULL},
    {"y = arange(3.).cuda()\nprint(y.sum().item(), y.tolist(), y.cpu(), y.device)",
     "3.0 [0.0, 1.0, 2.0] tensor([0., 1., 2.]) cuda:0\n", NULL},
    /* an unplaced operand of a matrix product is computed on the other's device */
    {"b = dims(1)\nb.size = 3\nprint(arange(6.).reshape(2, 3).cuda() @ (b * 1.).order(b))",
     "tensor([ 5., 14.], device='cuda:0')\n", NULL},
    {"c = dims(1)\nc.size = 2\nprint(cat([arange(2.).cuda(), (c * 1.).order(c)]))",
     "tensor([0., 1., 0., 1.], device='cuda:0')\n", NULL},
    {"c = dims(1)\nc.size = 2\nprint(where(c < 1, arange(2.).cuda()[c], 5.).order(c))",
     "tensor([0., 5.], device='cuda:0')\n", NULL},
    {"print(arange(3.).cuda()[tensor([0, 2])])", "tensor([0., 2.], device='cuda:0')\n", NULL},
    /* realised on the CPU, an unplaced value is a CPU tensor from then on */
    {"i = dims(1)\ni.size = 2\nv = (i * 1.).order(i)\nprint(v)\nprint(v + arange(2.).cuda())", "tensor([0., 1.])\n",
     "Expected all tensors to be on the same device, but found at least two devices, cpu and cuda:0!"},
    {"arange(3.) + arange(3.).cuda()", "",
     "Expected all tensors to be on the same device, but found at least two devices, cpu and cuda:0!"},
    {"cat([arange(2.).cuda(), arange(2.)])", "",
     "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"},
    {"arange(6.).reshape(2, 3).cuda() @ arange(3.)", "",
     "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"},
};

START_TEST(test_device_rules)
{
    setenv("TDL_FAKE_CUDA", "1", 1);
    Out o = {0};
    tdl_config cfg = {0};
    cfg.write = capture;
    cfg.write_ud = &o;
    tdl_interp *U = tdl_open(&cfg);
    unsetenv("TDL_FAKE_CUDA");
    ck_assert_ptr_nonnull(U);
    tdl_status st = tdl_run_string(U, device_rules[_i].code, "<test>");
    if (device_rules[_i].error) {
        ck_assert_int_eq(st, TDL_ERROR);
        ck_assert_int_eq(tdl_error_kind_of(U), TDL_ERR_DEVICE);
        ck_assert_str_eq(tdl_error_message(U), device_rules[_i].error);
    } else {
        ck_assert_msg(st == TDL_OK, "%s: %s", device_rules[_i].code, tdl_error_message(U));
    }
    ck_assert_str_eq(o.buf, device_rules[_i].want);
    tdl_close(U);
}
END_TEST

/* save copies a device tensor back to the host: what load reads is its values. */
START_TEST(test_device_save)
{
    char dir[] = "/tmp/tdl_device_XXXXXX", code[256];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    setenv("TDL_FAKE_CUDA", "1", 1);
    Out o = {0};
    tdl_config cfg = {0};
    cfg.write = capture;
    cfg.write_ud = &o;
    tdl_interp *U = tdl_open(&cfg);
    unsetenv("TDL_FAKE_CUDA");
    ck_assert_ptr_nonnull(U);
    snprintf(code, sizeof code, "y = arange(3.).cuda() * 2\nsave('%s/y.npy', y)\nprint(load('%s/y.npy'))", dir, dir);
    ck_assert_int_eq(tdl_run_string(U, code, "<test>"), TDL_OK);
    ck_assert_str_eq(o.buf, "tensor([0., 2., 4.])\n");
    tdl_close(U);
    snprintf(code, sizeof code, "%s/y.npy", dir);
    ck_assert_int_eq(remove(code), 0);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

static void dump_capture(void *ud, const char *s, size_t len)
{
    capture(ud, s, len);
}

START_TEST(test_dump)
{
    static const struct { int flags; const char *want, *absent; } cases[] = {
        {TDL_DUMP_IR, "= mul", "no such text"},   /* the IR, then the scheduled kernel */
        {TDL_DUMP_KERNELS, "kernel:", "%0 ="},
        {0, NULL, NULL},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        Out o = {0};
        memset(&dumped, 0, sizeof dumped);
        tdl_config cfg = {0};
        cfg.write = capture;
        cfg.write_ud = &o;
        cfg.flags = cases[k].flags;
        cfg.dump = dump_capture;
        cfg.dump_ud = &dumped;
        tdl_interp *U = tdl_open(&cfg);
        ck_assert_ptr_nonnull(U);
        ck_assert_int_eq(tdl_run_string(U, "print((arange(4) * 3).sum())", "<dump>"), TDL_OK);
        ck_assert_str_eq(o.buf, "tensor(18)\n");
        if (cases[k].want) {
            ck_assert_msg(strstr(dumped.buf, cases[k].want) != NULL, "flags %d: %s", cases[k].flags, dumped.buf);
            ck_assert_msg(strstr(dumped.buf, cases[k].absent) == NULL, "flags %d: %s", cases[k].flags, dumped.buf);
            ck_assert(dumped.buf[dumped.n - 1] == '\n');
        } else {
            ck_assert_str_eq(dumped.buf, "");
        }
        tdl_close(U);
    }
}
END_TEST

/* An integer `//` or `%` tests its divisor for zero when it is built (torch raises there, even
 * for a lazy quotient); a divisor known then (a Python number, full(), one stored element) is
 * tested without a kernel, so building these runs none (nn's col2im divides dims expressions by
 * its strides). The zero divisors still raise torch's RuntimeError, tensor or number. */
START_TEST(test_known_divisor)
{
    Out o = {0};
    memset(&dumped, 0, sizeof dumped);
    tdl_config cfg = {0};
    cfg.write = capture;
    cfg.write_ud = &o;
    cfg.flags = TDL_DUMP_KERNELS;
    cfg.dump = dump_capture;
    cfg.dump_ud = &dumped;
    tdl_interp *U = tdl_open(&cfg);
    ck_assert_ptr_nonnull(U);
    ck_assert_int_eq(tdl_run_string(U, "x = arange(10)\nd = dims(1)\nd.size = 6\nt4 = tensor([4])", "<setup>"),
                     TDL_OK);
    dumped.n = 0;
    dumped.buf[0] = 0;
    ck_assert_int_eq(tdl_run_string(U,
                                    "y = x // 3 + x % 3 + x // t4 + x % full((10,), 7)\n"
                                    "q = (d * 5 + 1) % 4 + (d - 7) // 2\n",
                                    "<divide>"),
                     TDL_OK);
    ck_assert_msg(strstr(dumped.buf, "kernel:") == NULL, "%s", dumped.buf);
    ck_assert_int_eq(tdl_run_string(U, "print(y.tolist())\nprint(q.order(d).tolist())", "<print>"), TDL_OK);
    /* torch's values */
    ck_assert_str_eq(o.buf, "[0, 2, 4, 4, 7, 9, 9, 4, 7, 7]\n[-3, -1, 0, -2, -1, 1]\n");
    static const char *zero[] = {"x // 0", "x % 0", "x % tensor(0)", "x // tensor([0])", "x % full((10,), 0)",
                                 "x % zeros(10, dtype=int64)", "d % 0"};
    for (size_t k = 0; k < sizeof zero / sizeof zero[0]; k++) {
        ck_assert_int_eq(tdl_run_string(U, zero[k], "<zero>"), TDL_ERROR);
        ck_assert_str_eq(tdl_error_kind_name(tdl_error_kind_of(U)), "RuntimeError");
        ck_assert_str_eq(tdl_error_message(U), "ZeroDivisionError");
    }
    tdl_close(U);
}
END_TEST

static void *interrupt_later(void *arg)
{
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    tdl_interrupt(arg);
    return NULL;
}

START_TEST(test_interrupt_kernel)
{
    /* one long kernel (a sum over a lazy constant: no memory), stopped from another thread */
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, interrupt_later, T), 0);
    tdl_status st = tdl_run_string(T, "s = ones(400000, 400000).sum()\nprint(s)", "<test>");
    pthread_join(th, NULL);
    ck_assert_int_eq(st, TDL_ERROR);
    ck_assert_int_eq(tdl_error_kind_of(T), TDL_ERR_INTERRUPT);
    ck_assert_int_eq(tdl_run_string(T, "print(x.sum())", "<test>"), TDL_OK);
    ck_assert_str_eq(out.buf, "tensor(15)\n");
}
END_TEST

Suite *tensor_suite(void)
{
    Suite *s = suite_create("tensor");
    TCase *tc = tcase_create("bindings");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_error, 0, sizeof errors / sizeof errors[0]);
    tcase_add_test(tc, test_values_persist);
    tcase_add_test(tc, test_two_interpreters);
    tcase_add_test(tc, test_echo);
    tcase_add_test(tc, test_device);
    tcase_add_loop_test(tc, test_device_rules, 0, sizeof device_rules / sizeof device_rules[0]);
    tcase_add_test(tc, test_device_save);
    tcase_add_test(tc, test_dump);
    tcase_add_test(tc, test_known_divisor);
    tcase_add_test(tc, test_interrupt_kernel);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}
