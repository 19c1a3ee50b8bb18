"""How messages are written beyond a role and a content (layer 2): tool calls and declared
functions (`tools`), content parts and images (`parts`), and the reading of a value into
the lists the rules read, ShareGPT tags, Harmony's thinking and the trainers' keys
included (`messages`)."""
