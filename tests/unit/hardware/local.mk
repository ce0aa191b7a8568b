# tests/unit/hardware: one CUnit binary per module of hardware/.
