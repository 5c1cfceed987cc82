"""Faults: what the nemesis can strike, how it restores, and the plan it follows."""
