"""The version of chatgate, declared once: the package, its metadata and its commits read it here."""

__version__ = "0.1.0"
