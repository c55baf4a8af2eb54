"""The SDK version: one place, read by the package metadata and the User-Agent header."""

__version__ = "0.2.0"
