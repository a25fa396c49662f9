"""Reliability and security checks: load, crashes, hostile input and secrets (issue 8).

`python -m bench.reliability` runs every scenario against real processes on loopback and
writes reliability.md / reliability.json; tests/reliability runs the same scenarios briefly.
"""
