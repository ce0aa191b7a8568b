# tests/unit/models: one CUnit binary per module of models/.
