"""The trainers' profiles (layer 2): what `profile=` stands for, and `format_from`, which
builds every format from the options given; the rules of the trainers' options and of the
peers' (`rules`: placeholder contents among them) and Mistral's own (`mistral`)."""
