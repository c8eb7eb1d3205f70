"""The learned cost model for the tuner: gradient-boosted trees over loop-program features."""

from tensorforge_xgboost._version import __version__

__all__ = ["__version__"]
