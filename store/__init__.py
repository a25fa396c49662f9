"""Groundhog's store package."""
