"""``aioseed sweep``: searches over ``aioseed run``'s config keys and seeds on an Optuna study; each
trial is one run process, pruned on its curve."""
