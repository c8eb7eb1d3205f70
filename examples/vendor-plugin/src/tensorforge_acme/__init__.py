"""The ACME accelerator plugin for tensorforge (an example)."""

__version__ = "0.1.0"
