# tests/unit/cli: one CUnit binary per module of cli/.
