"""Helpers shared by the test suite: real servers on loopback, started and ended by the tests."""
