"""Groundhog's bench package."""
