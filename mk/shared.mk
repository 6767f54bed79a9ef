# Shared values, doors and poisoning (seed 002 D5, D6, D9, D11). The unit
# tests are reference/tests/check_shared.c and check_doors.c (mk/unit.mk
# runs them); this checks that docs/poisoning.md names those tests and the
# faults of mutants/poisoning.mut one for one.

.PHONY: check-poisoning-docs
check-poisoning-docs:
	@mkdir -p $(BUILD)/results
	@rm -f $(BUILD)/results/poisoning-docs
	@$(PYTHON) scripts/poisoning_docs.py $(BUILD)/results/poisoning-docs

CHECK_TARGETS += check-poisoning-docs
