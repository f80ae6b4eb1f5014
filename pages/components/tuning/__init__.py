"""The tuning page: question sets, sweeps, results, charts, apply and replay."""
