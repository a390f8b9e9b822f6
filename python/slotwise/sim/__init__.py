"""Trace-driven simulation on the live engine (see simulator.py)."""
