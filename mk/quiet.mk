# Quiet build output unless V=1 (Redis QUIET_CC, liburing Makefile.quiet).
ifneq ($(V),1)
QUIET_CC   = @printf '    %-8s %s\n' CC $@;
QUIET_LINK = @printf '    %-8s %s\n' LINK $@;
QUIET_AR   = @printf '    %-8s %s\n' AR $@;
QUIET_GEN  = @printf '    %-8s %s\n' GEN $@;
endif
