# tests/: every sub-suite brings its own module.mk (unit/<module>, integration, compat, ha, ...).
include $(sort $(wildcard tests/*/module.mk tests/unit/*/module.mk))
