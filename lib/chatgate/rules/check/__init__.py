"""The table of rules and the checks built on it (layer 3).

`judge` holds the ordered table and the judge of one conversation; `codes` the order of
every code and its phrase; `reference` the one-value check, `batch` the Arrow batch
checker, `checks` the row checks every engine judges through, `options` the check's
keyword arguments as users meet them.
"""
