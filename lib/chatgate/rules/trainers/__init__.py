"""The trainers' profiles (layer 2): what `profile=` stands for, and `format_from`, which
builds every format from the options given."""
