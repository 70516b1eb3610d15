"""The version of the package (one place; ``neuromanifold.__version__`` reads it)."""

__version__ = "0.1.0"
