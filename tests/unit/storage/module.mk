# Unit tests for storage/ (the SSD tier): API round trips per backend and I/O path, recovery,
# corruption, quotas and eviction, configuration and path rules.
STO_TEST_HELPERS := tests/unit/storage/sto_test.c
$(eval $(call unit_test,unit/storage/test_sto_api,tests/unit/storage/test_sto_api.c $(STO_TEST_HELPERS),$(STO_LIBS),$(STO_LDLIBS)))
$(eval $(call unit_test,unit/storage/test_sto_config,tests/unit/storage/test_sto_config.c $(STO_TEST_HELPERS),$(STO_LIBS),$(STO_LDLIBS)))
$(eval $(call unit_test,unit/storage/test_sto_recovery,tests/unit/storage/test_sto_recovery.c $(STO_TEST_HELPERS),$(STO_LIBS),$(STO_LDLIBS)))
