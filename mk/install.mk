# make install [PREFIX=/usr/local] [DESTDIR=]: binaries, libcrescent (shared, static, headers,
# pkg-config file), man pages generated from each binary's --help, docs, the systemd units and
# the Python package (PYTHONDIR).
BINDIR     = $(DESTDIR)$(PREFIX)/bin
LIBDIR     = $(DESTDIR)$(PREFIX)/lib
INCDIR     = $(DESTDIR)$(PREFIX)/include
PCDIR      = $(LIBDIR)/pkgconfig
MAN1DIR    = $(DESTDIR)$(PREFIX)/share/man/man1
DOCDIR     = $(DESTDIR)$(PREFIX)/share/doc/crescent
UNITDIR    = $(DESTDIR)$(PREFIX)/lib/systemd/system
# The crescent Python package (pure Python; it loads the libcrescent.so.0 of $(PREFIX)/lib).
PYTHONDIR ?= $(PREFIX)/lib/python3/dist-packages
INSTALL_BINS := crescent-master crescent-elect crescent-bench crescent-client
MAN_SUMMARY_crescent-master := Redis-compatible KV cache master with an embedded memory segment
MAN_SUMMARY_crescent-elect  := leader election over Redis, etcd or a Kubernetes Lease
MAN_SUMMARY_crescent-bench  := benchmarks of the Crescent transfer engine
MAN_SUMMARY_crescent-client := store client daemon: contributes a segment, serves dummy clients

install: all
	@install -d $(BINDIR) $(LIBDIR) $(INCDIR)/crescent $(PCDIR) $(MAN1DIR) $(DOCDIR) $(UNITDIR)
	@for b in $(INSTALL_BINS); do install -m 755 $(BUILD)/bin/$$b $(BINDIR)/$$b; done
	@install -m 755 $(BUILD)/lib/libcrescent.so.0 $(LIBDIR)/libcrescent.so.0
	@ln -sf libcrescent.so.0 $(LIBDIR)/libcrescent.so
	@install -m 644 $(BUILD)/lib/libcrescent.a $(LIBDIR)/libcrescent.a
	@install -m 644 client/include/crescent/*.h $(INCDIR)/crescent/
	@sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(CRESCENT_VERSION)|' \
	    client/crescent.pc.in > $(PCDIR)/crescent.pc
	@$(foreach b,$(INSTALL_BINS),tools/gen-man.sh $(BUILD)/bin/$(b) '$(MAN_SUMMARY_$(b))' \
	    > $(MAN1DIR)/$(b).1 &&) true
	@install -m 644 README.md CONTRIBUTING.md docs/*.md $(DOCDIR)/
	@for u in deploy/systemd/*.service; do \
	    sed -e 's|@PREFIX@|$(PREFIX)|g' $$u > $(UNITDIR)/$$(basename $$u); done
	@install -m 644 deploy/systemd/crescent-ha.conf.example $(DOCDIR)/
	@install -d $(DESTDIR)$(PYTHONDIR)/crescent
	@install -m 644 python/crescent/*.py $(DESTDIR)$(PYTHONDIR)/crescent/
	@echo "install: $(INSTALL_BINS), libcrescent, headers, crescent.pc, man pages, python -> $(DESTDIR)$(PREFIX)"
