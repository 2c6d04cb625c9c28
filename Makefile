# tdl — one flat Makefile. Build products live in build/ (build-san/ with SANITIZE=1).
#   make            build build/tdl, build/libtdl.a, build/libtdl.so
#   make demo       install missing tools, build, run the main demo
#   make test       install missing tools, build, run every test (Check suites + script tests)
#   make test SANITIZE=1    the same under AddressSanitizer, LeakSanitizer and UBSan
#   make check      both of the above, then make check-device (the README's test command)
#   make check-device   the device rules without a GPU: scripts and golden suites on a cuda:0 of host memory
#   make check-gpu  the whole suite on the GPU (cuda:0) where there is one; says so and passes where not
#                   (NOBUILD=1: with the binaries already in $(B))
#   make test CC=clang B=build-clang    the suite built with clang (CI runs it)
#   make fuzz       libFuzzer harnesses (build-fuzz/, clang) run FUZZ_SECONDS each; fuzz-ci: briefly
#   make fuzz-torch random programs run by tdl and by PyTorch, compared (needs python3-torch)
#   make bench      benchmarks: host language vs python3; fused, index, sched kernels vs torch; roi_align vs torchvision;
#                   on a GPU (bench/gpu.sh) the chain and roi_align vs torch on cuda;
#                   the Mask R-CNN mask head vs torch; the CPU's GEMM (products, a convolution) vs torch
#   make install PREFIX=/usr/local DESTDIR=
.DELETE_ON_ERROR:
.SUFFIXES:

CC      ?= cc
PREFIX  ?= /usr/local
SANITIZE ?= 0

ifeq ($(FUZZ),1)
# The fuzzing build (make fuzz): clang, ASan + UBSan, coverage for libFuzzer, warnings as errors.
FUZZ_CC ?= clang
override CC := $(FUZZ_CC)
B       := build-fuzz
SANFLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT     := -O1 -g -Werror
else ifeq ($(SANITIZE),1)
B       := build-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT     := -O1 -g
else
B       := build
SANFLAGS :=
OPT     := -O2 -g
endif

EDIT_CFLAGS := $(shell pkg-config --cflags libedit 2>/dev/null)
EDIT_LIBS   := $(shell pkg-config --libs libedit 2>/dev/null || echo -ledit)
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck)

# Hidden visibility: the shared library exports only what tdl.h declares (tdl_*).
CFLAGS  := -std=c11 -D_GNU_SOURCE $(OPT) -Wall -Wextra -Wno-unused-parameter -fPIC -fvisibility=hidden -MMD -MP \
           $(SANFLAGS) -I$(B)/lang -Ilang -Iinterp -Ifcdim -Ibackend \
           -DTDL_STDLIB_DIR='"$(PREFIX)/share/tdl/stdlib"'
LDFLAGS := $(SANFLAGS)
LIBS    := -lz -lm -lpthread -ldl

# Generated sources (never committed).
GEN_C   := $(B)/lang/lexer.c $(B)/lang/grammar.c
LIB_SRC := $(wildcard lang/*.c) $(filter-out interp/main.c,$(wildcard interp/*.c)) \
           $(wildcard fcdim/*.c) $(wildcard backend/*.c) $(wildcard backend/cpu/*.c) \
           $(wildcard backend/cuda/*.c)
LIB_OBJ := $(patsubst %.c,$(B)/%.o,$(LIB_SRC)) $(GEN_C:.c=.o)
TEST_SRC := $(wildcard tests/*.c)
TEST_OBJ := $(patsubst %.c,$(B)/%.o,$(TEST_SRC))

all: $(B)/tdl $(B)/libtdl.a $(B)/libtdl.so

# ---- tools ---------------------------------------------------------------
# `make deps` installs what is missing through apt-get (root); it is a no-op when all is there.
# clang and libclang-rt-dev (libFuzzer's runtime, only recommended by clang) are for make fuzz.
DEB_PKGS := re2c lemon check pkg-config libedit-dev libdlpack-dev zlib1g-dev libsubunit-dev clang libclang-rt-dev
deps:
	@missing=""; \
	command -v re2c >/dev/null || missing="$$missing re2c"; \
	command -v lemon >/dev/null || missing="$$missing lemon"; \
	command -v pkg-config >/dev/null || missing="$$missing pkg-config"; \
	pkg-config --exists check 2>/dev/null || missing="$$missing check libsubunit-dev"; \
	pkg-config --exists libedit 2>/dev/null || missing="$$missing libedit-dev"; \
	[ -f /usr/include/dlpack/dlpack.h ] || missing="$$missing libdlpack-dev"; \
	[ -f /usr/include/zlib.h ] || missing="$$missing zlib1g-dev"; \
	command -v clang >/dev/null || missing="$$missing clang"; \
	ls "$$(clang -print-runtime-dir 2>/dev/null)"/libclang_rt.fuzzer-*.a >/dev/null 2>&1 || missing="$$missing libclang-rt-dev"; \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "make deps: need root for apt-get install$$missing" >&2; exit 1; fi; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

# ---- generated front end ---------------------------------------------------
LEMPAR := $(firstword $(wildcard /usr/share/lemon/lempar.c /usr/share/lemon/lempar.c))
$(B)/lang/lexer.c: lang/lexer.re | $(B)/lang
	re2c -W -Werror --no-generation-date -o $@ $<
$(B)/lang/grammar.c $(B)/lang/grammar.h: lang/grammar.y | $(B)/lang
	cp lang/grammar.y $(B)/lang/grammar.y
	cd $(B)/lang && lemon -s -T$(abspath $(LEMPAR)) grammar.y > lemon.log 2>&1 || { cat lemon.log; exit 1; }
	@if grep -q "parsing conflict" $(B)/lang/lemon.log; then cat $(B)/lang/lemon.log; echo "grammar.y has conflicts" >&2; exit 1; fi
	@touch $(B)/lang/grammar.h
# Everything in lang/ may include the token codes.
$(patsubst %.c,$(B)/%.o,$(wildcard lang/*.c)) $(B)/lang/lexer.o: $(B)/lang/grammar.h

$(B)/lang:
	mkdir -p $@

# ---- objects, library, binary --------------------------------------------------
$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@
$(B)/lang/%.o: $(B)/lang/%.c
	$(CC) $(CFLAGS) -Wno-unused-variable -Wno-sign-compare -c $< -o $@

$(B)/interp/main.o: CFLAGS += $(EDIT_CFLAGS)
# The chunk loops' square roots (sqrt, and SLEEF's inside asin and acos) as the vector instruction:
# the same bits as libm's, without the errno branch that keeps GCC from vectorising them.
$(B)/backend/cpu/cpu_ops.o: CFLAGS += -fno-math-errno
$(B)/libtdl.a: $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^
$(B)/libtdl.so: $(LIB_OBJ)
	$(CC) -shared $(LDFLAGS) -o $@ $^ $(LIBS)
$(B)/tdl: $(B)/interp/main.o $(B)/libtdl.a
	$(CC) $(LDFLAGS) -o $@ $^ $(EDIT_LIBS) $(LIBS)

# ---- tests -----------------------------------------------------------------
$(B)/tests/%.o: CFLAGS += $(CHECK_CFLAGS)
$(TEST_OBJ): | $(B)/lang/grammar.h
$(B)/check_tdl: $(TEST_OBJ) $(B)/libtdl.a
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)

# The mock CUDA driver and NVRTC (tests/mock_cuda/): the CUDA backend's host side run with no GPU,
# its kernels built by g++ behind the emulation of tests/cuda_emu.h (tests/test_mock_cuda.sh).
# Never sanitized: it runs the host builds' coroutines, which ASan does not follow.
$(B)/mock_cuda/libcuda.so.1: tests/mock_cuda/mock_cuda.c tests/cuda_emu.h lang/hash.h backend/cuda/cuda_internal.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Wno-unused-parameter -fPIC -shared -fvisibility=hidden \
	  -Itests -Ilang -Ibackend -Ifcdim -o $@ $< -ldl -lpthread

# cuDNN's header, where it is installed, checks cuda_cudnn.h's declarations (tests/cudnn_header_check.c);
# tdl itself never needs it. CUDNN_INC= (empty) skips the check.
CUDNN_INC ?= $(patsubst %/cudnn_graph.h,%,$(firstword $(wildcard /usr/local/cuda/include/cudnn_graph.h \
               /usr/include/cudnn_graph.h /usr/include/x86_64-linux-gnu/cudnn_graph.h)))
$(B)/tests/cudnn_header_check.o: CFLAGS += $(if $(CUDNN_INC),-isystem $(CUDNN_INC) -DTDL_CUDNN_INCLUDE='"$(CUDNN_INC)"')

# `make test`: the Check suites, then the script tests, in this build ($(B)). The suite `cuda` compiles
# every script test's kernels with NVRTC, and representative ones with g++ for its host runs:
# build/nvrtc-cache and build/mock_cuda/kernels keep what was compiled, shared by the builds (make
# check's and CI's run the same sources), so that each source is compiled once.
test: deps
	$(MAKE) --no-print-directory all $(B)/check_tdl $(B)/mock_cuda/libcuda.so.1
	@mkdir -p build/nvrtc-cache build/mock_cuda/kernels
	CK_FORK=no TDL_TEST_NVRTC_CACHE=$(CURDIR)/build/nvrtc-cache TDL_TEST_EMU_DIR=$(CURDIR)/build/mock_cuda/kernels \
	  sh tests/run_check.sh $(B)/check_tdl
	JOBS=$${JOBS:-$$(nproc 2>/dev/null || echo 1)} sh tests/run_scripts.sh $(B)/tdl
	sh tests/test_sigint.sh $(B)/tdl
	sh tests/test_mock_cuda.sh $(B) build/mock_cuda/kernels
	SANITIZE=$(SANITIZE) HOST_CFLAGS='$(SANFLAGS)' sh tests/test_install.sh $(B)

# The README's test command: the suite, then the suite again under ASan + LSan + UBSan, then the
# device rules (sanitized build) on a stand-in device.
check: test
	$(MAKE) --no-print-directory SANITIZE=1 test
	$(MAKE) --no-print-directory SANITIZE=1 check-device

# Every script test and golden suite with cuda:0 as the default device, served by the CPU backend on
# host memory (TDL_FAKE_CUDA=1): placement, mixing and copies back tested with no GPU.
check-device: deps
	$(MAKE) --no-print-directory all $(B)/check_tdl
	TDL_FAKE_CUDA=1 sh tests/check_device.sh $(B) cuda

# The same on the real GPU, with the CUDA backend's suite (kernels run on the device and compared
# with the CPU). Without a GPU it says why and passes.
# NOBUILD=1 runs the binaries already in $(B) (built elsewhere and copied to a GPU machine that has no
# re2c, lemon or Check: see docs/gpu.md).
ifeq ($(NOBUILD),1)
check-gpu:
else
check-gpu: deps
	$(MAKE) --no-print-directory all $(B)/check_tdl
endif
	@if ! $(B)/tdl --device cuda -c 'pass' 2>/tmp/tdl-check-gpu.$$$$; then \
	  echo "make check-gpu: no GPU here ($$(tail -n 1 /tmp/tdl-check-gpu.$$$$)): nothing run"; \
	  rm -f /tmp/tdl-check-gpu.$$$$; exit 0; fi; \
	rm -f /tmp/tdl-check-gpu.$$$$; \
	sh tests/check_device.sh $(B) cuda cuda cudnn && \
	echo "Check suite nn_cudnn on cuda with cuDNN turned off (TDL_CUDNN=0)" && \
	TDL_CUDNN=0 TDL_TEST_DEVICE=cuda CK_FORK=no CK_RUN_SUITE=nn_cudnn $(B)/check_tdl

# ---- fuzzing ------------------------------------------------------------------
# The harnesses of tests/fuzz/ link the library built with FUZZ=1 (build-fuzz/); tests/fuzz/run.sh
# runs each for FUZZ_SECONDS on its seeds, the crash reproducers kept in tests/fuzz/crashes/ and
# the corpus it grew before (build-fuzz/corpus/), and fails on any crash, leak, UB or timeout.
FUZZERS := interp npy embed
FUZZ_SECONDS ?= 60
$(B)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_common.h $(B)/libtdl.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $< $(B)/libtdl.a $(LIBS)
fuzz-build: deps
	$(MAKE) --no-print-directory FUZZ=1 $(addprefix build-fuzz/fuzz/fuzz_,$(FUZZERS))
fuzz: fuzz-build
	FUZZ_FLAGS='$(FUZZ_FLAGS)' sh tests/fuzz/run.sh build-fuzz $(FUZZ_SECONDS) $(FUZZERS)
# What CI runs: a short run of each (20 s unless FUZZ_SECONDS is given on the command line), from a
# fixed random seed, so that a finding in CI comes again with `make fuzz-ci` (the same inputs, in
# the same order, as far as the time lets it go); `make fuzz` explores from a new seed each time.
fuzz-ci:
	$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(if $(filter command line,$(origin FUZZ_SECONDS)),$(FUZZ_SECONDS),20) \
	  FUZZ_FLAGS='-seed=1 $(FUZZ_FLAGS)'

demo: deps
	$(MAKE) --no-print-directory all
	$(B)/tdl examples/demo.tdl
	TDL_PATH=$(CURDIR)/stdlib $(B)/tdl examples/roi_align.tdl
	TDL_PATH=$(CURDIR)/stdlib $(B)/tdl examples/mask_head.tdl

# Re-derive the expected output of the Python-subset scripts with the real CPython (needs python3).
pycheck: all
	sh tests/run_scripts.sh --python $(B)/tdl

bench: deps
	$(MAKE) --no-print-directory SANITIZE=0 all
	sh bench/host.sh build/tdl
	sh bench/fused.sh build/tdl
	sh bench/index.sh build/tdl
	sh bench/sched.sh build/tdl
	sh bench/roi_align.sh build/tdl
	sh bench/grad.sh build/tdl
	sh bench/mask_head.sh build/tdl
	sh bench/matmul.sh build/tdl
	sh bench/conv.sh build/tdl
	sh bench/gpu.sh build/tdl
	sh bench/nvrtc.sh build/tdl

# The differential tester against PyTorch (tests/fuzz_torch/): FUZZ_TORCH_N random programs run by
# tdl (1 and 2 threads, and without fusion) and by torch through tests/torch_shim.py; mismatches
# are minimised into tests/fuzz_torch/found/. Needs Debian's python3-torch, so it is not in `make test`.
TORCH_PYTHON ?= /usr/bin/python3
FUZZ_TORCH_N ?= 2000
FUZZ_TORCH_SEED ?= 1
fuzz-torch:
	$(MAKE) --no-print-directory all
	$(TORCH_PYTHON) tests/fuzz_torch/run.py -n $(FUZZ_TORCH_N) --seed $(FUZZ_TORCH_SEED) --tdl $(B)/tdl

# The binary, both libraries, the header, the stdlib and tdl.pc (from tdl.pc.in, for this PREFIX).
# A copy staged with DESTDIR or moved elsewhere finds its stdlib beside its lib/ folder.
TDL_VERSION := $(shell sed -n 's/.*tdl_version(void) { return "\([^"]*\)".*/\1/p' interp/api.c)
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include \
	  $(DESTDIR)$(PREFIX)/share/tdl/stdlib
	install -m 755 $(B)/tdl $(DESTDIR)$(PREFIX)/bin/tdl
	install -m 644 $(B)/libtdl.a $(DESTDIR)$(PREFIX)/lib/libtdl.a
	install -m 755 $(B)/libtdl.so $(DESTDIR)$(PREFIX)/lib/libtdl.so
	install -m 644 interp/tdl.h $(DESTDIR)$(PREFIX)/include/tdl.h
	for f in stdlib/*.tdl; do [ -f "$$f" ] && install -m 644 "$$f" $(DESTDIR)$(PREFIX)/share/tdl/stdlib/; done; true
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(TDL_VERSION)|g' tdl.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/tdl.pc

clean:
	rm -rf build build-san build-fuzz build-clang

.PHONY: all deps test check check-device check-gpu demo pycheck bench install clean fuzz fuzz-build fuzz-ci fuzz-torch
-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(B)/interp/main.d
