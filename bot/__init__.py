"""prbot: one structured report per pull-request head for ML-systems repositories."""

__version__ = "0.1.0"
