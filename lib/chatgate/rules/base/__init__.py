"""Values as they come (layer 0): markers, JSON decoding, missing and blank values, sizes.

Nothing here knows the check's options: every other room reads values through it.
"""
