"""Scenarios: the case runner's phases and the scenarios built on it."""
