"""The check's options and one conversation (layer 1).

`spec.ChatFormat` declares every option (`arguments` checks their values);
`conversation.Conversation` is what a rule reads of one conversation, and which part
of a row it is.
"""
