# Conformance: the programs of conformance/, each run under strace -f and
# the chunk-counting shim, their expectations checked by conformance/run.py
# (results in $(BUILD)/results/conformance), and the check that the
# optimised rt_chunk_give still clears.
#
# The shim comes two ways (conformance/shim.c says why): shim.so, built
# without sanitizers and preloaded, and shim-wrap.o, built with the
# variant's flags and linked into the programs of a sanitizer variant.

CONF_DIR := $(BUILD)/conformance
CONF_SHIM_SO := $(CONF_DIR)/shim.so
CONF_SHIM_WRAP := $(CONF_DIR)/shim-wrap.o
CONF_PLAIN_CFLAGS := $(WARNINGS) $(CFLAGS) -pthread

$(CONF_SHIM_SO): conformance/shim.c reference/include/refrt.h
	@mkdir -p $(@D)
	$(CC) $(CONF_PLAIN_CFLAGS) -Ireference/include -fPIC -shared $< -o $@ -ldl

$(CONF_SHIM_WRAP): conformance/shim.c reference/include/refrt.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -DRT_SHIM_WRAP -c $< -o $@

# IMPL=path/to/lib.a links the programs with another implementation.
CONF_LIB := $(or $(IMPL),$(RT_LIB))

.PHONY: check-conformance
check-conformance-programs: $(CONF_LIB) $(CONF_SHIM_SO) $(CONF_SHIM_WRAP)
check-conformance: $(CONF_LIB) $(CONF_SHIM_SO) $(CONF_SHIM_WRAP)
	@$(PYTHON) conformance/run.py --build=$(BUILD) --cc="$(CC)" $(if $(IMPL),--lib=$(IMPL)) \
	  --cflags="$(ALL_CFLAGS)" --ldflags="$(ALL_LDFLAGS)" \
	  --plain-cflags="$(CONF_PLAIN_CFLAGS)" --sanitize="$(SANITIZE)" \
	  --results=$(BUILD)/results/conformance

CHECK_TARGETS += check-conformance
KIT_TARGETS += check-conformance
