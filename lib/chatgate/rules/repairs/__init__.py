"""Repairs of failing values (layer 5): the fixes and their order (`fixes`), and applying
them to a value or an array, re-audited by the check (`repair`)."""
