"""Out-of-order sliding-window aggregators, one module per algorithm."""
