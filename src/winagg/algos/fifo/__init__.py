"""In-order (FIFO) sliding-window aggregators, one module per algorithm."""
