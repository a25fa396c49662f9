"""Tapes as datasets: `tape publish` writes a verified tape as a folder others can load."""
