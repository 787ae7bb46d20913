"""Risk: performance metrics (FinCon A.10) and the mean-variance optimizer."""
