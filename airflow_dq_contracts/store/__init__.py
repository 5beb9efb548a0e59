"""The results store: where a run's results, quarantine counts, history and registry live."""
