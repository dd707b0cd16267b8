# kgl — a transformer layer that learns a knowledge graph, on its own autodiff.
#
#   make            build build/libkgl.a and build/kgl
#   make run        build, then train on the academic world
#   make test       build and run every test (last line: N passed, N failed)
#   make sanitize   the tests, built with AddressSanitizer + UBSan
#   make CC=clang test   the same with clang (objects go to build/clang/)
#   make benchmark  UMLS, Kinship, Nations and Family (data/kg, or KG_DATA) beside the published results
#   make benchmark-large  FB15k-237 and WN18RR (the neighbourhood context; hours)
#   make bench      speed: kgl bench beside PyTorch (THREADS=1 by default)
#   make install PREFIX=dir   kgl, libkgl.a, the headers and kgl.pc under dir
#   make uninstall PREFIX=dir removes exactly those files
#   make clean

ifeq ($(origin CC),default)
CC := gcc
endif
CC_NAME := $(notdir $(firstword $(CC)))
ifeq ($(CC_NAME),gcc)
BUILD ?= build
else
BUILD ?= build/$(CC_NAME)
endif

# stb_ds.h comes from Debian's libstb-dev (the only dependency besides libc, libm).
STB_DIR ?= /usr/include/stb
STB_DS := $(STB_DIR)/stb_ds.h

CFLAGS ?= -O3 -g
KGL_CFLAGS = -std=c11 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -Iinclude -Isrc -I$(STB_DIR) -MMD -MP $(CFLAGS)
LDLIBS := -lm -pthread

# Library sources live one folder deep, by layer (data/report/code.md, "How the
# code is organised"); every .c is found by wildcard, so adding a file edits no list.
LIB_SRC := $(wildcard src/*/*.c)
CLI_SRC := $(wildcard train/*.c)
TEST_SRC := $(wildcard tests/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/obj/%.o)

# The test binary counts every malloc the library makes (tests/alloc_count.c).
TEST_WRAP := -Wl,--wrap=malloc -Wl,--wrap=calloc -Wl,--wrap=realloc

# The public KG benchmarks UMLS, Kinship, Nations and the mid-size Family ship in
# data/kg (data/report/recipe.md; data/kg/README.md says where they come from);
# KG_DATA=dir points elsewhere. The tests read Nations from there too.
KG_DATA ?= data/kg
SEEDS ?= 1,2,3,4,5
JOBS ?= 1

.PHONY: all run test sanitize clean benchmark benchmark-large bench mutate install uninstall
all: $(BUILD)/libkgl.a $(BUILD)/kgl $(BUILD)/f32/libkgl.a $(BUILD)/kgl-f32

$(STB_DS):
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "stb_ds.h is missing: installing Debian's libstb-dev"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y -q libstb-dev >/dev/null 2>&1 || \
	  { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q libstb-dev >/dev/null; }; \
	fi
	@test -f $@ || { echo "kgl needs $@: install it with 'sudo apt-get install libstb-dev' (or set STB_DIR=dir)" >&2; exit 1; }

$(BUILD)/obj/%.o: %.c | $(STB_DS)
	@mkdir -p $(dir $@)
	$(CC) $(KGL_CFLAGS) -c $< -o $@

$(BUILD)/libkgl.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/kgl: $(CLI_OBJ) $(BUILD)/libkgl.a
	$(CC) $(CFLAGS) $(LDFLAGS) $(CLI_OBJ) $(BUILD)/libkgl.a $(LDLIBS) -o $@

# Single precision (README, "Precision"): the same sources built with
# -DKGL_FLOAT32 (kgl_real = float) into $(BUILD)/f32/libkgl.a and the program
# $(BUILD)/kgl-f32, which `kgl --precision f32` runs (it looks beside itself).
F32 := $(BUILD)/f32
# The chapter's demo (kgl demo) checks claims to double round-off: float64 only.
F32_LIB_OBJ := $(patsubst %.c,$(F32)/obj/%.o,$(filter-out src/studies/demo.c,$(LIB_SRC)))
F32_CLI_OBJ := $(patsubst %.c,$(F32)/obj/%.o,$(filter-out train/cmd_demo.c,$(CLI_SRC)))
$(F32)/obj/%.o: %.c | $(STB_DS)
	@mkdir -p $(dir $@)
	$(CC) $(KGL_CFLAGS) -DKGL_FLOAT32 -c $< -o $@
$(F32)/libkgl.a: $(F32_LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^
$(BUILD)/kgl-f32: $(F32_CLI_OBJ) $(F32)/libkgl.a
	$(CC) $(CFLAGS) $(LDFLAGS) $(F32_CLI_OBJ) $(F32)/libkgl.a $(LDLIBS) -o $@
# The float32 tests (tests/f32/*.c, with the same runner) link the f32 library;
# make test runs them before the main suite, whose summary stays the last line.
TEST_F32_OBJ := $(patsubst %.c,$(F32)/obj/%.o,$(wildcard tests/f32/*.c) tests/main.c)
$(F32)/obj/tests/%.o: KGL_CFLAGS += -Itests
$(BUILD)/kgl_tests_f32: $(TEST_F32_OBJ) $(F32)/libkgl.a
	$(CC) $(CFLAGS) $(LDFLAGS) $(TEST_F32_OBJ) $(F32)/libkgl.a $(LDLIBS) -o $@

# Every `TEST(name)` registers itself (tests/test.h), so no list is kept.
$(BUILD)/obj/tests/%.o: KGL_CFLAGS += -Itests

# The runner's own tests (tests/layout_runner.c) run these: tests/main.c with
# tests/runner/probe.c's misbehaving tests, and with no test at all.
$(BUILD)/runner_probe: $(BUILD)/obj/tests/main.o $(BUILD)/obj/tests/runner/probe.o
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@
$(BUILD)/runner_empty: $(BUILD)/obj/tests/main.o
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/kgl_tests: $(TEST_OBJ) $(BUILD)/libkgl.a
	$(CC) $(CFLAGS) $(LDFLAGS) $(TEST_WRAP) $(TEST_OBJ) $(BUILD)/libkgl.a $(LDLIBS) -o $@

# Installing (data/report/code.md, "Using kgl from C"): the program, the static library,
# the public headers (kgl.h and kgl/*.h) and a pkg-config file, so that
#   cc prog.c $$(pkg-config --cflags --libs kgl)
# builds a program against it. DESTDIR stages a package. The version is
# KGL_VERSION of include/kgl/engine.h, the one place it is written.
PREFIX ?= /usr/local
DESTDIR ?=
KGL_VERSION := $(shell sed -n 's/^\#define KGL_VERSION "\(.*\)"$$/\1/p' include/kgl/engine.h)
INSTALLED := bin/kgl bin/kgl-f32 lib/libkgl.a lib/libkgl-f32.a lib/pkgconfig/kgl.pc lib/pkgconfig/kgl-f32.pc include/kgl.h $(wildcard include/kgl/*.h)
install: $(BUILD)/kgl $(BUILD)/libkgl.a $(BUILD)/kgl-f32 $(F32)/libkgl.a
	@test -n '$(KGL_VERSION)' || { echo "include/kgl/engine.h defines no KGL_VERSION" >&2; exit 1; }
	@case '$(PREFIX)' in /*) ;; *) echo "PREFIX must be an absolute path, got '$(PREFIX)'" >&2; exit 2;; esac
	install -d '$(DESTDIR)$(PREFIX)/bin' '$(DESTDIR)$(PREFIX)/lib/pkgconfig' '$(DESTDIR)$(PREFIX)/include/kgl'
	install -m 755 $(BUILD)/kgl '$(DESTDIR)$(PREFIX)/bin/kgl'
	install -m 755 $(BUILD)/kgl-f32 '$(DESTDIR)$(PREFIX)/bin/kgl-f32'
	install -m 644 $(BUILD)/libkgl.a '$(DESTDIR)$(PREFIX)/lib/libkgl.a'
	install -m 644 $(F32)/libkgl.a '$(DESTDIR)$(PREFIX)/lib/libkgl-f32.a'
	install -m 644 include/kgl.h '$(DESTDIR)$(PREFIX)/include/kgl.h'
	install -m 644 include/kgl/*.h '$(DESTDIR)$(PREFIX)/include/kgl/'
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$${prefix}/lib' 'includedir=$${prefix}/include' '' \
	  'Name: kgl' 'Description: a transformer layer that learns knowledge-graph relations, on its own autodiff' \
	  'Version: $(KGL_VERSION)' 'Cflags: -I$${includedir}' 'Libs: -L$${libdir} -lkgl -lm -pthread' \
	  > '$(DESTDIR)$(PREFIX)/lib/pkgconfig/kgl.pc'
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$${prefix}/lib' 'includedir=$${prefix}/include' '' \
	  'Name: kgl-f32' 'Description: kgl in single precision (kgl_real is float)' \
	  'Version: $(KGL_VERSION)' 'Cflags: -I$${includedir} -DKGL_FLOAT32' 'Libs: -L$${libdir} -lkgl-f32 -lm -pthread' \
	  > '$(DESTDIR)$(PREFIX)/lib/pkgconfig/kgl-f32.pc'
uninstall:
	@case '$(PREFIX)' in /*) ;; *) echo "PREFIX must be an absolute path, got '$(PREFIX)'" >&2; exit 2;; esac
	rm -f $(addprefix '$(DESTDIR)$(PREFIX)'/,$(INSTALLED))
	@rmdir '$(DESTDIR)$(PREFIX)/include/kgl' 2>/dev/null || true

# The example program (tests/example/): built against an installation in
# $(BUILD)/stage through pkg-config, exactly as a user's program would be, and
# run by the tests (tests/walkthrough.c).
STAGE := $(abspath $(BUILD)/stage)
# The same program against kgl-f32 (pkg-config kgl-f32): predict_family_f32.
EXAMPLES := $(BUILD)/example/predict_family $(BUILD)/example/predict_family_f32
# One installation for both (two installs side by side under make -j would race).
$(BUILD)/stage.done: $(BUILD)/kgl $(BUILD)/libkgl.a $(BUILD)/kgl-f32 $(F32)/libkgl.a $(wildcard include/*.h include/kgl/*.h)
	@command -v pkg-config >/dev/null || { echo "the example program needs pkg-config: apt-get install pkgconf" >&2; exit 1; }
	$(MAKE) --no-print-directory install PREFIX='$(STAGE)' DESTDIR= >/dev/null
	@touch $@
$(EXAMPLES): tests/example/predict_family.c $(BUILD)/stage.done
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -Wall -Wextra -Werror -pedantic $(CFLAGS) \
	  $$(PKG_CONFIG_PATH='$(STAGE)/lib/pkgconfig' pkg-config --cflags $(if $(findstring _f32,$@),kgl-f32,kgl)) $< \
	  $(LDFLAGS) $$(PKG_CONFIG_PATH='$(STAGE)/lib/pkgconfig' pkg-config --libs $(if $(findstring _f32,$@),kgl-f32,kgl)) -o $@

run: $(BUILD)/kgl
	$(BUILD)/kgl train

# vmath.c's AVX-512 path run on a model of its intrinsics (src/engine/avx512_emul.h), so
# that a CPU without AVX-512 checks it too; tests/emulated/ is outside the tests/*.c wildcard.
# Run first: the main suite's "N passed, N failed" stays the last line.
$(BUILD)/vmath_emulated: tests/emulated/vmath_avx512.c src/engine/vmath.c src/engine/cpu.c src/engine/vmath.h \
		src/engine/cpu.h src/engine/avx512_emul.h tests/emulated/emulated.h
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -MMD -MP,$(KGL_CFLAGS)) -DVMATH_EMULATE_AVX512 $(LDFLAGS) tests/emulated/vmath_avx512.c \
		src/engine/vmath.c src/engine/cpu.c $(LDLIBS) -o $@

# The same in float32 (kgl_real = float: the 16-lane kernels).
$(BUILD)/vmath_emulated_f32: tests/emulated/vmath_avx512.c src/engine/vmath.c src/engine/cpu.c src/engine/vmath.h \
		src/engine/cpu.h src/engine/avx512_emul.h tests/emulated/emulated.h
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -MMD -MP,$(KGL_CFLAGS)) -DKGL_FLOAT32 -DVMATH_EMULATE_AVX512 $(LDFLAGS) \
		tests/emulated/vmath_avx512.c src/engine/vmath.c src/engine/cpu.c $(LDLIBS) -o $@

# kernel.c's AVX-512 GEMM (micro- and edge kernels) on the same model, compared bit for bit with the AVX2
# and portable paths (tests/emulated/gemm_avx512.c); the rest of the library from libkgl.a, whose own
# kernel.o is not linked (every symbol it defines is already defined by the emulated kernel.o). The
# emulated kernel.o is an object of its own (slow to compile: 20 s), rebuilt only when kernel.c changes.
EMUL := -DKERNEL_EMULATE_AVX512
$(BUILD)/obj/emulated/%.o: | $(STB_DS)
	@mkdir -p $(dir $@)
	$(CC) $(KGL_CFLAGS) $(EMUL) -c $< -o $@
$(F32)/obj/emulated/%.o: | $(STB_DS)
	@mkdir -p $(dir $@)
	$(CC) $(KGL_CFLAGS) -DKGL_FLOAT32 $(EMUL) -c $< -o $@
$(BUILD)/obj/emulated/kernel.o $(F32)/obj/emulated/kernel.o: src/engine/kernel.c
$(BUILD)/obj/emulated/gemm_avx512.o $(F32)/obj/emulated/gemm_avx512.o: tests/emulated/gemm_avx512.c
$(BUILD)/gemm_emulated: $(BUILD)/obj/emulated/gemm_avx512.o $(BUILD)/obj/emulated/kernel.o $(BUILD)/libkgl.a
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@
$(BUILD)/gemm_emulated_f32: $(F32)/obj/emulated/gemm_avx512.o $(F32)/obj/emulated/kernel.o $(F32)/libkgl.a
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

test: $(BUILD)/kgl $(BUILD)/kgl-f32 $(BUILD)/kgl_tests $(BUILD)/kgl_tests_f32 $(BUILD)/vmath_emulated \
		$(BUILD)/vmath_emulated_f32 \
		$(BUILD)/gemm_emulated $(BUILD)/gemm_emulated_f32 \
		$(BUILD)/runner_probe $(BUILD)/runner_empty $(BUILD)/example/predict_family $(BUILD)/example/predict_family_f32
	$(BUILD)/vmath_emulated
	$(BUILD)/vmath_emulated_f32
	$(BUILD)/gemm_emulated
	$(BUILD)/gemm_emulated_f32
	$(BUILD)/kgl_tests_f32 --kgl $(BUILD)/kgl-f32
	KG_DATA='$(KG_DATA)' KGL_CC='$(CC)' $(BUILD)/kgl_tests --kgl $(BUILD)/kgl

# The mutation check (data/report/testing.md, "Mutations"): each mutation of tests/mutations.txt
# applied to a scratch copy of the last commit, built, the suite run on it;
# prints the killed fraction and the survivors (fails below 95%).
MUTATE_JOBS ?= 2
mutate:
	python3 tests/mutate.py --jobs $(MUTATE_JOBS) --kg-data '$(abspath $(KG_DATA))'

benchmark: $(BUILD)/kgl $(BUILD)/kgl-f32
	$(BUILD)/kgl benchmark --data '$(KG_DATA)' --seeds $(SEEDS) --jobs $(JOBS) --out $(BUILD)/benchmark

# The graphs of real size (data/report/large.md) ship gzip'd in
# data/kg/{fb15k-237,wn18rr}; this unpacks them into $(BUILD)/kg and trains on
# each with data/bench/large.args (the neighbourhood context), one seed by
# default: a run takes up to two hours on two cores.
LARGE_SEEDS ?= 1
LARGE_KG := $(patsubst data/kg/%.txt.gz,$(BUILD)/kg/%.txt,$(wildcard data/kg/*/*.txt.gz))
$(BUILD)/kg/%.txt: data/kg/%.txt.gz
	@mkdir -p $(dir $@)
	gzip -dc $< > $@.tmp && mv $@.tmp $@
benchmark-large: $(BUILD)/kgl $(BUILD)/kgl-f32 $(LARGE_KG)
	$(BUILD)/kgl benchmark --data $(BUILD)/kg --datasets fb15k-237,wn18rr --recipe data/bench/large.args \
	  --seeds $(LARGE_SEEDS) --jobs $(JOBS) --out $(BUILD)/benchmark-large

# Speed (data/report/speed.md): kgl bench on the four cases of data/bench/cases.
# BENCH_DIR=dir names a comparison set-up (dir/compare.sh, which runs the
# same cases beside the model written in PyTorch); with it and python3-torch
# installed, `make bench` runs that, otherwise kgl's cases alone.
BENCH_DIR ?=
THREADS ?= 1
bench: $(BUILD)/kgl
	@if [ -n '$(BENCH_DIR)' ] && [ -x '$(BENCH_DIR)/compare.sh' ] && /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; then \
	  '$(BENCH_DIR)/compare.sh' --threads $(THREADS); \
	else \
	  echo "kgl alone (BENCH_DIR=dir with compare.sh and python3-torch compare it with PyTorch)"; \
	  $(BUILD)/kgl bench --train data/academic.tsv --dim 8 --heads 2 --threads $(THREADS); \
	  $(BUILD)/kgl bench --train data/bench/cases/umls_like.tsv --dim 64 --heads 4 --threads $(THREADS); \
	  $(BUILD)/kgl bench --train data/bench/cases/large.tsv --dim 256 --heads 8 --reps 5 --threads $(THREADS); \
	  $(BUILD)/kgl bench --train data/bench/cases/large.tsv --dim 256 --heads 8 --ffn 1024 --reps 5 --threads $(THREADS); \
	fi

SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# gcc: build/sanitize; `make CC=clang sanitize`: build/clang/sanitize (clang's
# UBSan checks more, e.g. array bounds inside stb_ds.h; .ci/run runs both).
sanitize:
	$(MAKE) BUILD=$(BUILD)/sanitize CFLAGS="-O1 -g $(SAN)" LDFLAGS="$(SAN)" test

# libFuzzer harnesses, one per parser (tests/fuzz/): built with clang
# (-fsanitize=fuzzer,address,undefined), each run for FUZZ_SECONDS on a copy of
# its seed corpus with its dictionary; a crash is saved as
# build/fuzz/crash-NAME-*. Copy it into tests/fuzz/regressions/NAME/ and
# `make test` replays it (tests/fuzz_replay.c). The last line sums the executions.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := triples types safetensors json memo args formula
# The formula harness's inputs must be long enough to nest far past
# KGL_RECIPE_MAX_DEPTH (64): libFuzzer would start from its seeds' length.
FUZZ_MAX_LEN_formula := 4096
FUZZ_BUILD := build/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
.PHONY: fuzz fuzz-build fuzz-clang
fuzz-clang:
	@if ! printf 'int LLVMFuzzerTestOneInput(const char *d, long n){(void)d;(void)n;return 0;}' | \
	    clang -x c -fsanitize=fuzzer - -o /dev/null >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "clang's libFuzzer is missing: installing clang and libclang-rt-14-dev"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get install -y -q clang libclang-rt-14-dev >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q clang libclang-rt-14-dev >/dev/null; }; \
	  fi; \
	fi
	@printf 'int LLVMFuzzerTestOneInput(const char *d, long n){(void)d;(void)n;return 0;}' | \
	  clang -x c -fsanitize=fuzzer - -o /dev/null >/dev/null 2>&1 || \
	  { echo "make fuzz needs clang with libFuzzer: sudo apt-get install clang libclang-rt-14-dev" >&2; exit 1; }
fuzz-build: fuzz-clang
	$(MAKE) CC=clang BUILD=$(FUZZ_BUILD) CFLAGS="-O1 -g $(FUZZ_SAN) -fsanitize=fuzzer-no-link" $(FUZZ_BUILD)/libkgl.a \
	  $(FUZZ_BUILD)/obj/train/args.o
	@for t in $(FUZZ_TARGETS); do \
	  echo "clang tests/fuzz/fuzz_$$t.c -> $(FUZZ_BUILD)/fuzz_$$t"; \
	  clang -std=c11 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -Iinclude -Isrc -I$(STB_DIR) -O1 -g \
	    $(FUZZ_SAN) -fsanitize=fuzzer tests/fuzz/fuzz_$$t.c $(FUZZ_BUILD)/obj/train/args.o $(FUZZ_BUILD)/libkgl.a \
	    $(LDLIBS) -o $(FUZZ_BUILD)/fuzz_$$t || exit 1; \
	done
fuzz: fuzz-build
	@total=0; for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t; \
	  cp tests/fuzz/corpus/$$t/* $(FUZZ_BUILD)/corpus/$$t/; \
	  case $$t in formula) max_len=-max_len=$(FUZZ_MAX_LEN_formula);; *) max_len=;; esac; \
	  $(FUZZ_BUILD)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 -close_fd_mask=2 \
	    $$max_len -dict=tests/fuzz/$$t.dict -artifact_prefix=$(FUZZ_BUILD)/crash-$$t- $(FUZZ_BUILD)/corpus/$$t \
	    > $(FUZZ_BUILD)/fuzz_$$t.log 2>&1; rc=$$?; \
	  n=$$(sed -n 's/^stat::number_of_executed_units: *//p' $(FUZZ_BUILD)/fuzz_$$t.log); \
	  echo "fuzz $$t: $${n:-0} executions in $(FUZZ_SECONDS) s, exit $$rc"; \
	  if [ $$rc != 0 ]; then tail -40 $(FUZZ_BUILD)/fuzz_$$t.log; exit 1; fi; \
	  total=$$((total + $${n:-0})); \
	done; echo "fuzz: $$total executions, 0 crashes, leaks or timeouts"

clean:
	rm -rf build

-include $(wildcard $(BUILD)/obj/emulated/*.d $(F32)/obj/emulated/*.d)
-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(F32_LIB_OBJ:.o=.d) $(F32_CLI_OBJ:.o=.d) $(TEST_F32_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(BUILD)/obj/tests/runner/probe.d
