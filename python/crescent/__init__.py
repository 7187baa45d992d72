# SPDX-License-Identifier: Apache-2.0
"""crescent: Python client of Crescent, ctypes over libcrescent.so (nothing to compile).
Store is Mooncake's MooncakeDistributedStore, TransferEngine Mooncake's transfer engine;
every failure raises CrescentError carrying Mooncake's error name. See docs/python.md."""

from ._lib import LIB_PATH, CrescentError, err_name as error_name
from .store import ReplicateConfig, Store
from .transfer import Segment, TransferEngine

__all__ = ["CrescentError", "ReplicateConfig", "Segment", "Store", "TransferEngine", "error_name",
           "LIB_PATH"]
