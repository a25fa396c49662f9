"""Groundhog's groundhog package."""
