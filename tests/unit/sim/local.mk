# tests/unit/sim: one CUnit binary per module of sim/.
