"""Where a conversation's problems are (layer 4): each rule's sites (`sites`) and every
problem of a value, or the message of one (`locate`)."""
