"""Holds the opt-in `sitecustomize.py`; a package only so that non-editable installs ship it."""
