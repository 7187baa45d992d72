# tests/python/: the crescent Python package (python/, ctypes over libcrescent.so) with pytest
# against a real crescent-master and a crescent-bench serve peer (tests/python/run.sh).
TEST_SCRIPTS += tests/python/run.sh
